"""Karpenter: its CRDs and controller charts, and each GPU pool's node class and NodePool, as the cluster describes
them (EKS builds the objects in components/clouds/aws_karpenter.py; this layer imports no cloud SDK)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes.apiextensions as apiextensions
import pulumi_kubernetes.helm.v3 as helm
import pulumi_kubernetes.meta.v1 as meta

from components.clouds.base import GpuNodePool, PlatformCluster

CHART_REPO = "oci://public.ecr.aws/karpenter"
CHART = "karpenter"
CRD_CHART = "karpenter-crd"
# Karpenter 1.10.0, API karpenter.sh/v1 and karpenter.k8s.aws/v1; check its compatibility matrix before moving a
# stack to a Kubernetes minor newer than it supports.
CHART_VERSION = "1.10.0"
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "karpenter"  # fixed, so the controller role's IRSA trust can name it
NODE_POOL_API = "karpenter.sh/v1"


@dataclass
class KarpenterTarget:
    """What a cluster whose GPU pools Karpenter makes hands this layer: chart values and, per pool, its node class
    (API version, kind, spec) and NodePool spec."""

    values: dict[str, Any]
    node_class_api: str
    node_class_kind: str
    node_classes: dict[str, dict[str, Any]]
    node_pools: dict[str, dict[str, Any]]
    pools: dict[str, GpuNodePool]
    # What the controller needs before it starts (its nodes, its role's policy). Not the whole cluster component:
    # the NodePools are children of its pools.
    ready: list[pulumi.Resource]


def object_name(pool_name: str) -> str:
    """NodePools and node classes are cluster-scoped: prefixed so a pool named `default` meets no other."""
    return f"gpu-{pool_name}"


class Karpenter(pulumi.ComponentResource):
    """Karpenter's charts in kube-system; each GPU pool's node class and NodePool under its GpuNodePool, so the
    policies read them as that pool's node pool."""

    TYPE = "gpu-platform:autoscaling:Karpenter"

    def __init__(self, name: str, target: KarpenterTarget, cluster: PlatformCluster):
        super().__init__(self.TYPE, name, {"chartVersion": CHART_VERSION, "namespace": NAMESPACE},
                         pulumi.ResourceOptions(provider=cluster.provider))
        after_ready = pulumi.ResourceOptions(parent=self, depends_on=target.ready)
        # CRDs from their own chart: Helm never upgrades a chart's crds/ directory, the CRD chart's templates it does.
        self.crds = helm.Release(f"{name}-crds", helm.ReleaseArgs(
            name=CRD_CHART, chart=f"{CHART_REPO}/{CRD_CHART}", version=CHART_VERSION, namespace=NAMESPACE,
        ), opts=after_ready)
        self.release = helm.Release(f"{name}-release", helm.ReleaseArgs(
            name=CHART, chart=f"{CHART_REPO}/{CHART}", version=CHART_VERSION, namespace=NAMESPACE,
            skip_crds=True, values=target.values,
        ), opts=pulumi.ResourceOptions(parent=self, depends_on=[*target.ready, self.crds]))
        for pool_name, pool in target.pools.items():
            # The NodePool is the pool's capacity: parented to its GpuNodePool like a node group would be.
            objects = pulumi.ResourceOptions(parent=pool, provider=cluster.provider,
                                             depends_on=[self.crds, self.release])
            node_class = apiextensions.CustomResource(
                f"{name}-{pool_name}-node-class", api_version=target.node_class_api, kind=target.node_class_kind,
                metadata=meta.ObjectMetaArgs(name=object_name(pool_name)), spec=target.node_classes[pool_name],
                opts=objects)
            apiextensions.CustomResource(
                f"{name}-{pool_name}-node-pool", api_version=NODE_POOL_API, kind="NodePool",
                metadata=meta.ObjectMetaArgs(name=object_name(pool_name)), spec=target.node_pools[pool_name],
                opts=pulumi.ResourceOptions.merge(objects, pulumi.ResourceOptions(depends_on=[node_class])))
        self.register_outputs({"release": self.release.name,
                               "nodePools": [object_name(p) for p in target.pools]})
