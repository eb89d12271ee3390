"""EKS GPU pools made by Karpenter: one EC2NodeClass and one NodePool per pool, from the same facts as node groups."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.clouds.aws_nodes import GPU_DISK_GIB, TAG_PREFIX
from components.clouds.base import GpuNodePool
from components.clouds.profiles import GpuImage
from components.config.capacity import GPU_RESOURCE

NODE_CLASS_GROUP = "karpenter.k8s.aws"
NODE_CLASS_API = f"{NODE_CLASS_GROUP}/v1"
NODE_POOL_API = "karpenter.sh/v1"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
CAPACITY_TYPES = {"on-demand": "on-demand", "spot": "spot"}
# The pod annotation that keeps Karpenter from draining a node for consolidation, drift or expiry.
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# A GPU node empty this long goes, as with the Cluster Autoscaler's scale-down-unneeded-time.
CONSOLIDATE_AFTER = "15m"
# Same tiers as the Cluster Autoscaler's priority expander: spot before on-demand where a pod fits both.
WEIGHTS = {"spot": 20, "on-demand": 10}
# IMDSv2, hop limit 1: pods cannot reach the node role's credentials (as METADATA_OPTIONS on node groups).
METADATA_OPTIONS = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1,
                    "httpTokens": "required"}


@dataclass
class KarpenterTarget:
    """What the Karpenter layer needs from an EKS cluster whose GPU pools Karpenter makes."""

    cluster_name: pulumi.Output[str]
    controller_role_arn: pulumi.Output[str]
    node_role_name: pulumi.Output[str]
    subnet_ids: list
    security_group_id: pulumi.Output[str]
    image: GpuImage
    pools: dict[str, GpuNodePool]
    # What the controller needs before it starts: the system nodes it runs on, its role's policy, the node role's
    # grants. Not the whole cluster component: the NodePools are children of its pools.
    ready: list[pulumi.Resource]


def object_name(pool: GpuNodePool) -> str:
    """NodePools and EC2NodeClasses are cluster-scoped: prefixed so a pool named `default` meets no other."""
    return f"gpu-{pool.pool.name}"


def node_class_spec(pool: GpuNodePool, target: KarpenterTarget) -> dict[str, Any]:
    """The EC2NodeClass: the GPU image, the cluster's private subnets and security group, the node role, a locked
    metadata service and a 200 GiB encrypted image volume, like the GPU node groups' launch templates."""
    return {
        "role": target.node_role_name,
        # `@latest` follows EKS's newest AMI; a new one is drift, replaced one node at a time (NodePool budget)
        # and never under a pod annotated karpenter.sh/do-not-disrupt.
        "amiSelectorTerms": [{"alias": f"{target.image.karpenter_alias}@latest"}],
        "subnetSelectorTerms": [{"id": subnet} for subnet in target.subnet_ids],
        "securityGroupSelectorTerms": [{"id": target.security_group_id}],
        "metadataOptions": METADATA_OPTIONS,
        "blockDeviceMappings": [{"deviceName": target.image.image_volume, "ebs": {
            "volumeSize": f"{GPU_DISK_GIB}Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}}],
        "tags": {f"{TAG_PREFIX}pool": pool.pool.name},
    }


def node_pool_spec(pool: GpuNodePool, image: GpuImage) -> dict[str, Any]:
    """The NodePool: the pool's instance type, capacity type, labels and taints; at most maxNodes of GPUs; and
    disruption that only ever removes empty GPU nodes."""
    spec = pool.pool
    return {
        "template": {
            "metadata": {"labels": dict(sorted({**pool.labels, **image.labels}.items()))},
            "spec": {
                "nodeClassRef": {"group": NODE_CLASS_GROUP, "kind": "EC2NodeClass", "name": object_name(pool)},
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
        "limits": {GPU_RESOURCE: str(spec.max_nodes * spec.instance.gpus)},
        "disruption": {
            # Never WhenEmptyOrUnderutilized: it would move running GPU pods to pack nodes.
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": CONSOLIDATE_AFTER,
            # One GPU node at a time, as max_unavailable 1 on node groups.
            "budgets": [{"nodes": "1"}],
        },
        "weight": WEIGHTS[spec.capacity_type],
    }
