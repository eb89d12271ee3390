"""Karpenter: its CRDs and controller charts (unless the cloud runs Karpenter itself), and each GPU pool's node class
and NodePool, as the cluster describes them (EKS builds the objects in components/clouds/aws/karpenter.py, AKS node
auto-provisioning in components/clouds/azure/karpenter.py; this package imports no cloud SDK)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes.apiextensions as apiextensions
import pulumi_kubernetes.helm.v3 as helm
import pulumi_kubernetes.meta.v1 as meta

from components import namespaces
from components.clouds.base import GpuNodePool, PlatformCluster
from components.config.capacity import GPU_RESOURCE
from components.context import Context
from components.pins import PINS

CHART_REPO = "oci://public.ecr.aws/karpenter"
CHART = "karpenter"
CRD_CHART = "karpenter-crd"
# Karpenter 1.14.1, API karpenter.sh/v1 and karpenter.k8s.aws/v1; the Kubernetes minors it runs on are
# CloudProfile.provisioner_kubernetes_versions, read from its compatibility matrix (tests/clouds/test_karpenter.py).
CHART_VERSION = PINS[CHART].version
NAMESPACE = namespaces.KUBE_SYSTEM
SERVICE_ACCOUNT = "karpenter"  # fixed, so the controller role's IRSA trust can name it
NODE_POOL_API = "karpenter.sh/v1"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
CAPACITY_TYPES = {"on-demand": "on-demand", "spot": "spot"}
# A GPU node empty this long goes, as with the Cluster Autoscaler's scale-down-unneeded-time.
CONSOLIDATE_AFTER = "15m"
# Same tiers as the Cluster Autoscaler's priority expander: spot before on-demand where a pod fits both.
WEIGHTS = {"spot": 20, "on-demand": 10}


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
    # Who runs the controller and its CRDs when the cloud does (AKS node auto-provisioning): no chart is installed
    # and `values` is unused. Empty: this layer installs the charts.
    managed_by: str = ""


def object_name(pool_name: str) -> str:
    """NodePools and node classes are cluster-scoped: prefixed so a pool named `default` meets no other."""
    return f"gpu-{pool_name}"


def node_pool_spec(pool: GpuNodePool, node_class_group: str, node_class_kind: str, labels: dict[str, str],
                   extra_requirements: list[dict[str, Any]] | None = None,
                   startup_taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A GPU pool's NodePool on any cloud: its instance type, capacity type, labels and taints; at most maxNodes of
    GPUs; and disruption that only ever removes empty GPU nodes."""
    spec = pool.args
    node_spec: dict[str, Any] = {
        "nodeClassRef": {"group": node_class_group, "kind": node_class_kind, "name": object_name(spec.pool_name)},
        "requirements": [
            {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [spec.instance_type]},
            {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [CAPACITY_TYPES[spec.capacity_type]]},
            *(extra_requirements or []),
        ],
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints],
    }
    if startup_taints:
        node_spec["startupTaints"] = startup_taints
    # The 720h default would drain a node mid-training after 30 days.
    node_spec["expireAfter"] = "Never"
    return {
        "template": {"metadata": {"labels": dict(sorted(labels.items()))}, "spec": node_spec},
        # Karpenter counts instance-type capacity: maxNodes nodes of this type, never a node more.
        "limits": {GPU_RESOURCE: str(spec.max_nodes * spec.gpus_per_node)},
        "disruption": {
            # Never WhenEmptyOrUnderutilized: it would move running GPU pods to pack nodes.
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": CONSOLIDATE_AFTER,
            # One GPU node at a time, as max_unavailable 1 on node groups.
            "budgets": [{"nodes": "1"}],
        },
        "weight": WEIGHTS[spec.capacity_type],
    }


class Karpenter(pulumi.ComponentResource):
    """Karpenter's charts in kube-system (none where the cloud runs Karpenter: AKS node auto-provisioning); each GPU
    pool's node class and NodePool under its GpuNodePool, so the policies read them as that pool's node pool."""

    TYPE = "gpu-platform:autoscaling:Karpenter"

    def __init__(self, name: str, target: KarpenterTarget, cluster: PlatformCluster):
        props = ({"managedBy": target.managed_by} if target.managed_by
                 else {"chartVersion": CHART_VERSION, "namespace": NAMESPACE})
        super().__init__(self.TYPE, name, props, pulumi.ResourceOptions(provider=cluster.provider))
        after_ready = pulumi.ResourceOptions(parent=self, depends_on=target.ready)
        self.crds = self.release = None
        if not target.managed_by:
            # CRDs from their own chart: Helm never upgrades a chart's crds/ directory, the CRD chart's templates it does.
            self.crds = helm.Release(f"{name}-crds", helm.ReleaseArgs(
                name=CRD_CHART, chart=f"{CHART_REPO}/{CRD_CHART}", version=PINS[CRD_CHART].version,
                namespace=NAMESPACE,
            ), opts=after_ready)
            self.release = helm.Release(f"{name}-release", helm.ReleaseArgs(
                name=CHART, chart=f"{CHART_REPO}/{CHART}", version=CHART_VERSION, namespace=NAMESPACE,
                skip_crds=True, values=target.values,
            ), opts=pulumi.ResourceOptions(parent=self, depends_on=[*target.ready, self.crds]))
        # A managed controller's CRDs exist once the cluster it runs in does.
        controller = [self.crds, self.release] if self.release is not None else list(target.ready)
        for pool_name, pool in target.pools.items():
            # The NodePool is the pool's capacity: parented to its GpuNodePool like a node group would be.
            objects = pulumi.ResourceOptions(parent=pool, provider=cluster.provider, depends_on=controller)
            node_class = apiextensions.CustomResource(
                f"{name}-{pool_name}-node-class", api_version=target.node_class_api, kind=target.node_class_kind,
                metadata=meta.ObjectMetaArgs(name=object_name(pool_name)), spec=target.node_classes[pool_name],
                opts=objects)
            apiextensions.CustomResource(
                f"{name}-{pool_name}-node-pool", api_version=NODE_POOL_API, kind="NodePool",
                metadata=meta.ObjectMetaArgs(name=object_name(pool_name)), spec=target.node_pools[pool_name],
                opts=pulumi.ResourceOptions.merge(objects, pulumi.ResourceOptions(depends_on=[node_class])))
        outputs: dict[str, Any] = ({"managedBy": target.managed_by} if target.managed_by
                                   else {"release": self.release.name})
        self.register_outputs({**outputs, "nodePools": [object_name(p) for p in target.pools]})


def install(ctx: Context) -> None:
    """Karpenter's charts and NodePools, from the target the cluster built its GPU pools for (none on an adopted
    cluster)."""
    target = ctx.cluster.node_provisioner()
    if target is not None:
        ctx.handles["karpenter"] = Karpenter("karpenter", target, ctx.cluster)
