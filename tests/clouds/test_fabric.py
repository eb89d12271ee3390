"""gpuPools[].fabric: config, EKS EFA node groups (interfaces, placement group, security group, one subnet) and the
EFA device plugin release."""
from __future__ import annotations

import dataclasses
import json

import pytest

from components.clouds.aws.catalog import INSTANCE_TYPES as AWS_TYPES
from components.clouds import PROFILES
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import validate_stack
from gpu_platform.engine.replacements import replace_paths, value_at

from support.fabric import errors, one
from support.plans import shared_plan

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
RELEASE = "kubernetes:helm.sh/v3:Release"
# AWS "Specifications for Amazon EC2 accelerated computing instances", network specifications, "Network cards".
EFA_TYPES = {"p4d.24xlarge": 4, "p4de.24xlarge": 4, "p5.48xlarge": 32, "p5e.48xlarge": 32, "p5en.48xlarge": 16,
             "p6-b200.48xlarge": 8, "p6-b300.48xlarge": 16, "p3dn.24xlarge": 1,
             **{f"{family}.{size}": 1 for family in ("g5", "g6", "g6e")
                for size in ("8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")},
             **{f"g4dn.{size}": 1 for size in ("8xlarge", "12xlarge", "16xlarge")},
             "g6e.24xlarge": 2, "g6e.48xlarge": 4}


def pools(*items):
    return {"gpu-platform:gpuPools": list(items),
            "gpu-platform:teams": [{"name": "lab", "quotas": {items[0]["name"]: 8}}]}


@pytest.fixture(scope="module")
def prod():
    return shared_plan("aws-prod")


# --- catalog and config -------------------------------------------------------------------------------------------

def test_catalog_carries_an_efa_interface_count_for_every_efa_type():
    counts = {name: t.fabric_interfaces for name, t in AWS_TYPES.items() if t.fabric_interfaces}
    assert counts == EFA_TYPES
    assert {name for name, t in AWS_TYPES.items() if t.interconnect == "efa"} == set(EFA_TYPES)
    assert {name for name, t in AWS_TYPES.items() if t.fabric_on_auto and t.fabric_interfaces} == {
        name for name in EFA_TYPES if name.startswith("p")}


def test_fabrics_per_cloud():
    assert {name: tuple(p.fabrics) for name, p in PROFILES.items() if p.fabrics} == {
        "aws": ("efa",), "azure": ("infiniband",), "gcp": ("gpudirect-tcpx", "gpudirect-tcpxo"), "oci": ("rdma",)}


@pytest.mark.parametrize("pool, expected", [
    ({"instanceType": "p5.48xlarge"}, "efa"),  # auto on a training pool of an EFA type
    ({"instanceType": "p5.48xlarge", "workload": "inference"}, "none"),
    ({"instanceType": "p5.48xlarge", "fabric": "none"}, "none"),
    ({"instanceType": "p5.48xlarge", "workload": "inference", "fabric": "efa"}, "efa"),
    ({"instanceType": "g6e.48xlarge"}, "none"),  # EFA on request only: auto would replace existing g pools
    ({"instanceType": "g6e.48xlarge", "fabric": "efa"}, "efa"),
])
def test_fabric_resolution(pool, expected):
    plan = plan_stack("aws-prod", config_overrides=pools({"name": "p", "maxNodes": 2, **pool}))
    assert plan.config.gpu_pools[0].fabric == expected


def test_bad_fabric_values_name_path_and_allowed_values(monkeypatch):
    # A catalogued EFA type whose interface count is unknown: its launch template could not list the interfaces.
    monkeypatch.setitem(AWS_TYPES, "p5e.48xlarge", dataclasses.replace(AWS_TYPES["p5e.48xlarge"], fabric_interfaces=0))
    problems = errors(pools({"name": "a", "instanceType": "p5.48xlarge", "maxNodes": 1, "fabric": "infiniband"},
                            {"name": "b", "instanceType": "g6.xlarge", "maxNodes": 1, "fabric": "efa"},
                            {"name": "c", "instanceType": "p5e.48xlarge", "maxNodes": 1, "fabric": "efa"}))
    assert "allowed: auto, none, efa" in problems["gpuPools[0].fabric"]
    assert "g6.xlarge has no efa" in problems["gpuPools[1].fabric"]
    assert "no efa interface count for p5e.48xlarge" in problems["gpuPools[2].fabric"]


