"""The cloud registry: one package per cloud (components/clouds/<cloud>/), listed once here, with lookups that name
what they could not match.

Importing it loads only each package's facts (PROFILE, OFFLINE), never a Pulumi SDK: a package's cluster, and with it
its SDK, loads in its `cluster_class()`, so a stack imports only its own cloud's SDK; its GPU catalog loads in
`instance_types()` on the first lookup."""
from __future__ import annotations

from types import ModuleType

from components.clouds import aws, azure, gcp, oci
from components.clouds.facts import CloudProfile

# cloud -> its package: the only place that lists the clouds.
PACKAGES: dict[str, ModuleType] = {package.PROFILE.name: package for package in (aws, azure, gcp, oci)}
PROFILES: dict[str, CloudProfile] = {name: package.PROFILE for name, package in PACKAGES.items()}
CLOUDS = tuple(PACKAGES)


def package(cloud: str) -> ModuleType:
    """The package of `cloud`, or a KeyError naming the allowed clouds."""
    try:
        return PACKAGES[cloud]
    except KeyError:
        raise KeyError(f"unknown cloud {cloud!r}; allowed: {', '.join(PACKAGES)}") from None


def profile(cloud: str) -> CloudProfile:
    """The profile of `cloud`, or a KeyError naming the allowed clouds."""
    return package(cloud).PROFILE


def cluster_class(cloud: str):
    """The PlatformCluster subclass for `cloud`, imported on first use."""
    return package(cloud).cluster_class()


__all__ = ["CLOUDS", "PACKAGES", "PROFILES", "CloudProfile", "cluster_class", "package", "profile"]
