"""The device plugin of each fast fabric the GPU pools use (EFA on EKS), so pods can request its interfaces; GKE
GPUDirect, which has none, gets its NIC networks, NCCL plugin installer and NRI injector instead (gpu/gpudirect)."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes.helm.v3 as helm

from components.clouds.labels import FABRIC_LABEL, pool_taints
from components.clouds.profiles import Fabric, profile
from components.config.model import PlatformConfig
from components.gpu.gpudirect import GpuDirectFabrics


def tolerations(config: PlatformConfig, fabric: str) -> list[dict[str, str]]:
    """Every taint of the pools using `fabric` (GPU, cloud, spot and the pools' own), once each."""
    prof = profile(config.cloud)
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for pool in config.gpu_pools:
        if pool.fabric == fabric:
            for taint in pool_taints(pool, prof):
                seen.setdefault((taint.key, taint.effect),
                                {"key": taint.key, "operator": "Exists", "effect": taint.effect})
    return list(seen.values())


def plugin_values(config: PlatformConfig, fabric: Fabric) -> dict[str, Any]:
    """Chart values: on the fabric's pools only, whatever their taints."""
    return {"nodeSelector": {FABRIC_LABEL: fabric.name}, "tolerations": tolerations(config, fabric.name)}


class FabricDevicePlugins(pulumi.ComponentResource):
    """One Helm release per fabric in use with a device plugin, GpuDirectFabrics for GKE GPUDirect; nothing when no
    pool has a fabric."""

    TYPE = "gpu-platform:gpu:FabricDevicePlugins"

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        prof = profile(config.cloud)
        used = sorted({p.fabric for p in config.gpu_pools if p.fabric in prof.fabrics})
        super().__init__(self.TYPE, name, {"fabrics": used}, opts)
        self.releases: dict[str, helm.Release] = {}
        direct = [prof.fabrics[kind] for kind in used if prof.fabrics[kind].gpudirect]
        if direct:
            # GKE GPUDirect has no device plugin: NICs reach pods through multi-networking (gpu/gpudirect).
            nics = {p.fabric: p.instance.fabric_interfaces for p in config.gpu_pools if p.fabric in prof.fabrics}
            GpuDirectFabrics(f"{name}-gpudirect", config, direct, nics, opts=pulumi.ResourceOptions(parent=self))
        for kind in used:
            fabric = prof.fabrics[kind]
            if not fabric.chart:
                continue
            self.releases[kind] = helm.Release(f"{name}-{kind}", helm.ReleaseArgs(
                name=fabric.chart, chart=fabric.chart, version=fabric.version,
                repository_opts=helm.RepositoryOptsArgs(repo=fabric.repository), namespace=fabric.namespace,
                values=plugin_values(config, fabric),
                # A DaemonSet on pools that may be scaled to zero: waiting for it would block until a node starts.
                skip_await=True,
            ), opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({})