def test_g6e_gets_efa_on_request_with_its_four_interfaces():
    plan = plan_stack("aws-prod", config_overrides=pools(
        {"name": "l40s", "instanceType": "g6e.48xlarge", "maxNodes": 2, "fabric": "efa"}))
    interfaces = one(plan, TEMPLATE, "ml-prod-l40s-launch-template").inputs["networkInterfaces"]
    assert [(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in interfaces] == [
        (0, 0, "efa"), (1, 0, "efa-only"), (2, 0, "efa-only"), (3, 0, "efa-only")]


def test_a_fabric_another_cloud_offers_is_refused_with_this_clouds_values():
    problems = errors({"gpu-platform:gpuPools": [
        {"name": "h100-train", "instanceType": "BM.GPU.H100.8", "minNodes": 1, "maxNodes": 1, "fabric": "efa"}]},
        stack="oci-prod")
    assert problems["gpuPools[0].fabric"].endswith("allowed: auto, none, rdma")
    problems = errors({"gpu-platform:gpuPools": [
        {"name": "h100-train", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 1, "fabric": "rdma"}]},
        stack="azure-prod")
    assert problems["gpuPools[0].fabric"].endswith("allowed: auto, none, infiniband")


def test_example_stacks_fabrics():
    expected = {"aws-dev": {"none"}, "aws-prod": {"efa", "none"}, "azure-prod": {"infiniband", "none"},
                "gcp-dev": {"none"}, "gcp-prod": {"gpudirect-tcpx", "none"}, "oci-prod": {"none"}}
    # Fabrics are resolved while the stack config is validated: no plan needed.
    assert {stack: {p.fabric for p in validate_stack(stack)[3].gpu_pools} for stack in expected} == expected


# --- EKS node groups ----------------------------------------------------------------------------------------------

def test_efa_pool_launch_template_has_every_interface(prod):
    interfaces = one(prod, TEMPLATE, "ml-prod-h100-train-launch-template").inputs["networkInterfaces"]
    assert len(interfaces) == 32
    assert [i["networkCardIndex"] for i in interfaces] == list(range(32))
    # One interface carries ENA (the primary: IP traffic, one subnet address); the other 31 cards are EFA-only.
    assert [i["deviceIndex"] for i in interfaces] == [0] * 32
    assert [i["interfaceType"] for i in interfaces] == ["efa"] + ["efa-only"] * 31
    assert all("subnetId" not in i for i in interfaces)  # EKS places them in the node group's subnet
    # The cluster's security group (EKS leaves it off when interfaces are given) and the EFA one (mock id name-<hash>).
    groups = {tuple(i["securityGroups"]) for i in interfaces}
    assert len(groups) == 1
    cluster_sg, efa_sg = groups.pop()
    assert cluster_sg == "sg-offline-ml-prod-eks" and efa_sg.startswith("ml-prod-h100-train-efa-")


def test_efa_pool_placement_group_security_group_and_single_subnet(prod):
    placement = one(prod, "aws:ec2/placementGroup:PlacementGroup", "ml-prod-h100-train-placement")
    assert placement.inputs == {"strategy": "cluster"}
    template = one(prod, TEMPLATE, "ml-prod-h100-train-launch-template")
    # The group's name is computed by AWS (unknown in a preview); the template follows it.
    assert set(template.inputs["placement"]) == {"groupName"} and template.inputs["placement"]["groupName"]
    group = one(prod, "aws:ec2/securityGroup:SecurityGroup", "ml-prod-h100-train-efa")
    everything = {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}
    assert group.inputs["ingress"] == [everything] and group.inputs["egress"] == [everything]
    assert group.inputs["vpcId"] == "vpc-offline-ml-prod-eks"
    node_group = one(prod, NODE_GROUP, "ml-prod-h100-train-nodegroup")
    assert node_group.inputs["subnetIds"] == ["ml-prod-private-0-dfd7ff8f"]
    assert node_group.inputs["labels"]["gpu-platform.io/fabric"] == "efa"


def test_non_efa_pools_have_no_fabric(prod):
    for pool in ("a100-infer", "l4-notebooks"):
        template = one(prod, TEMPLATE, f"ml-prod-{pool}-launch-template").inputs
        assert "networkInterfaces" not in template and "placement" not in template
        node_group = one(prod, NODE_GROUP, f"ml-prod-{pool}-nodegroup").inputs
        assert len(node_group["subnetIds"]) == 3 and "gpu-platform.io/fabric" not in node_group["labels"]
    assert len(prod.of_type("aws:ec2/placementGroup:PlacementGroup")) == 1


def test_fabric_none_leaves_pools_exactly_as_before(prod):
    """Replace-triggering inputs (engine/replacements.py) of every node group: EFA changes only the pool it is on."""
    off = plan_stack("aws-prod", config_overrides={"gpu-platform:gpuPools": [
        {**p, "fabric": "none"} for p in _raw_pools()]})
    def keys(plan):
        return {r.name: {path: json.dumps(value_at(r.inputs, path)) for path in replace_paths(NODE_GROUP)}
                for r in plan.of_type(NODE_GROUP)}
    before, after = keys(off), keys(prod)
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"ml-prod-h100-train-nodegroup"}
    assert [p for p in replace_paths(NODE_GROUP) if before["ml-prod-h100-train-nodegroup"][p]
            != after["ml-prod-h100-train-nodegroup"][p]] == ["subnetIds"]
    assert not off.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert not [r for r in off.of_type(RELEASE) if r.inputs["chart"] == "aws-efa-k8s-device-plugin"]


