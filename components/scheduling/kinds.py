"""The schedulers the platform offers: one import line per scheduler package, each registering its row.

Only the packages' Pulumi-free `facts` modules load here; a scheduler's components load when it is installed.
"""
from __future__ import annotations

# In this order: the first is the default, and messages list the allowed kinds in it.
import components.scheduling.kueue.facts  # noqa: F401,I001  (registers `scheduler.kind: kueue`)
import components.scheduling.volcano.facts  # noqa: F401  (registers `scheduler.kind: volcano`)
import components.scheduling.kai.facts  # noqa: F401  (registers `scheduler.kind: kai`)
from components.scheduling.registry import KINDS, SchedulerKind

SCHEDULERS: tuple[str, ...] = tuple(KINDS)

__all__ = ["KINDS", "SCHEDULERS", "SchedulerKind", "scheduler_kind"]


def scheduler_kind(name: str) -> SchedulerKind:
    """The row for a `scheduler.kind` value; an unknown one names the allowed values."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown scheduler kind {name!r}; allowed: {', '.join(SCHEDULERS)}") from None
