"""OKE from pulumi_oci: cluster.py (cluster, node pools), network.py (VCN and subnets), nodes.py (node pools,
cloud-init), rdma.py (RDMA cluster networks of self-managed nodes); facts.py, catalog.py and offline.py hold its
facts."""
from __future__ import annotations

from components.clouds.oci.facts import PROFILE
from components.clouds.oci.offline import OFFLINE


def cluster_class():
    from components.clouds.oci.cluster import OkeCluster
    return OkeCluster


def instance_types():
    from components.clouds.oci.catalog import INSTANCE_TYPES
    return INSTANCE_TYPES
