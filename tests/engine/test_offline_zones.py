"""The offline engine answers zone look-ups with the region's real zone names, so reserved capacity pinned to a real
zone plans offline as it applies."""
from __future__ import annotations

import pulumi
import pytest

from gpu_platform.engine import plan_stack
from gpu_platform.engine.mocks import StrictMocks
from gpu_platform.engine.zones import zones

AWS_ZONES = "aws:index/getAvailabilityZones:getAvailabilityZones"
GCP_ZONES = "gcp:compute/getZones:getZones"
OCI_ADS = "oci:Identity/getAvailabilityDomains:getAvailabilityDomains"

RESERVED_IN_1D = {
    "gpu-platform:cluster": {"name": "ml-block", "region": "us-east-1", "aws": {
        "capacityBlocks": {"h100-block": {"reservationId": "cr-0123456789abcdef0", "availabilityZone": "us-east-1d"}}}},
    "gpu-platform:gpuPools": [
        {"name": "h100-train", "instanceType": "p5.48xlarge", "maxNodes": 2},
        {"name": "h100-block", "instanceType": "p5.48xlarge", "minNodes": 1, "maxNodes": 1, "capacityType": "reserved"},
    ],
    "gpu-platform:teams": [{"name": "lab", "quotas": {"h100-train": 16, "h100-block": 8}}],
}


def test_reserved_pool_in_a_real_zone_plans():
    plan = plan_stack("aws-prod", config_overrides=RESERVED_IN_1D)
    subnets = {r.name: r.inputs for r in plan.of_type("aws:ec2/subnet:Subnet")}
    private = {s["availabilityZone"]: name for name, s in subnets.items() if "-private-" in name}
    # The cluster's first three zones stay; the block's zone gets a subnet of its own (docs/updates.md).
    assert sorted(private) == ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"]
    group = next(r for r in plan.of_type("aws:eks/nodeGroup:NodeGroup") if r.inputs["nodeGroupName"] == "gpu-h100-block")
    assert [s.rsplit("-", 1)[0] for s in group.inputs["subnetIds"]] == [private["us-east-1d"]]
    assert group.inputs["capacityType"] == "CAPACITY_BLOCK"


def test_a_zone_the_region_does_not_have_is_still_refused():
    overrides = {**RESERVED_IN_1D, "gpu-platform:cluster": {**RESERVED_IN_1D["gpu-platform:cluster"], "aws": {
        "capacityBlocks": {"h100-block": {"reservationId": "cr-0123456789abcdef0", "availabilityZone": "us-east-1z"}}}}}
    with pytest.raises(Exception, match="us-east-1z not in this region; available: us-east-1a, us-east-1b"):
        plan_stack("aws-prod", config_overrides=overrides)


@pytest.mark.parametrize("cloud, region, expected", [
    ("aws", "us-east-1", ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f")),
    ("aws", "ap-northeast-1", ("ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d")),
    ("aws", "sa-east-1", ("sa-east-1a", "sa-east-1b", "sa-east-1c")),  # not in the table: generic pattern
    ("gcp", "us-central1", ("us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f")),
    ("gcp", "me-west1", ("me-west1-a", "me-west1-b", "me-west1-c")),
    ("oci", "us-ashburn-1", ("Offline:US-ASHBURN-AD-1", "Offline:US-ASHBURN-AD-2", "Offline:US-ASHBURN-AD-3")),
    ("oci", "ap-tokyo-1", ("Offline:AP-TOKYO-1-AD-1",)),
])
def test_zone_table_and_fallback(cloud, region, expected):
    assert zones(cloud, region) == expected


def _call(mocks, token, args=None, provider=""):
    return mocks.call(pulumi.runtime.MockCallArgs(token, args or {}, provider))


def test_invokes_answer_for_the_stack_region():
    mocks = StrictMocks({"gpu-platform:cluster": '{"name": "x", "region": "us-west-2"}'})
    assert _call(mocks, AWS_ZONES)["names"] == ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
    assert _call(StrictMocks({"gcp:region": "us-east1"}), GCP_ZONES)["names"] == ["us-east1-b", "us-east1-c",
                                                                                   "us-east1-d"]
    ads = _call(StrictMocks({"oci:region": "us-phoenix-1"}), OCI_ADS, {"compartmentId": "ocid1.compartment.oc1..c"})
    assert [ad["name"] for ad in ads["availabilityDomains"]] == [f"Offline:PHX-AD-{n}" for n in (1, 2, 3)]


def test_an_explicit_provider_region_wins():
    mocks = StrictMocks({"aws:region": "us-east-1"})
    mocks.inputs[("pulumi:providers:aws", "eu")] = {"region": "eu-west-1"}
    ref = "urn:pulumi:s::gpu-platform::pulumi:providers:aws::eu::0123"
    assert _call(mocks, AWS_ZONES, provider=ref)["names"] == ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
