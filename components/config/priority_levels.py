"""The GPU priority levels a team's `priority` names: each one's class name, value and whether it may evict.

Values are ordered critical > high > normal > low > default (0). Only critical and high may evict running pods
(`PreemptLowerPriority`): a preempted GPU job loses everything since its last checkpoint, so normal and low work
waits for capacity instead (`Never`), and so does anything without a class (the non-preempting global default).
Plain data: the scheduler's classes (components/scheduling/priorities.py) and a team's quota scopes read it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PriorityLevel:
    """One GPU priority class, shared by the PriorityClass and the Kueue WorkloadPriorityClass of that name."""

    name: str
    value: int
    preemption_policy: str
    description: str


LEVELS: dict[str, PriorityLevel] = {
    "critical": PriorityLevel("gpu-critical", 1_000_000, "PreemptLowerPriority",
                              "GPU serving and jobs that must run now; may evict high, normal and low work"),
    "high": PriorityLevel("gpu-high", 100_000, "PreemptLowerPriority",
                          "Deadline GPU work; may evict normal and low work"),
    "normal": PriorityLevel("gpu-normal", 10_000, "Never", "Regular GPU work; waits rather than evicting"),
    "low": PriorityLevel("gpu-low", 1_000, "Never", "Opportunistic GPU work; first to be preempted"),
}
DEFAULT = PriorityLevel("gpu-default", 0, "Never",
                        "Pods without a priority class: never evict anyone, below every GPU class")
# System classes are for node and cluster agents; a team pod using them would outrank every GPU job.
SYSTEM_CLASSES = ("system-cluster-critical", "system-node-critical")


def allowed_classes(priority: str) -> list[str]:
    """GPU classes a team of this priority may use: its own and those below it."""
    names = list(LEVELS)
    return [LEVELS[p].name for p in names[names.index(priority):]]


def forbidden_classes(priority: str) -> list[str]:
    """Classes a team of this priority may not use: those above it, and the system classes."""
    names = list(LEVELS)
    return [*(LEVELS[p].name for p in names[:names.index(priority)]), *SYSTEM_CLASSES]
