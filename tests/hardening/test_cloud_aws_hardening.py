"""EKS hardening on the plan: AWS tag keys EC2's metadata-tag rule accepts, IMDSv2 with one hop on every node, room
for CUDA images on every GPU pool (Capacity Blocks too), and team principals mapped to their groups by access entries."""
from __future__ import annotations

import json
import re

import pytest

from components.clouds.aws.network import INTERNAL_ELB_TAG, PUBLIC_ELB_TAG
from components.clouds.aws.nodes import NODE_TEMPLATE
from components.config import ConfigError, validate
from gpu_platform.engine import plan_stack

from support.clouds import EXISTING, MIXED
from support.paths import STACKS
from support.plans import shared_plan

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
# EC2's rule for instance tag keys once instance tags are in the metadata service; EKS applies it to node groups too.
TAG_KEY = re.compile(r"[0-9a-zA-Z\-_+=,.@:]{1,255}")
# The only `/` keys allowed, each on a resource that is never an instance: what the consumer reads is fixed.
SLASH_KEYS_ALLOWED = {
    "aws:ec2/subnet:Subnet": lambda key, _: key in (INTERNAL_ELB_TAG, PUBLIC_ELB_TAG),  # load balancer subnet discovery
    "aws:autoscaling/tag:Tag": lambda key, tag: key.startswith(NODE_TEMPLATE) and tag["propagateAtLaunch"] is False,
}
IMDS = {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1,
        "instanceMetadataTags": "disabled"}

RESEARCH_ROLE = "arn:aws:iam::123456789012:role/research-admins"
SHARED_ROLE = "arn:aws:iam::123456789012:role/platform/ml-oncall"
TEAMS = [
    {"name": "research", "quotas": {"h100-train": 16}, "groups": ["research-admins", "research-users"],
     "principals": [RESEARCH_ROLE, SHARED_ROLE]},
    {"name": "applied", "quotas": {"h100-train": 8, "a100-infer": 56}, "groups": ["applied-ml"],
     "principals": [SHARED_ROLE, "arn:aws:iam::123456789012:user/ci"]},
    {"name": "serving", "quotas": {"a100-infer": 56}, "priority": "critical", "groups": ["serving-oncall"]},
]


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    path = tmp_path_factory.mktemp("stacks") / "Pulumi.aws-lab.yaml"
    path.write_text(EXISTING)
    found = {stack: shared_plan(stack) for stack in STACKS if stack.startswith("aws-")}
    found["aws-lab"] = plan_stack(file=path)
    found["aws-mixed"] = shared_plan("aws-prod", MIXED)
    found["aws-teams"] = shared_plan("aws-prod", {"gpu-platform:teams": TEAMS})
    return found


def tag_keys(resource):
    """(key, tag) for every AWS tag anywhere in a resource's inputs: `tags` maps, tag specifications, ASG tags."""
    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "tags" and isinstance(value, dict):  # also the provider's defaultTags.tags
                    yield from ((k, value) for k in value if not isinstance(value[k], (dict, list)))
                if key == "tag" and isinstance(value, dict) and "key" in value:
                    yield value["key"], value
                yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
    return list(walk(resource.inputs))


def gpu_groups(plan):
    return {r.name: r for r in plan.of_type(NODE_GROUP) if r.inputs["nodeGroupName"] != "system"}


def template_of(plan, group):
    """The launch template a node group references (offline ids are `<resource name>-<hash>`)."""
    ref = group.inputs["launchTemplate"]
    template, = [t for t in plan.of_type(LAUNCH_TEMPLATE) if ref["id"].rsplit("-", 1)[0] == t.name]
    assert ref["version"] == "1"
    return template


# --- tag keys ------------------------------------------------------------------------------------------------

def test_every_aws_tag_key_fits_the_instance_metadata_rule(plans):
    checked = 0
    for stack, plan in plans.items():
        for resource in plan.resources:
            if not resource.type.startswith("aws:"):
                continue
            for key, tag in tag_keys(resource):
                checked += 1
                allowed = SLASH_KEYS_ALLOWED.get(resource.type, lambda *_: False)
                assert TAG_KEY.fullmatch(key) or allowed(key, tag), f"{stack}: {resource.type} {resource.name}: {key!r}"
    assert checked > 200  # node groups, subnets, VPC pieces and scale-from-zero ASG tags were all scanned


def test_pool_facts_are_tags_without_slash_and_labels_with_it(plans):
    groups = gpu_groups(plans["aws-prod"])
    h100 = groups["ml-prod-h100-train-nodegroup"]
    assert h100.inputs["tags"] == {"gpu-platform.io:pool": "h100-train", "gpu-platform.io:interconnect": "efa"}
    assert h100.inputs["labels"]["gpu-platform.io/pool"] == "h100-train"
    assert gpu_groups(plans["aws-dev"])["ml-dev-l4-dev-nodegroup"].inputs["tags"] == {"gpu-platform.io:pool": "l4-dev"}


