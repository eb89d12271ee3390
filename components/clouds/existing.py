"""An adopted cluster: only a Kubernetes provider from `cluster.existingKubeconfig`; nothing cloud-side is created."""
from __future__ import annotations

import pulumi

from components.clouds.base import PlatformCluster
from components.config.model import PlatformConfig


class ExistingCluster(PlatformCluster):
    """Installs the platform layers onto a cluster someone else created."""

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:cluster:ExistingCluster", name, {"clusterName": config.cluster.name}, opts)
        self.pools = {}  # GPU pools of an adopted cluster are managed elsewhere
        self._finish(name, config.cluster.existing_kubeconfig, config.cluster.name)
