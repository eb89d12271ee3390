"""Which node group the Cluster Autoscaler grows first when several can run a pending pod."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import pulumi

from components.config.model import GpuPool

# Higher wins. Reserved capacity is paid for whether used or not, so it is filled first; spot is cheaper than
# on-demand, so it comes next for pods that tolerate interruption (only those tolerate the spot taint).
CAPACITY_PRIORITY = {"reserved": 30, "spot": 20, "on-demand": 10}
# Every other node group (the system pool, groups added outside this stack) stays eligible, last.
FALLBACK_PRIORITY = 1


def exact_pattern(group_id: pulumi.Input[str]) -> pulumi.Output[str]:
    """A pattern matching exactly one node group id (EKS: the Auto Scaling group name; OKE: the node pool OCID)."""
    return pulumi.Output.from_input(group_id).apply(lambda gid: f"^{re.escape(gid)}$")


def expander_priorities(pools: Iterable[GpuPool],
                        pattern: Callable[[GpuPool], pulumi.Input[str]]) -> dict[str, list[pulumi.Input[str]]]:
    """The chart's `expanderPriorities`: priority (as a string key) -> node group id regexes."""
    tiers: dict[int, list[pulumi.Input[str]]] = {}
    for pool in pools:
        tiers.setdefault(CAPACITY_PRIORITY[pool.capacity_type], []).append(pattern(pool))
    tiers[FALLBACK_PRIORITY] = [".*"]
    return {str(priority): tiers[priority] for priority in sorted(tiers, reverse=True)}
