"""EKS GPU pools made by Karpenter: one EC2NodeClass and one NodePool per pool, from the same facts as node groups."""
from __future__ import annotations

from typing import Any

import pulumi

from components.provisioning.karpenter.component import SERVICE_ACCOUNT, KarpenterTarget
from components.provisioning.karpenter.component import node_pool_spec as node_pool
from components.clouds.aws.nodes import GPU_DISK_GIB, SYSTEM_NODE_GROUP, TAG_PREFIX
from components.clouds.base import GpuNodePool
from components.config.labels import LABEL_PREFIX
from components.clouds.facts import GpuImage

NODE_CLASS_GROUP = "karpenter.k8s.aws"
NODE_CLASS_API = f"{NODE_CLASS_GROUP}/v1"
NODE_CLASS_KIND = "EC2NodeClass"
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
    """The NodePool (karpenter.node_pool_spec) with the image's labels, e.g. Bottlerocket's."""
    return node_pool(pool, NODE_CLASS_GROUP, NODE_CLASS_KIND, {**pool.labels, **image.labels})


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
