"""The cloud registry: one package per cloud, found by its name, and lookups that name what they could not match."""
from __future__ import annotations

import pytest

from components import catalog, clouds
from components.clouds.base import PlatformCluster


@pytest.mark.parametrize("cloud", clouds.CLOUDS)
def test_each_package_states_its_own_cloud(cloud):
    package = clouds.package(cloud)
    assert package.__name__ == f"components.clouds.{cloud}"
    assert clouds.profile(cloud) is package.PROFILE and package.PROFILE.name == cloud
    cluster = clouds.cluster_class(cloud)
    assert issubclass(cluster, PlatformCluster) and cluster.__module__ == f"components.clouds.{cloud}.cluster"
    assert all(row.cloud == cloud for row in package.instance_types().values())


@pytest.mark.parametrize("lookup", [clouds.package, clouds.profile, clouds.cluster_class])
def test_an_unknown_cloud_is_named_with_the_allowed_ones(lookup):
    with pytest.raises(KeyError, match=r"unknown cloud 'ibm'; allowed: aws, azure, gcp, oci"):
        lookup("ibm")
    with pytest.raises(catalog.CatalogError, match=r"unknown cloud 'ibm'; allowed clouds: aws, azure, gcp, oci"):
        catalog.lookup("ibm", "gx3")
