"""Karpenter on EKS: its CRDs and controller charts, and one EC2NodeClass and NodePool per GPU pool."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes.apiextensions as apiextensions
import pulumi_kubernetes.helm.v3 as helm
import pulumi_kubernetes.meta.v1 as meta

from components.clouds.aws_iam import KARPENTER_NAMESPACE, KARPENTER_SERVICE_ACCOUNT
from components.clouds.aws_karpenter import (
    NODE_CLASS_API, NODE_POOL_API, KarpenterTarget, node_class_spec, node_pool_spec, object_name,
)
from components.clouds.aws_nodes import SYSTEM_NODE_GROUP
from components.clouds.base import PlatformCluster
from components.clouds.labels import LABEL_PREFIX

CHART_REPO = "oci://public.ecr.aws/karpenter"
CHART = "karpenter"
CRD_CHART = "karpenter-crd"
# Karpenter 1.10.0, API karpenter.sh/v1 and karpenter.k8s.aws/v1; check its compatibility matrix before moving a
# stack to a Kubernetes minor newer than it supports.
CHART_VERSION = "1.10.0"


def controller_values(target: KarpenterTarget) -> dict[str, Any]:
    """The controller's chart values: this cluster, its IRSA role, and a place on the system node group."""
    return {
        "settings": {"clusterName": target.cluster_name},
        "serviceAccount": {"name": KARPENTER_SERVICE_ACCOUNT,
                           "annotations": {"eks.amazonaws.com/role-arn": target.controller_role_arn}},
        # On the system node group, never on a node it manages itself (the chart's affinity already excludes those).
        "nodeSelector": {f"{LABEL_PREFIX}/node-role": SYSTEM_NODE_GROUP},
        "priorityClassName": "system-cluster-critical",
        "controller": {"resources": {"requests": {"cpu": "200m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}},
    }


class Karpenter(pulumi.ComponentResource):
    """Karpenter's charts in kube-system; each GPU pool's EC2NodeClass and NodePool under its GpuNodePool, so the
    policies read them as that pool's node pool."""

    TYPE = "gpu-platform:autoscaling:Karpenter"

    def __init__(self, name: str, target: KarpenterTarget, cluster: PlatformCluster):
        super().__init__(self.TYPE, name, {"chartVersion": CHART_VERSION, "namespace": KARPENTER_NAMESPACE},
                         pulumi.ResourceOptions(provider=cluster.provider))
        provider = cluster.provider
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=target.ready)
        # CRDs from their own chart: Helm never upgrades a chart's crds/ directory, the CRD chart's templates it does.
        self.crds = helm.Release(f"{name}-crds", helm.ReleaseArgs(
            name=CRD_CHART, chart=f"{CHART_REPO}/{CRD_CHART}", version=CHART_VERSION, namespace=KARPENTER_NAMESPACE,
        ), opts=after_cluster)
        self.release = helm.Release(f"{name}-release", helm.ReleaseArgs(
            name=CHART, chart=f"{CHART_REPO}/{CHART}", version=CHART_VERSION, namespace=KARPENTER_NAMESPACE,
            skip_crds=True, values=controller_values(target),
        ), opts=pulumi.ResourceOptions(parent=self, depends_on=[*target.ready, self.crds]))
        self.node_pools = {}
        for pool_name, pool in target.pools.items():
            # The NodePool is the pool's capacity: parented to its GpuNodePool like a node group would be.
            objects = pulumi.ResourceOptions(parent=pool, provider=provider,
                                             depends_on=[self.crds, self.release])
            node_class = apiextensions.CustomResource(
                f"{name}-{pool_name}-node-class", api_version=NODE_CLASS_API, kind="EC2NodeClass",
                metadata=meta.ObjectMetaArgs(name=object_name(pool)), spec=node_class_spec(pool, target),
                opts=objects)
            self.node_pools[pool_name] = apiextensions.CustomResource(
                f"{name}-{pool_name}-node-pool", api_version=NODE_POOL_API, kind="NodePool",
                metadata=meta.ObjectMetaArgs(name=object_name(pool)), spec=node_pool_spec(pool, target.image),
                opts=pulumi.ResourceOptions.merge(objects, pulumi.ResourceOptions(depends_on=[node_class])))
        self.register_outputs({"release": self.release.name, "nodePools": [object_name(p) for p in target.pools.values()]})
