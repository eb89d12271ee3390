"""Priority classes for GPU workloads, and what a team's `priority` means for its pods and its queue.

Values are ordered critical > high > normal > low > default (0). Only critical and high may evict running pods
(`PreemptLowerPriority`): a preempted GPU job loses everything since its last checkpoint, so normal and low work
waits for capacity instead (`Never`), and so does anything without a class (the non-preempting global default).
"""
from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes.meta.v1 as meta
import pulumi_kubernetes.scheduling.v1 as scheduling


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


class Priorities(pulumi.ComponentResource):
    """The cluster's GPU PriorityClasses and its non-preempting global default."""

    TYPE = "gpu-platform:scheduling:Priorities"

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        levels = [*LEVELS.values(), DEFAULT]
        super().__init__(self.TYPE, name, {"classes": {lv.name: lv.value for lv in levels}}, opts)
        self.classes = {
            lv.name: scheduling.PriorityClass(
                f"{name}-{lv.name}",
                metadata=meta.ObjectMetaArgs(name=lv.name),
                value=lv.value,
                preemption_policy=lv.preemption_policy,
                global_default=lv is DEFAULT,
                description=lv.description,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for lv in levels
        }
        self.register_outputs({"classes": list(self.classes)})
