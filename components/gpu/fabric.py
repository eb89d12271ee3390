"""What makes each fast fabric the GPU pools use reachable from pods: a plain device plugin chart, or the installer
the fabric's record names from its cloud package (clouds/<cloud>/fabric.py), called once for all the fabrics in use
that name it."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes.helm.v3 as helm

from components.config.labels import FABRIC_LABEL, pool_taints
from components.clouds import profile
from components.clouds.facts import Fabric
from components.config.model import PlatformConfig


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
    """Per fabric in use: its device plugin chart, or its record's installer; nothing when no pool has a fabric."""

    TYPE = "gpu-platform:gpu:FabricDevicePlugins"

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        prof = profile(config.cloud)
        used = sorted({p.fabric for p in config.gpu_pools if p.fabric in prof.fabrics})
        super().__init__(self.TYPE, name, {"fabrics": used}, opts)
        child = pulumi.ResourceOptions(parent=self)
        installers: dict[Any, list[Fabric]] = {}
        for kind in used:
            fabric = prof.fabrics[kind]
            if fabric.installer:
                installers.setdefault(fabric.installer, []).append(fabric)
            else:
                helm.Release(f"{name}-{kind}", helm.ReleaseArgs(
                    name=fabric.chart, chart=fabric.chart, version=fabric.version,
                    repository_opts=helm.RepositoryOptsArgs(repo=fabric.repository), namespace=fabric.namespace,
                    values=plugin_values(config, fabric),
                    # A DaemonSet on pools that may be scaled to zero: waiting for it would block until a node starts.
                    skip_await=True,
                ), opts=child)
        for installer, fabrics in installers.items():
            installer()(name, config, tuple(fabrics), {f.name: plugin_values(config, f) for f in fabrics}, child)
        self.register_outputs({})
