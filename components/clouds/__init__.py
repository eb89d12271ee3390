"""Per-cloud cluster components behind one lookup, importing only the cloud a stack uses."""
from __future__ import annotations

import importlib

from components.clouds.profiles import PROFILES, CloudProfile, profile

# cloud -> (module, class): the only place that maps a cloud to its implementation.
_CLUSTERS = {
    "aws": ("components.clouds.aws", "EksCluster"),
    "azure": ("components.clouds.azure", "AksCluster"),
    "gcp": ("components.clouds.gcp", "GkeCluster"),
    "oci": ("components.clouds.oci", "OkeCluster"),
}


def cluster_class(cloud: str):
    """The PlatformCluster subclass for `cloud`, imported on first use."""
    try:
        module, name = _CLUSTERS[cloud]
    except KeyError:
        raise KeyError(f"unknown cloud {cloud!r}; allowed: {', '.join(_CLUSTERS)}") from None
    return getattr(importlib.import_module(module), name)


__all__ = ["PROFILES", "CloudProfile", "profile", "cluster_class"]
