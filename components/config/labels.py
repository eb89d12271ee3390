"""Node labels and taints of a GPU pool, computed once for every cloud."""
from __future__ import annotations

from components.clouds.facts import CloudProfile
from components.config.model import GpuPool, PlatformConfig, Taint
from components.config.operands import node_labels

LABEL_PREFIX = "gpu-platform.io"
POOL_LABEL = f"{LABEL_PREFIX}/pool"
SPOT_TAINT_KEY = f"{LABEL_PREFIX}/spot"
FABRIC_LABEL = f"{LABEL_PREFIX}/fabric"  # on pools with a fast fabric only: its device plugin selects them by it
# Marks the namespaces of teams opted in to the reclaimer, for people and dashboards; the reclaimer itself trusts
# its RECLAIM_NAMESPACES and its RBAC.
RECLAIM_LABEL = f"{LABEL_PREFIX}/reclaim"
RECLAIM_ENABLED = "enabled"


def pool_labels(config: PlatformConfig, pool: GpuPool) -> dict[str, str]:
    """Labels every node of `pool` carries: what it is, how its GPUs are shared, and the user's extras."""
    labels = {
        POOL_LABEL: pool.name,
        f"{LABEL_PREFIX}/gpu-model": pool.instance.gpu.name,
        f"{LABEL_PREFIX}/sharing": pool.sharing.mode,
        f"{LABEL_PREFIX}/workload": pool.workload,
        f"{LABEL_PREFIX}/capacity-type": pool.capacity_type,
        f"{LABEL_PREFIX}/driver": pool.driver,
    }
    if pool.fabric != "none":
        labels[FABRIC_LABEL] = pool.fabric
    labels.update(pool.labels)
    labels.update(node_labels(config, pool))  # what the GPU Operator must (not) do on these nodes
    return dict(sorted(labels.items()))


def pool_taints(pool: GpuPool, profile: CloudProfile) -> tuple[Taint, ...]:
    """The GPU taint, the cloud's GPU taints, spot taints on interruptible capacity, then the pool's own extras."""
    gpu_taint, *extras = pool.all_taints
    taints = [gpu_taint, *(Taint(*t) for t in profile.extra_gpu_taints)]
    if pool.capacity_type == "spot":
        # Only workloads that accept interruption should land on spot GPUs.
        taints += [Taint(SPOT_TAINT_KEY, "true", "NoSchedule"), *(Taint(*t) for t in profile.spot_taints)]
    return tuple(dict.fromkeys([*taints, *extras]))