def test_slash_keys_only_where_allowed_and_never_on_instances(plans):
    """The `/` exemptions above are what EKS and the autoscaler need, and none of them reaches an instance."""
    for plan in plans.values():
        for resource in plan.resources:
            if resource.type.startswith("aws:"):
                slashed = [key for key, _ in tag_keys(resource) if "/" in key]
                assert not slashed or resource.type in SLASH_KEYS_ALLOWED, (resource.name, slashed)
        for tag in plan.of_type("aws:autoscaling/tag:Tag"):
            assert tag.inputs["tag"]["propagateAtLaunch"] is False
        for template in plan.of_type(LAUNCH_TEMPLATE):
            assert "tagSpecifications" not in template.inputs


# --- instance metadata ---------------------------------------------------------------------------------------

def test_every_node_group_requires_imdsv2_with_one_hop(plans):
    for stack, plan in plans.items():
        groups = plan.of_type(NODE_GROUP)
        assert any(g.inputs["nodeGroupName"] == "system" for g in groups)
        for group in groups:
            assert template_of(plan, group).inputs["metadataOptions"] == IMDS, f"{stack}: {group.name}"
        assert len(plan.of_type(LAUNCH_TEMPLATE)) == len(groups)  # one template per group, none left over


def test_system_template_keeps_eks_defaults_otherwise(plans):
    plan = plans["aws-prod"]
    system, = [g for g in plan.of_type(NODE_GROUP) if g.inputs["nodeGroupName"] == "system"]
    template = template_of(plan, system)
    assert set(template.inputs) == {"metadataOptions"}
    assert system.inputs["instanceTypes"] == ["m6i.2xlarge"]


# --- GPU disks -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stack, device", [("aws-prod", "/dev/xvda"), ("aws-dev", "/dev/xvda"),
                                           ("aws-mixed", "/dev/xvda"), ("aws-lab", "/dev/xvdb")])
def test_every_gpu_pool_gets_a_200_gib_image_volume(plans, stack, device):
    plan = plans[stack]
    for name, group in gpu_groups(plan).items():
        disk, = template_of(plan, group).inputs["blockDeviceMappings"]
        assert disk == {"deviceName": device, "ebs": {"volumeSize": 200, "volumeType": "gp3", "encrypted": "true",
                                                      "deleteOnTermination": "true"}}, name
        assert "diskSize" not in group.inputs  # EKS refuses diskSize next to a launch template


def test_capacity_block_pools_get_the_same_disk_as_on_demand_pools(plans):
    for stack, block, on_demand in (("aws-mixed", "ml-mixed-h100-block", "ml-mixed-h100-slices"),
                                    ("aws-lab", "ml-lab-h100-block", "ml-lab-l40s")):
        plan = plans[stack]
        groups = gpu_groups(plan)
        reserved = template_of(plan, groups[f"{block}-nodegroup"])
        other = template_of(plan, groups[f"{on_demand}-nodegroup"])
        assert groups[f"{block}-nodegroup"].inputs["capacityType"] == "CAPACITY_BLOCK"
        assert reserved.inputs["blockDeviceMappings"] == other.inputs["blockDeviceMappings"]
        assert reserved.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
        # Only a Capacity Block template names the instance type; other groups name it themselves.
        assert "instanceType" not in other.inputs
        assert len(groups[f"{on_demand}-nodegroup"].inputs["instanceTypes"]) == 1
        assert reserved.inputs["instanceType"] == "p5.48xlarge"
        assert "instanceTypes" not in groups[f"{block}-nodegroup"].inputs


# --- team access ---------------------------------------------------------------------------------------------

def test_team_principals_get_access_entries_with_only_their_groups(plans):
    plan = plans["aws-teams"]
    entries = {r.inputs["principalArn"]: r for r in plan.of_type(ACCESS_ENTRY)}
    assert {arn: e.inputs["kubernetesGroups"] for arn, e in entries.items()} == {
        RESEARCH_ROLE: ["research-admins", "research-users"],
        SHARED_ROLE: ["research-admins", "research-users", "applied-ml"],  # one entry per principal: the union
        "arn:aws:iam::123456789012:user/ci": ["applied-ml"],
    }
    for entry in entries.values():
        assert entry.inputs["clusterName"] == "ml-prod" and entry.inputs["type"] == "STANDARD"
        assert entry.options["protect"] is True
    assert sorted(e.name for e in entries.values()) == [
        "ml-prod-access-123456789012-role-platform-ml-oncall", "ml-prod-access-123456789012-role-research-admins",
        "ml-prod-access-123456789012-user-ci"]
    # Least privilege: no EKS access policy (cluster admin or otherwise) is associated with a team principal.
    assert not plan.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    # The groups the entries name are the ones the teams' RoleBindings grant `edit` in their namespaces.
    bindings = {r.inputs["metadata"]["namespace"]: [s["name"] for s in r.inputs["subjects"]]
                for r in plan.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
                if r.inputs["metadata"]["name"] == "team-edit"}
    assert bindings["research"] == ["research-admins", "research-users"] and bindings["applied"] == ["applied-ml"]


