"""What a GPU pool advertises to Kubernetes: resource names and per-node counts.

Quotas, queues, autoscaler hints and the simulator all count in these units.
"""
from __future__ import annotations

from components.catalog.types import InstanceType
from components.config.model import GpuPool, Sharing

GPU_RESOURCE = "nvidia.com/gpu"


def mig_strategy(pools: tuple[GpuPool, ...] | list[GpuPool]) -> str | None:
    """`single` when every MIG pool is uniform (one profile), `mixed` otherwise; None without MIG."""
    layouts = [p.sharing.mig_layout(p.instance) for p in pools if p.sharing.mode == "mig"]
    if not layouts:
        return None
    return "single" if all(len(layout) == 1 for layout in layouts) else "mixed"


def advertised_per_node(instance: InstanceType, sharing: Sharing, strategy: str | None) -> dict[str, int]:
    """Extended resources one node of this pool advertises."""
    gpus = instance.gpus
    if sharing.mode in ("mps", "time-slicing"):
        return {GPU_RESOURCE: gpus * (sharing.replicas or 1)}
    if sharing.mode == "mig":
        layout = sharing.mig_layout(instance)
        if strategy == "single":
            return {GPU_RESOURCE: gpus * sum(layout.values())}
        return {f"nvidia.com/mig-{name}": gpus * count for name, count in sorted(layout.items())}
    return {GPU_RESOURCE: gpus}


def pool_units(pool: GpuPool, strategy: str | None) -> dict[str, int]:
    """Per-node resources of a validated pool."""
    return advertised_per_node(pool.instance, pool.sharing, strategy)


def quota_resources(pool: GpuPool, quota: int, strategy: str | None) -> dict[str, int]:
    """A team quota on a pool, in that pool's resources.

    The quota counts the pool's schedulable units (GPUs, slices or replicas); for a mixed MIG layout,
    where one number cannot name several slice sizes, it counts GPUs' worth of the layout.
    """
    per_node = pool_units(pool, strategy)
    if len(per_node) == 1:
        return {name: quota for name in per_node}
    layout = pool.sharing.mig_layout(pool.instance)
    return {f"nvidia.com/mig-{name}": quota * count for name, count in sorted(layout.items())}


def quota_capacity(pool: GpuPool, strategy: str | None) -> int:
    """The largest quota a pool can honour at maxNodes, in the units `quota_resources` uses."""
    per_node = pool_units(pool, strategy)
    if len(per_node) == 1:
        return next(iter(per_node.values())) * pool.max_nodes
    return pool.instance.gpus * pool.max_nodes
