"""The platform, layer by layer: cluster and GPU pools, then everything that runs inside Kubernetes."""
from __future__ import annotations

from typing import Any, Callable

import pulumi

from components.clouds import cluster_class
from components.clouds.existing import ExistingCluster
from components.config.model import PlatformConfig
from components.context import Context
from components.gpu import layer as gpu
from components.network import layer as network
from components.observability import layer as observability
from components.provisioning import layer as provisioning
from components.scheduling import layer as scheduling
from components.stack_facts import StackFacts

# Layers inside the cluster, in install order. Imported eagerly: every stack installs all of them, and none imports
# a cloud provider SDK (the cluster class, which does, stays behind `cluster_class`).
LAYERS: tuple[Callable[[Context], None], ...] = (network.install, gpu.install, provisioning.install,
                                                 scheduling.install, observability.install)


def build(config: PlatformConfig) -> dict[str, Any]:
    """Create every layer for one validated stack config; returns the stack outputs."""
    name = config.cluster.name
    StackFacts(f"{name}-stack-facts", config)
    if config.cluster.adopted:
        cluster = ExistingCluster(name, config)
    else:
        cluster = cluster_class(config.cloud)(name, config, opts=pulumi.ResourceOptions(protect=config.protected))
    ctx = Context(config=config, cluster=cluster)
    for install in LAYERS:
        install(ctx)
    return {
        "clusterName": cluster.cluster_name,
        "kubeconfig": cluster.kubeconfig,
        "gpuPools": {p.name: {"cloudName": p.cloud_name, "instanceType": p.instance_type,
                              "gpuModel": p.instance.gpu.name} for p in config.gpu_pools},
        **ctx.exports,
    }
