"""Real zone names per region, so an offline plan places subnets and pools where `pulumi up` would.

Stacks name real zones (an EC2 Capacity Block in `us-east-1d`, a GKE pool in `us-central1-f`); invented zone names
would make such a plan fail offline although it is right. Each cloud's table (components/clouds/<cloud>/offline.py)
covers the regions the example stacks and the cloud's usual GPU regions use; any other region gets the cloud's
generic pattern, which matches most regions of that cloud but not all (check the cloud console when a plan for
another region trips over a zone).
"""
from __future__ import annotations

from components.clouds import package


def zones(cloud: str, region: str) -> tuple[str, ...]:
    """The zone (OCI: availability domain) names of `region` on `cloud`: the table's, else the generic pattern."""
    return package(cloud).OFFLINE.zones_of(region)