def test_cluster_authentication_mode_accepts_access_entries(plans):
    for plan in plans.values():
        cluster, = plan.of_type("aws:eks/cluster:Cluster")
        assert cluster.inputs["accessConfig"]["authenticationMode"] in ("API", "API_AND_CONFIG_MAP")


def test_no_principals_no_access_entries(plans):
    assert not plans["aws-prod"].of_type(ACCESS_ENTRY)


def problems(raw):
    with pytest.raises(ConfigError) as info:
        validate(raw)
    return {p.path: p.message for p in info.value.problems}


@pytest.mark.parametrize("principals, fragment", [
    (["research-admins"], "must list IAM role or user ARNs (arn:aws:iam::<12-digit account>:role/<name>, "
                          "arn:aws:iam::<account>:user/<name> (partitions aws, aws-cn, aws-us-gov)); "
                          "not: 'research-admins'"),
    (["arn:aws:iam::1234:role/x"], "not: 'arn:aws:iam::1234:role/x'"),
    (["arn:aws:iam::123456789012:group/admins"], "not: 'arn:aws:iam::123456789012:group/admins'"),
    (["arn:aws:sts::123456789012:assumed-role/research/alice"], "give the role's own ARN"),
    ("arn:aws:iam::123456789012:role/x", "must be a list of strings"),
])
def test_bad_principals(raw, principals, fragment):
    raw["teams"][0].update(groups=["research-admins"], principals=principals)
    found = problems(raw)
    assert list(found) == ["teams[0].principals"]
    assert fragment in found["teams[0].principals"]


def test_principals_need_groups(raw):
    raw["teams"][0]["principals"] = [RESEARCH_ROLE]
    assert problems(raw) == {"teams[0].groups": "is required with principals: IAM role or user ARNs whose sessions "
                                                "join the team's groups (EKS access entries), and the team's "
                                                "RoleBinding grants those groups"}


def test_principals_are_refused_where_the_cloud_maps_groups_itself(raw):
    raw.update(cloud="azure", gpuPools=[{"name": "h100", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2}],
               teams=[{"name": "vision", "quotas": {"h100": 8}, "groups": ["00000000-0000-0000-0000-0000000000a1"],
                       "principals": [RESEARCH_ROLE]}])
    raw["cluster"]["region"] = "eastus2"
    assert problems(raw) == {"teams[0].principals": "AKS puts its own identities in Kubernetes groups: list them in "
                                                    "teams[].groups; principals is for EKS, which maps IAM principals "
                                                    "through access entries"}


def test_valid_principals_are_kept_once(raw):
    other = "arn:aws-us-gov:iam::123456789012:user/path/ci+bot@example.com"
    raw["teams"][0].update(groups=["g"], principals=[RESEARCH_ROLE, other, RESEARCH_ROLE])
    assert validate(raw).teams[0].principals == (RESEARCH_ROLE, other)


def test_node_groups_replace_delete_first_and_capacity_block_templates_keep_their_resource(monkeypatch):
    """Options the plan does not record, read off the registrations: fixed node group names cannot exist twice, and
    Capacity Block templates keep the resource they had before every pool got a template."""
    from gpu_platform.engine.monitor import RecordingMonitor

    requests = {}
    register = RecordingMonitor.RegisterResource

    def record(self, request):
        requests[request.name] = request
        return register(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", record)
    plan = plan_stack("aws-prod", config_overrides=MIXED)
    for group in plan.of_type(NODE_GROUP):
        assert requests[group.name].deleteBeforeReplace, group.name
    aliases = {name: [a.spec.name for a in requests[name].aliases] for name in requests
               if name.endswith("-launch-template")}
    assert aliases.pop("ml-mixed-h100-block-launch-template") == ["ml-mixed-h100-block-capacity-block"]
    assert all(not names for names in aliases.values()) and len(aliases) == 3


def test_adopted_cluster_takes_no_principals(raw):
    raw["cluster"]["existingKubeconfig"] = "apiVersion: v1"
    raw["teams"][0].update(groups=["g"], principals=[RESEARCH_ROLE])
    assert problems(raw) == {"teams[0].principals": "is applied to a cluster this stack creates; with "
                                                    "cluster.existingKubeconfig map the principals where that cluster "
                                                    "is managed"}


def test_vpc_cni_enforces_network_policies():
    # Without the VPC CNI's network policy agent the teams' default-deny NetworkPolicies isolate nothing on EKS.
    for stack in ("aws-prod", "aws-dev"):
        (addon,) = plan_stack(stack).of_type("aws:eks/addon:Addon")
        assert addon.inputs["addonName"] == "vpc-cni"
        assert json.loads(addon.inputs["configurationValues"]) == {"enableNetworkPolicy": "true"}
        assert addon.inputs["resolveConflictsOnCreate"] == "OVERWRITE"