def _raw_pools():
    from gpu_platform.engine.plan import PROJECT_ROOT, read_stack_config
    return read_stack_config(PROJECT_ROOT / "stacks" / "Pulumi.aws-prod.yaml")["gpu-platform:gpuPools"]


def test_reserved_efa_pool_keeps_its_block_zone_without_placement_group():
    plan = plan_stack("aws-prod", config_overrides={
        "gpu-platform:cluster": {"name": "ml-block", "region": "us-east-1", "aws": {"capacityBlocks": {
            "h100-block": {"reservationId": "cr-0fedcba9876543210", "availabilityZone": "us-east-1b"}}}},
        **pools({"name": "h100-block", "instanceType": "p5e.48xlarge", "minNodes": 1, "maxNodes": 2,
                 "capacityType": "reserved"})})
    template = one(plan, TEMPLATE, "ml-block-h100-block-launch-template").inputs
    assert len(template["networkInterfaces"]) == 32 and "placement" not in template
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert not plan.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert len(one(plan, NODE_GROUP, "ml-block-h100-block-nodegroup").inputs["subnetIds"]) == 1


# --- device plugin ------------------------------------------------------------------------------------------------

def test_efa_device_plugin_release_targets_efa_pools_through_their_taints():
    plan = plan_stack("aws-prod", config_overrides=pools(
        {"name": "h100", "instanceType": "p5.48xlarge", "maxNodes": 2, "capacityType": "spot",
         "taints": ["example.com/team=lab:NoExecute"]},
        {"name": "a100", "instanceType": "p4d.24xlarge", "maxNodes": 2},
        {"name": "l4", "instanceType": "g6.xlarge", "maxNodes": 2, "taints": ["example.com/other=x:NoSchedule"]}))
    releases = [r for r in plan.of_type(RELEASE) if r.inputs["chart"] == "aws-efa-k8s-device-plugin"]
    assert len(releases) == 1
    inputs = releases[0].inputs
    assert inputs["version"] == "v0.5.30" and inputs["namespace"] == "kube-system"
    assert inputs["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}
    assert inputs["values"]["nodeSelector"] == {"gpu-platform.io/fabric": "efa"}
    tolerated = {(t["key"], t["effect"]) for t in inputs["values"]["tolerations"]}
    assert tolerated == {("nvidia.com/gpu", "NoSchedule"), ("gpu-platform.io/spot", "NoSchedule"),
                         ("example.com/team", "NoExecute")}
    assert all(t["operator"] == "Exists" for t in inputs["values"]["tolerations"])
    groups = {r.inputs["nodeGroupName"]: r.inputs for r in plan.of_type(NODE_GROUP)}
    assert len(one(plan, TEMPLATE, "ml-prod-a100-launch-template").inputs["networkInterfaces"]) == 4
    assert {g for g, i in groups.items() if i["labels"].get("gpu-platform.io/fabric") == "efa"} == {"gpu-h100",
                                                                                                    "gpu-a100"}
