"""GKE from pulumi_gcp: cluster.py (VPC, private regional cluster, node pools), gpudirect.py (the GPU NIC VPCs
and compact placement of GPUDirect-TCPX/TCPXO pools), fabric.py (their in-cluster Networks, NCCL plugin installers
and NRI injector); facts.py, catalog.py and offline.py hold its facts."""
from __future__ import annotations

from components.clouds.gcp.facts import PROFILE
from components.clouds.gcp.offline import OFFLINE


def cluster_class():
    from components.clouds.gcp.cluster import GkeCluster
    return GkeCluster


def instance_types():
    from components.clouds.gcp.catalog import INSTANCE_TYPES
    return INSTANCE_TYPES
