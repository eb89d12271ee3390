"""The GPU software layer: the operator, sharing and MIG config, and what each pool advertises."""
from __future__ import annotations

from typing import Any

from components.config.labels import pool_labels
from components.config.capacity import mig_strategy, pool_units
from components.config.model import PlatformConfig
from components.context import Context
from components.gpu.fabric import FabricDevicePlugins
from components.gpu.operator import GpuOperator, GpuOperatorArgs


def gpu_resources(config: PlatformConfig) -> dict[str, dict[str, int]]:
    """Extended resources one node of each pool advertises, from the same table quotas are checked against."""
    strategy = mig_strategy(config.gpu_pools)
    return {p.name: pool_units(p, strategy) for p in config.gpu_pools}


def gpu_resources_at_max(config: PlatformConfig) -> dict[str, dict[str, int]]:
    """Each pool's resources with every node up (maxNodes)."""
    per_node = gpu_resources(config)
    return {p.name: {r: n * p.max_nodes for r, n in per_node[p.name].items()} for p in config.gpu_pools}


def install(ctx: Context) -> None:
    """Install the GPU Operator the same way on created and adopted clusters: it reads the config, not the pools."""
    config = ctx.config
    operator = GpuOperator("gpu-operator", GpuOperatorArgs.from_config(config), opts=ctx.k8s_opts())
    ctx.handles["gpu-operator"] = operator
    if any(p.fabric != "none" for p in config.gpu_pools):
        FabricDevicePlugins("fabric-device-plugins", config, opts=ctx.k8s_opts())
    exports: dict[str, Any] = {
        "gpuResources": gpu_resources(config),
        "gpuResourcesAtMaxNodes": gpu_resources_at_max(config),
        # Adopted clusters' nodes need these labels from whoever manages their pools.
        "gpuNodeLabels": {p.name: pool_labels(config, p) for p in config.gpu_pools},
    }
    ctx.exports.update(exports)
