"""gpuPools[].fabric: config, EKS EFA node groups (interfaces, placement group, security group, one subnet) and the
EFA device plugin release."""
from __future__ import annotations

import json

import pytest

from components.catalog.aws import INSTANCE_TYPES as AWS_TYPES
from components.clouds.profiles import PROFILES
from components.config import ConfigError
from gpu_platform.engine import plan_stack
from gpu_platform.engine.replacements import replace_paths, value_at

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
RELEASE = "kubernetes:helm.sh/v3:Release"
EFA_TYPES = {"p4d.24xlarge": 4, "p4de.24xlarge": 4, "p5.48xlarge": 32, "p5e.48xlarge": 32, "p5en.48xlarge": 16,
             "p6-b200.48xlarge": 8}


def pools(*items):
    return {"gpu-platform:gpuPools": list(items),
            "gpu-platform:teams": [{"name": "lab", "quotas": {items[0]["name"]: 8}}]}


def errors(overrides, stack="aws-prod"):
    with pytest.raises(ConfigError) as exc:
        plan_stack(stack, config_overrides=overrides)
    return {p.path: p.message for p in exc.value.problems}


def one(plan, type_, name):
    matches = [r for r in plan.resources if r.type == type_ and r.name == name]
    assert len(matches) == 1, f"{type_} {name}: {[r.name for r in plan.of_type(type_)]}"
    return matches[0]


@pytest.fixture(scope="module")
def prod():
    return plan_stack("aws-prod")


# --- catalog and config -------------------------------------------------------------------------------------------

def test_catalog_carries_efa_interface_counts_for_p_family_only():
    counts = {name: t.fabric_interfaces for name, t in AWS_TYPES.items() if t.fabric_interfaces}
    assert counts == EFA_TYPES


def test_eks_and_gke_offer_fabrics():
    assert {name: tuple(p.fabrics) for name, p in PROFILES.items() if p.fabrics} == {
        "aws": ("efa",), "gcp": ("gpudirect-tcpx", "gpudirect-tcpxo")}


@pytest.mark.parametrize("pool, expected", [
    ({"instanceType": "p5.48xlarge"}, "efa"),  # auto on a training pool of an EFA type
    ({"instanceType": "p5.48xlarge", "workload": "inference"}, "none"),
    ({"instanceType": "p5.48xlarge", "fabric": "none"}, "none"),
    ({"instanceType": "p5.48xlarge", "workload": "inference", "fabric": "efa"}, "efa"),
    ({"instanceType": "g6e.48xlarge"}, "none"),  # EFA type, but no interface count in the catalog
])
def test_fabric_resolution(pool, expected):
    plan = plan_stack("aws-prod", config_overrides=pools({"name": "p", "maxNodes": 2, **pool}))
    assert plan.config.gpu_pools[0].fabric == expected


def test_bad_fabric_values_name_path_and_allowed_values():
    problems = errors(pools({"name": "a", "instanceType": "p5.48xlarge", "maxNodes": 1, "fabric": "infiniband"},
                            {"name": "b", "instanceType": "g6.xlarge", "maxNodes": 1, "fabric": "efa"},
                            {"name": "c", "instanceType": "g6e.48xlarge", "maxNodes": 1, "fabric": "efa"}))
    assert "allowed: auto, none, efa" in problems["gpuPools[0].fabric"]
    assert "g6.xlarge has no efa" in problems["gpuPools[1].fabric"]
    assert "no efa interface count for g6e.48xlarge" in problems["gpuPools[2].fabric"]


def test_clouds_without_fabrics_allow_only_auto_and_none():
    problems = errors({"gpu-platform:gpuPools": [
        {"name": "h100-train", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 1, "fabric": "infiniband"}]},
        stack="azure-prod")
    assert "allowed: auto, none" in problems["gpuPools[0].fabric"]
    for stack in ("azure-prod", "oci-prod", "gcp-dev"):
        assert {p.fabric for p in plan_stack(stack).config.gpu_pools} == {"none"}, stack


# --- EKS node groups ----------------------------------------------------------------------------------------------

def test_efa_pool_launch_template_has_every_interface(prod):
    interfaces = one(prod, TEMPLATE, "ml-prod-h100-train-launch-template").inputs["networkInterfaces"]
    assert len(interfaces) == 32
    assert [i["networkCardIndex"] for i in interfaces] == list(range(32))
    assert [i["deviceIndex"] for i in interfaces] == [0] + [1] * 31
    assert {i["interfaceType"] for i in interfaces} == {"efa"}
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
    assert inputs["version"] == "v0.5.7" and inputs["namespace"] == "kube-system"
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
