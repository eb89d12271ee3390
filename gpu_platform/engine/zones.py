"""Real zone names per region, so an offline plan places subnets and pools where `pulumi up` would.

Stacks name real zones (an EC2 Capacity Block in `us-east-1d`, a GKE pool in `us-central1-f`); invented zone names
would make such a plan fail offline although it is right. The table covers the regions the example stacks and the
GPU clouds' usual GPU regions use; any other region gets the cloud's generic pattern (`FALLBACK`), which matches most
regions of that cloud but not all (check the cloud console when a plan for another region trips over a zone).
"""
from __future__ import annotations

# AWS: zone names are the region plus a letter; not every letter exists (ap-northeast-1 has no "b").
AWS_ZONES: dict[str, tuple[str, ...]] = {
    "us-east-1": tuple(f"us-east-1{z}" for z in "abcdef"),
    "us-east-2": tuple(f"us-east-2{z}" for z in "abc"),
    "us-west-2": tuple(f"us-west-2{z}" for z in "abcd"),
    "eu-west-1": tuple(f"eu-west-1{z}" for z in "abc"),
    "eu-central-1": tuple(f"eu-central-1{z}" for z in "abc"),
    "eu-north-1": tuple(f"eu-north-1{z}" for z in "abc"),
    "ap-northeast-1": tuple(f"ap-northeast-1{z}" for z in "acd"),
    "ap-southeast-2": tuple(f"ap-southeast-2{z}" for z in "abc"),
    # China (partition aws-cn) and GovCloud (aws-us-gov); cn-north-1 has no "c".
    "cn-north-1": tuple(f"cn-north-1{z}" for z in "abd"),
    "cn-northwest-1": tuple(f"cn-northwest-1{z}" for z in "abc"),
    "us-gov-west-1": tuple(f"us-gov-west-1{z}" for z in "abc"),
    "us-gov-east-1": tuple(f"us-gov-east-1{z}" for z in "abc"),
}
# GCP: region plus "-<letter>", letters differ per region (us-central1 has a, b, c, f; us-east1 has b, c, d).
GCP_ZONES: dict[str, tuple[str, ...]] = {
    "us-central1": tuple(f"us-central1-{z}" for z in "abcf"),
    "us-east1": tuple(f"us-east1-{z}" for z in "bcd"),
    "us-east4": tuple(f"us-east4-{z}" for z in "abc"),
    "us-west1": tuple(f"us-west1-{z}" for z in "abc"),
    "europe-west1": tuple(f"europe-west1-{z}" for z in "bcd"),
    "europe-west4": tuple(f"europe-west4-{z}" for z in "abc"),
    "asia-southeast1": tuple(f"asia-southeast1-{z}" for z in "abc"),
}
# OCI: availability domains are "<tenancy prefix>:<region key>-AD-<n>"; the prefix differs per tenancy, so offline it
# is "Offline". Only a few regions have three ADs; the others have one.
OCI_ADS: dict[str, tuple[str, ...]] = {
    "us-ashburn-1": tuple(f"Offline:US-ASHBURN-AD-{n}" for n in (1, 2, 3)),
    "us-phoenix-1": tuple(f"Offline:PHX-AD-{n}" for n in (1, 2, 3)),
    "us-chicago-1": tuple(f"Offline:US-CHICAGO-1-AD-{n}" for n in (1, 2, 3)),
    "eu-frankfurt-1": tuple(f"Offline:EU-FRANKFURT-1-AD-{n}" for n in (1, 2, 3)),
    "uk-london-1": tuple(f"Offline:UK-LONDON-1-AD-{n}" for n in (1, 2, 3)),
}
# Regions not in a table: AWS `<region>a/b/c`, GCP `<region>-a/b/c`, OCI one AD `Offline:<REGION>-AD-1`.
FALLBACK = {
    "aws": lambda region: tuple(f"{region}{z}" for z in "abc"),
    "gcp": lambda region: tuple(f"{region}-{z}" for z in "abc"),
    "oci": lambda region: (f"Offline:{region.upper()}-AD-1",),
}
_TABLES = {"aws": AWS_ZONES, "gcp": GCP_ZONES, "oci": OCI_ADS}


def zones(cloud: str, region: str) -> tuple[str, ...]:
    """The zone (OCI: availability domain) names of `region` on `cloud`: the table's, else the generic pattern."""
    return _TABLES[cloud].get(region) or FALLBACK[cloud](region)
