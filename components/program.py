"""The platform, layer by layer: cluster and GPU pools, then everything that runs inside Kubernetes."""
from __future__ import annotations

import importlib
from typing import Any

import pulumi

from components.clouds import cluster_class
from components.clouds.existing import ExistingCluster
from components.config.model import PlatformConfig
from components.context import Context
from components.stack_facts import StackFacts

# Layers inside the cluster, in install order; each module has `install(ctx: Context) -> None`.
LAYERS: tuple[str, ...] = (
    "components.gpu.layer",
    "components.autoscaling.layer",
    "components.scheduling.layer",
    "components.observability.layer",
)


def build(config: PlatformConfig) -> dict[str, Any]:
    """Create every layer for one validated stack config; returns the stack outputs."""
    name = config.cluster.name
    StackFacts(f"{name}-stack-facts", config)
    if config.cluster.adopted:
        cluster = ExistingCluster(name, config)
    else:
        cluster = cluster_class(config.cloud)(name, config, opts=pulumi.ResourceOptions(protect=config.protected))
    ctx = Context(config=config, cluster=cluster)
    for layer in LAYERS:
        importlib.import_module(layer).install(ctx)
    return {
        "clusterName": cluster.cluster_name,
        "kubeconfig": cluster.kubeconfig,
        "gpuPools": {p.name: {"cloudName": p.cloud_name, "instanceType": p.instance_type,
                              "gpuModel": p.instance.gpu.name} for p in config.gpu_pools},
        **ctx.exports,
    }
