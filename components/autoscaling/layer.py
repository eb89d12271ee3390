"""The autoscaling layer: the Kubernetes Cluster Autoscaler on clouds whose pools do not scale themselves."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes.helm.v3 as helm

from components.autoscaling.values import CHART, CHART_REPO, CHART_VERSION, IMAGE_TAG, NAMESPACE, autoscaler_values
from components.clouds.base import PlatformCluster
from components.config.model import PlatformConfig
from components.context import Context


class ClusterAutoscaler(pulumi.ComponentResource):
    """The cluster-autoscaler chart in kube-system, sized by the cloud's node groups."""

    TYPE = "gpu-platform:autoscaling:ClusterAutoscaler"

    def __init__(self, name: str, config: PlatformConfig, cluster: PlatformCluster, cloud_values: dict[str, Any],
                 opts: pulumi.ResourceOptions | None = None):
        self.values = autoscaler_values(config, cloud_values)
        super().__init__(self.TYPE, name, {"chartVersion": CHART_VERSION, "imageTag": IMAGE_TAG,
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


def install(ctx: Context) -> None:
    """Install the autoscaler where the cluster asks for one (EKS, OKE); AKS and GKE pools scale natively."""
    cloud_values = ctx.cluster.autoscaler_values()
    if cloud_values is None:
        return
    ctx.handles["cluster-autoscaler"] = ClusterAutoscaler("cluster-autoscaler", ctx.config, ctx.cluster, cloud_values,
                                                          opts=ctx.k8s_opts())
