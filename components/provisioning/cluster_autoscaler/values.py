"""Cluster Autoscaler chart values shared by every cloud that needs it, tuned so GPU nodes go only when empty."""
from __future__ import annotations

from typing import Any

from components import namespaces
from components.config.capacity import GPU_RESOURCE, mig_strategy, pool_units
from components.config.model import PlatformConfig
from components.pins import PINS
from components.system_pool import tolerating

CHART = "cluster-autoscaler"
CHART_VERSION = PINS[CHART].version
CHART_REPO = "https://kubernetes.github.io/autoscaler"
IMAGE = "registry.k8s.io/autoscaling/cluster-autoscaler"
# The autoscaler embeds the kube-scheduler of its own minor, so it must run the cluster's minor (kubernetes/autoscaler
# FAQ); the chart's own appVersion is one minor whatever the cluster (1.35.0 in 9.59.0). Newest patch per minor:
# 1.32.5 (kubernetes/k8s.io#8815; 1.32 is past upstream end of life), 1.33.6, 1.34.5, 1.35.2 and 1.36.1
# (kubernetes/autoscaler releases cluster-autoscaler-<version>, published together 2026-07-23). The chart renders
# `image.repository:image.tag` as given, for any tag (tests/config/test_kubernetes_versions.py).
IMAGE_TAGS = {"1.32": "v1.32.5", "1.33": "v1.33.6", "1.34": "v1.34.5", "1.35": "v1.35.2", "1.36": "v1.36.1"}
NAMESPACE = namespaces.KUBE_SYSTEM
SERVICE_ACCOUNT = "cluster-autoscaler"  # fixed, so IRSA / workload identity trust can name it
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
# GPU nodes are slow and dear to start: wait before calling one unneeded, and after scaling up. Bare-metal GPU
# nodes take 15-25 minutes to boot and join; the 15m provisioning default gives up on them. AKS's managed
# autoscaler profile (clouds/azure/cluster.py) uses the same timings.
UNNEEDED_TIME = "15m"
DELAY_AFTER_ADD = "15m"
MAX_NODE_PROVISION_TIME = "30m"


def image_tag(minor: str) -> str:
    """The autoscaler release of the cluster's minor (tests keep the tables in step). A minor newer than every pinned
    release, which validation warns about, gets the newest pinned one until its own is pinned."""
    if minor in IMAGE_TAGS:
        return IMAGE_TAGS[minor]
    newest = max(IMAGE_TAGS, key=_minor_number)
    if _minor_number(minor) > _minor_number(newest):
        return IMAGE_TAGS[newest]
    raise ValueError(f"no Cluster Autoscaler release is pinned for Kubernetes {minor}; pinned: {', '.join(IMAGE_TAGS)}")


def _minor_number(minor: str) -> int:
    return int(minor.split(".")[1])


def gpu_utilization_threshold(config: PlatformConfig) -> float:
    """Below one unit's share of the largest GPU node: a node holding any GPU pod is never 'unneeded'.

    The autoscaler measures a GPU node by requested/allocatable nvidia.com/gpu, so one pod on a node that
    advertises 56 MIG slices is 1/56 used; half of the smallest share keeps every such node.
    """
    strategy = mig_strategy(config.gpu_pools)
    largest = max((pool_units(p, strategy).get(GPU_RESOURCE, 0) for p in config.gpu_pools), default=0)
    return round(0.5 / max(largest, 1), 6)


def shared_values(config: PlatformConfig) -> dict[str, Any]:
    """Values every cloud gets; the cloud's own part is merged over them."""
    return {
        "fullnameOverride": CHART,
        "image": {"repository": IMAGE, "tag": image_tag(config.cluster.kubernetes_minor)},
        "rbac": {"serviceAccount": {"name": SERVICE_ACCOUNT}},
        "priorityClassName": "system-cluster-critical",
        # It runs on the system pool: no GPU or spot toleration, so it never holds a GPU node up.
        "tolerations": tolerating(),
        "resources": {"requests": {"cpu": "100m", "memory": "600Mi"}, "limits": {"memory": "1Gi"}},
        "extraArgs": {
            "scale-down-unneeded-time": UNNEEDED_TIME,
            "scale-down-delay-after-add": DELAY_AFTER_ADD,
            "scale-down-gpu-utilization-threshold": gpu_utilization_threshold(config),
            # DaemonSets (device plugin, DCGM exporter) must not make an empty GPU node look used.
            "ignore-daemonsets-utilization": True,
            # Training pods use emptyDir for scratch and /dev/shm; with true no GPU node with such a pod ever
            # scales down. Running training is protected by the threshold above and safe-to-evict instead.
            "skip-nodes-with-local-storage": False,
            "balance-similar-node-groups": True,
            # Priority first (reserved, then spot, then on-demand), least wasted capacity among equals.
            "expander": "priority,least-waste",
            "max-node-provision-time": MAX_NODE_PROVISION_TIME,
        },
    }


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`: mappings merge key by key, anything else in `over` replaces."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def autoscaler_values(config: PlatformConfig, cloud: dict[str, Any]) -> dict[str, Any]:
    """The chart values: shared GPU-safe defaults with the cloud's part (including `expanderPriorities` over its
    exact node group ids) merged over them."""
    return deep_merge(shared_values(config), cloud)
