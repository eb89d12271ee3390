"""The Cluster Autoscaler's components: its chart, and the priority expander's ConfigMap for a cloud-run one."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes.core.v1 as core
import pulumi_kubernetes.helm.v3 as helm
import pulumi_kubernetes.meta.v1 as meta
import yaml

from components.clouds.base import PlatformCluster
from components.config.model import PlatformConfig
from components.context import Context
from components.provisioning.cluster_autoscaler.values import (
    CHART, CHART_REPO, CHART_VERSION, NAMESPACE, autoscaler_values,
)


class ClusterAutoscaler(pulumi.ComponentResource):
    """The cluster-autoscaler chart in kube-system, sized by the cloud's node groups."""

    TYPE = "gpu-platform:autoscaling:ClusterAutoscaler"

    def __init__(self, name: str, config: PlatformConfig, cluster: PlatformCluster, cloud_values: dict[str, Any],
                 opts: pulumi.ResourceOptions | None = None):
        self.values = autoscaler_values(config, cloud_values)
        super().__init__(self.TYPE, name, {"chartVersion": CHART_VERSION,
                                           "imageTag": self.values["image"]["tag"],
                                           "namespace": NAMESPACE, "cloudProvider": self.values["cloudProvider"]}, opts)
        # After the whole cluster: the IAM it acts with and every node group it names must exist first.
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=[cluster])
        self.release = helm.Release(f"{name}-release", helm.ReleaseArgs(
            name=CHART,
            chart=CHART,
            version=CHART_VERSION,
            repository_opts=helm.RepositoryOptsArgs(repo=CHART_REPO),
            namespace=NAMESPACE,
            values=self.values,
        ), opts=after_cluster)
        self.register_outputs({"release": self.release.name})


class ExpanderPriorities(pulumi.ComponentResource):
    """The priority expander's ConfigMap for a cloud-managed autoscaler (AKS): which node groups to grow first."""

    TYPE = "gpu-platform:autoscaling:ExpanderPriorities"
    CONFIG_MAP = "cluster-autoscaler-priority-expander"  # the name the autoscaler looks for, in kube-system

    def __init__(self, name: str, priorities: dict[str, list[str]], opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"priorities": priorities}, opts)
        self.config_map = core.ConfigMap(
            f"{name}-config", metadata=meta.ObjectMetaArgs(name=self.CONFIG_MAP, namespace=NAMESPACE),
            data={"priorities": yaml.safe_dump({int(tier): patterns for tier, patterns in priorities.items()})},
            opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({"configMap": self.CONFIG_MAP})


def install_chart(ctx: Context) -> None:
    """The chart, where the cluster asks for one (EKS node groups, OKE node pools; not an adopted cluster)."""
    cloud_values = ctx.cluster.autoscaler_values()
    if cloud_values is not None:
        ctx.handles["cluster-autoscaler"] = ClusterAutoscaler("cluster-autoscaler", ctx.config, ctx.cluster,
                                                              cloud_values, opts=ctx.k8s_opts())


def install_priorities(ctx: Context) -> None:
    """AKS and GKE pools scale natively; AKS's autoscaler gets our pool preferences through its priority-expander
    ConfigMap."""
    priorities = ctx.cluster.managed_expander_priorities()
    if priorities:
        ExpanderPriorities("cluster-autoscaler-priorities", priorities, opts=ctx.k8s_opts())
