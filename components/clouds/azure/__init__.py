"""AKS from pulumi_azure_native: cluster.py (resource group, VNet, managed cluster, agent pools),
karpenter.py (node auto-provisioning), kubeconfig.py (Entra ID kubeconfigs); facts.py (with the InfiniBand record),
catalog.py and offline.py hold its facts."""
from __future__ import annotations

from components.clouds.azure.facts import PROFILE
from components.clouds.azure.offline import OFFLINE


def cluster_class():
    from components.clouds.azure.cluster import AksCluster
    return AksCluster


def instance_types():
    from components.clouds.azure.catalog import INSTANCE_TYPES
    return INSTANCE_TYPES
