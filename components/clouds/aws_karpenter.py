"""EKS GPU pools made by Karpenter: one EC2NodeClass and one NodePool per pool, from the same facts as node groups."""
from __future__ import annotations

from typing import Any

import pulumi

from components.autoscaling.karpenter import SERVICE_ACCOUNT, KarpenterTarget, object_name
from components.clouds.aws_nodes import GPU_DISK_GIB, SYSTEM_NODE_GROUP, TAG_PREFIX
from components.clouds.base import GpuNodePool
from components.clouds.labels import LABEL_PREFIX
from components.clouds.profiles import GpuImage
from components.config.capacity import GPU_RESOURCE

NODE_CLASS_GROUP = "karpenter.k8s.aws"
NODE_CLASS_API = f"{NODE_CLASS_GROUP}/v1"
NODE_CLASS_KIND = "EC2NodeClass"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
CAPACITY_TYPES = {"on-demand": "on-demand", "spot": "spot"}
# A GPU node empty this long goes, as with the Cluster Autoscaler's scale-down-unneeded-time.
CONSOLIDATE_AFTER = "15m"
# Same tiers as the Cluster Autoscaler's priority expander: spot before on-demand where a pod fits both.
WEIGHTS = {"spot": 20, "on-demand": 10}
# IMDSv2, hop limit 1: pods cannot reach the node role's credentials (as METADATA_OPTIONS on node groups).
METADATA_OPTIONS = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1,
                    "httpTokens": "required"}


def node_class_spec(pool: GpuNodePool, image: GpuImage, node_role_name: pulumi.Input[str], subnet_ids: list,
                    security_group_id: pulumi.Input[str]) -> dict[str, Any]:
    """The EC2NodeClass: the GPU image, the cluster's private subnets and security group, the node role, a locked
    metadata service and a 200 GiB encrypted image volume, like the GPU node groups' launch templates."""
    return {
        "role": node_role_name,
        # `@latest` follows EKS's newest AMI; a new one is drift, replaced one node at a time (NodePool budget)
        # and never under a pod annotated karpenter.sh/do-not-disrupt.
        "amiSelectorTerms": [{"alias": f"{image.karpenter_alias}@latest"}],
        "subnetSelectorTerms": [{"id": subnet} for subnet in subnet_ids],
        "securityGroupSelectorTerms": [{"id": security_group_id}],
        "metadataOptions": METADATA_OPTIONS,
        "blockDeviceMappings": [{"deviceName": image.image_volume, "ebs": {
            "volumeSize": f"{GPU_DISK_GIB}Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}}],
        "tags": {f"{TAG_PREFIX}pool": pool.args.pool_name},
    }


def node_pool_spec(pool: GpuNodePool, image: GpuImage) -> dict[str, Any]:
    """The NodePool: the pool's instance type, capacity type, labels and taints; at most maxNodes of GPUs; and
    disruption that only ever removes empty GPU nodes."""
    spec = pool.args
    return {
        "template": {
            "metadata": {"labels": dict(sorted({**pool.labels, **image.labels}.items()))},
            "spec": {
                "nodeClassRef": {"group": NODE_CLASS_GROUP, "kind": NODE_CLASS_KIND, "name": object_name(spec.pool_name)},
                "requirements": [
                    {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [spec.instance_type]},
                    {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [CAPACITY_TYPES[spec.capacity_type]]},
                ],
                "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints],
                # The 720h default would drain a node mid-training after 30 days.
                "expireAfter": "Never",
            },
        },
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


def controller_values(cluster_name: pulumi.Input[str], role_arn: pulumi.Input[str]) -> dict[str, Any]:
    """The controller's chart values: this cluster, its IRSA role, and a place on the system node group."""
    return {
        "settings": {"clusterName": cluster_name},
        "serviceAccount": {"name": SERVICE_ACCOUNT, "annotations": {"eks.amazonaws.com/role-arn": role_arn}},
        # On the system node group, never on a node it manages itself (the chart's affinity already excludes those).
        "nodeSelector": {f"{LABEL_PREFIX}/node-role": SYSTEM_NODE_GROUP},
        "priorityClassName": "system-cluster-critical",
        "controller": {"resources": {"requests": {"cpu": "200m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}},
    }


def karpenter_target(cluster_name: pulumi.Input[str], role_arn: pulumi.Input[str], pools: dict[str, GpuNodePool],
                     image: GpuImage, node_role_name: pulumi.Input[str], subnet_ids: list,
                     security_group_id: pulumi.Input[str], ready: list[pulumi.Resource]) -> KarpenterTarget:
    """Everything the Karpenter layer creates for an EKS cluster, built from the same facts as its node groups."""
    return KarpenterTarget(
        values=controller_values(cluster_name, role_arn), node_class_api=NODE_CLASS_API, node_class_kind=NODE_CLASS_KIND,
        node_classes={name: node_class_spec(pool, image, node_role_name, subnet_ids, security_group_id)
                      for name, pool in pools.items()},
        node_pools={name: node_pool_spec(pool, image) for name, pool in pools.items()},
        pools=pools, ready=ready)
