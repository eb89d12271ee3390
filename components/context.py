"""What one layer hands the next: the config, the cluster, and named resources to depend on."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.clouds.base import PlatformCluster
from components.config.model import PlatformConfig


@dataclass
class Context:
    """Shared by the layers of one stack, in build order."""

    config: PlatformConfig
    cluster: PlatformCluster
    exports: dict[str, Any] = field(default_factory=dict)
    handles: dict[str, pulumi.Resource] = field(default_factory=dict)  # e.g. "gpu-operator", "kueue"

    def k8s_opts(self, *depends_on: str, parent: pulumi.Resource | None = None) -> pulumi.ResourceOptions:
        """Options for Kubernetes objects: the cluster's provider, plus named resources they must follow."""
        return pulumi.ResourceOptions(provider=self.cluster.provider, parent=parent,
                                      depends_on=[self.handles[h] for h in depends_on if h in self.handles])
