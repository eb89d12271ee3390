"""GCP: GKE clusters, node pools, network, identity and fabrics; registered in components/clouds/__init__.py.

Importing the package loads only its facts; the cluster (and with it the GCP Pulumi SDK) and the GPU catalog load when
asked for, so a stack imports only its own cloud's SDK."""
from __future__ import annotations

from components.clouds.gcp.facts import PROFILE

__all__ = ["PROFILE", "cluster_class", "instance_types", "offline_facts"]


def cluster_class():
    """The GKE PlatformCluster."""
    from components.clouds.gcp.cluster import GkeCluster
    return GkeCluster


def instance_types():
    """GCP's GPU instance types, by name."""
    from components.clouds.gcp.catalog import INSTANCE_TYPES
    return INSTANCE_TYPES


def offline_facts():
    """What the offline engine answers in place of the provider."""
    from components.clouds.gcp.offline import OFFLINE
    return OFFLINE
