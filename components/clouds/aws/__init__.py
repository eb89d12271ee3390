"""EKS from plain pulumi_aws resources: cluster.py (control plane, node groups, the autoscaler's IAM),
network.py (VPC), iam.py (roles, IRSA), nodes.py (node groups, launch templates), efa.py (EFA interfaces and
placement), karpenter.py (NodePools and EC2NodeClasses); facts.py, catalog.py and offline.py hold its facts."""
from __future__ import annotations

from components.clouds.aws.facts import PROFILE
from components.clouds.aws.offline import OFFLINE


def cluster_class():
    from components.clouds.aws.cluster import EksCluster
    return EksCluster


def instance_types():
    from components.clouds.aws.catalog import INSTANCE_TYPES
    return INSTANCE_TYPES
