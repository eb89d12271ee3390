"""Safe updates: what a change to a stack replaces is stable, named, possible, and protected only where it should be.

Each test plans a stack before and after one change and diffs the replace-triggering inputs (plan --diff's engine).
"""
from __future__ import annotations

import copy

import pytest

from components.config import ConfigError
from gpu_platform.engine import mocks
from gpu_platform.engine.diff import diff_plans
from gpu_platform.engine.plan import plan_stack, read_stack_config, run_program, stack_path, validate_stack
from gpu_platform.engine.replacements import REPLACE_ON_CHANGES, replacing_changes

from support.fabric import rdma_overrides

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
SUBNET = "aws:ec2/subnet:Subnet"
US_EAST_1 = [f"us-east-1{z}" for z in "abcdef"]  # a region with more than three AZs


@pytest.fixture
def six_zones(monkeypatch):
    """The offline AZ invoke answers with us-east-1's six zones (only for this test)."""
    monkeypatch.setitem(mocks._INVOKES, "aws:index/getAvailabilityZones:getAvailabilityZones",
                        lambda _: {"names": US_EAST_1, "zoneIds": [f"use1-az{i}" for i in range(1, 7)], "id": "z"})


def stack_config(stack: str) -> dict:
    return read_stack_config(stack_path(stack, None)[1])


def plan_with(stack: str, change=None):
    """Plan `stack` after `change(config)` edits a copy of its raw config (full `gpu-platform:<key>` keys)."""
    config = copy.deepcopy(stack_config(stack))
    if change:
        change(config)
    return plan_stack(stack, config_overrides=config)


def add_reserved_pool(zone: str):
    def change(config):
        config["gpu-platform:gpuPools"].append({"name": "h100-block", "instanceType": "p5.48xlarge", "maxNodes": 2,
                                                "capacityType": "reserved", "workload": "training"})
        config["gpu-platform:cluster"]["aws"]["capacityBlocks"] = {
            "h100-block": {"reservationId": "cr-0123456789abcdef0", "availabilityZone": zone}}
    return change


def by_name(plan, type_):
    return {r.name: r for r in plan.of_type(type_)}


# --- 1. zones chosen once and kept ------------------------------------------------------------------------------

def test_adding_a_reserved_pool_in_a_fourth_zone_moves_no_subnet_and_replaces_no_node_group(six_zones):
    before = plan_with("aws-prod")
    after = plan_with("aws-prod", add_reserved_pool("us-east-1d"))
    diff = diff_plans(before, after)
    assert diff.of("replace") == [] and diff.of("delete") == []
    # Only the autoscaler (its priority-expander tier) and the GPU-pool admission policy (which holds team pods off
    # every GPU pool not theirs) learn of the new pool.
    assert [c.resource.name for c in diff.of("change")] == ["cluster-autoscaler-release", "gpu-pools-policy"]
    subnets = by_name(after, SUBNET)
    assert {n: s.inputs["availabilityZone"] for n, s in subnets.items() if "private" in n} == {
        "ml-prod-private-0": "us-east-1a", "ml-prod-private-1": "us-east-1b", "ml-prod-private-2": "us-east-1c",
        "ml-prod-private-3": "us-east-1d"}
    # The fourth slot's CIDRs stay clear of every other subnet of the VPC (10.40.0.0/16).
    assert subnets["ml-prod-private-3"].inputs["cidrBlock"] == "10.40.224.0/19"
    assert subnets["ml-prod-public-3"].inputs["cidrBlock"] == "10.40.216.0/21"
    groups = by_name(after, NODE_GROUP)
    assert groups["ml-prod-h100-block-nodegroup"].inputs["subnetIds"] == [mocks.fake_id(SUBNET, "ml-prod-private-3")]
    # The cluster and every other pool stay on the three general subnets (the EFA pool on the first alone).
    general = [mocks.fake_id(SUBNET, f"ml-prod-private-{i}") for i in range(3)]
    assert groups["ml-prod-a100-infer-nodegroup"].inputs["subnetIds"] == general
    assert groups["ml-prod-h100-train-nodegroup"].inputs["subnetIds"] == general[:1]
    assert by_name(after, "aws:eks/cluster:Cluster")["ml-prod-eks"].inputs["vpcConfig"]["subnetIds"] == general


def test_a_reserved_pool_in_one_of_the_clusters_zones_uses_that_zones_subnet(six_zones):
    after = plan_with("aws-prod", add_reserved_pool("us-east-1b"))
    assert "ml-prod-private-3" not in by_name(after, SUBNET)
    assert by_name(after, NODE_GROUP)["ml-prod-h100-block-nodegroup"].inputs["subnetIds"] == [
        mocks.fake_id(SUBNET, "ml-prod-private-1")]


def test_moving_a_subnet_is_named_as_replacing_every_node_group_on_it(six_zones):
    """What used to happen when pools chose zones: the diff follows the new subnet id into every node group."""
    def pin(zones):
        return lambda config: config["gpu-platform:cluster"]["aws"].__setitem__("zones", zones)
    before = plan_with("aws-prod", pin(["us-east-1a", "us-east-1b", "us-east-1c"]))
    after = plan_with("aws-prod", pin(["us-east-1a", "us-east-1b", "us-east-1d"]))
    replaced = {c.resource.name: c for c in diff_plans(before, after).of("replace")}
    assert replaced["ml-prod-private-2"].paths == ["availabilityZone"]
    for group in ("ml-prod-system", "ml-prod-a100-infer-nodegroup"):
        assert replaced[group].paths == ["subnetIds"] and replaced[group].because_of == "ml-prod-private-2"
    # The EFA pool lives in the first subnet only, which stays.
    assert "ml-prod-h100-train-nodegroup" not in replaced
    warnings = diff_plans(before, after).warnings()
    assert any(w.startswith("replaces pool a100-infer: aws:eks/nodeGroup:NodeGroup") for w in warnings)


def test_pinned_zones_are_validated():
    config = copy.deepcopy(stack_config("aws-prod"))
    config["gpu-platform:cluster"]["aws"]["zones"] = ["us-east-1a", "us-east-1a"]
    with pytest.raises(ConfigError) as err:
        validate_stack("aws-prod", config_overrides=config)
    assert "cluster.aws.zones" in err.value.render() and "distinct" in err.value.render()


# --- 2. replacements are named before they happen, and possible at all ---------------------------------------

def pool_edit(name: str, **fields):
    def change(config):
        pool = next(p for p in config["gpu-platform:gpuPools"] if p["name"] == name)
        pool.update(fields)
    return change


@pytest.mark.parametrize("stack, pool, fields, resource, paths", [
    ("aws-prod", "h100-train", {"instanceType": "p5e.48xlarge"}, "ml-prod-h100-train-nodegroup", ["instanceTypes"]),
    ("aws-prod", "l4-notebooks", {"capacityType": "on-demand"}, "ml-prod-l4-notebooks-nodegroup", ["capacityType"]),
    ("gcp-prod", "l4-spot", {"instanceType": "g2-standard-48"}, "ml-prod-gke-l4-spot-nodepool",
     ["nodeConfig.guestAccelerators"]),
    ("azure-prod", "h100-train", {"instanceType": "Standard_ND96isr_H200_v5"}, "ml-prod-aks-h100-train-agentpool",
     ["vmSize"]),
])
def test_a_pool_replacing_change_is_named(stack, pool, fields, resource, paths):
    before = plan_with(stack)
    diff = diff_plans(before, plan_with(stack, pool_edit(pool, **fields)))
    replaced = {c.resource.name: c for c in diff.of("replace")}
    assert replaced[resource].paths == paths and replaced[resource].pool == pool
    assert any(w.startswith(f"replaces pool {pool}: ") for w in diff.warnings())
    assert diff.destructive


def test_bounds_and_labels_change_a_pool_in_place():
    before = plan_with("aws-prod")
    after = plan_with("aws-prod", pool_edit("h100-train", maxNodes=6, labels={"team-tier": "gold"}))
    diff = diff_plans(before, after)
    assert diff.of("replace") == [] and not diff.warnings()
    changed = {c.resource.name: c.paths for c in diff.of("change")}
    assert changed["ml-prod-h100-train-nodegroup"] == ["labels.team-tier", "scalingConfig.maxSize"]


def test_oci_shape_changes_update_in_place_and_gcp_machine_type_too():
    # OKE applies a new shape to nodes created afterwards; GKE resizes machines in place (provider schemas).
    assert replacing_changes("oci:ContainerEngine/nodePool:NodePool", {"nodeShape": "BM.GPU.A100-v2.8"},
                             {"nodeShape": "BM.GPU.H100.8"}) == []
    assert replacing_changes("gcp:container/nodePool:NodePool", {"nodeConfig": {"machineType": "g2-standard-16"}},
                             {"nodeConfig": {"machineType": "g2-standard-32"}}) == []
    assert replacing_changes("gcp:container/nodePool:NodePool", {"nodeConfig": {"spot": True}},
                             {"nodeConfig": {"spot": False}}) == ["nodeConfig.spot"]


def test_every_replace_path_names_an_input_the_program_sets_or_the_provider_reads():
    # Guards against a typo'd path that would never fire: each path's first segment is a wire input name of the
    # planned resources of that type, or an identity input the program leaves to the provider.
    provider_only = {"nodeGroupNamePrefix", "remoteAccess", "namePrefix", "availabilityZoneId", "launchTemplate", "diskSize",
                     "scaleSetEvictionPolicy", "spotMaxPrice", "scaleSetPriority", "gpuInstanceProfile",
                     "instanceId", "source", "gmcConfigs", "clusterConfiguration"}
    seen: dict[str, set[str]] = {}
    # oci-prod keeps its pools on node pools; an RDMA variant plans the cluster-network types.
    plans = [plan_with(stack) for stack in ("aws-prod", "gcp-prod", "azure-prod", "oci-prod")]
    plans.append(plan_stack("oci-prod", config_overrides=rdma_overrides()))
    # A zoned AKS variant plans the agent pools' availabilityZones.
    aks = stack_config("azure-prod")["gpu-platform:cluster"]
    plans.append(plan_stack("azure-prod", config_overrides={
        "gpu-platform:cluster": {**aks, "azure": {**aks["azure"], "zones": ["1"]}}}))
    for plan in plans:
        for resource in plan.resources:
            seen.setdefault(resource.type, set()).update(resource.inputs)
    for type_, paths in REPLACE_ON_CHANGES.items():
        assert type_ in seen, type_
        for path in paths:
            head = path.split(".")[0]
            assert head in seen[type_] or head in provider_only, (type_, path)


def registrations(stack: str):
    name, _, config, _ = validate_stack(stack)
    return run_program(name, config)[0]


@pytest.mark.parametrize("stack, type_", [
    ("aws-prod", NODE_GROUP), ("gcp-prod", "gcp:container/nodePool:NodePool"),
    ("azure-prod", "azure-native:containerservice:AgentPool"),
])
def test_gpu_pools_with_cluster_unique_names_delete_before_replace(stack, type_):
    """EKS, GKE and AKS pool names are unique in a cluster: a replacement created first would fail on the name."""
    pools = [r for r in registrations(stack) if r.type == type_ and "system" not in r.name]
    assert pools and all(r.delete_before_replace for r in pools)


def test_oke_pools_are_replaced_new_first():
    # OKE node pools are identified by OCID, not name: the replacement can come up before the old pool goes.
    pools = [r for r in registrations("oci-prod") if r.type == "oci:ContainerEngine/nodePool:NodePool"]
    assert pools and not any(r.delete_before_replace for r in pools)


# --- 3. protection that matches intent -------------------------------------------------------------------------

TEAM_GUARDS = ("kubernetes:core/v1:Namespace", "kubernetes:core/v1:ResourceQuota", "kubernetes:core/v1:LimitRange",
               "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
               "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")


def test_team_guards_are_protected_with_their_namespace_in_production():
    plan = plan_with("aws-prod")
    guards = [r for r in plan.resources if r.type in TEAM_GUARDS and "research" in r.name]
    assert {r.type for r in guards} == set(TEAM_GUARDS)
    assert all(r.options["protect"] for r in guards), [r.name for r in guards if not r.options["protect"]]


def test_removing_a_team_in_production_is_refused_for_every_guard_not_just_the_namespace():
    def drop_serving(config):
        config["gpu-platform:teams"] = [t for t in config["gpu-platform:teams"] if t["name"] != "serving"]
    diff = diff_plans(plan_with("aws-prod"), plan_with("aws-prod", drop_serving))
    deleted = [c for c in diff.of("delete") if c.resource.type in TEAM_GUARDS]
    assert len(deleted) >= 5 and all(c.protected for c in deleted)
    assert any("gpu-quota" in w and "is protected" in w for w in diff.warnings())


def test_node_template_tags_are_not_protected_so_label_edits_work_in_production():
    plan = plan_with("aws-prod")
    tags = plan.of_type("aws:autoscaling/tag:Tag")
    assert tags and not any(t.options["protect"] for t in tags)
    assert all(g.options["protect"] for g in plan.of_type(NODE_GROUP))
    # Renaming a label deletes one tag and adds another: nothing protected stands in the way.
    diff = diff_plans(plan, plan_with("aws-prod", pool_edit("h100-train", labels={"tier": "gold"})))
    assert [c for c in diff.of("delete") if c.protected] == []


def test_staging_gets_the_protections_production_gets_and_development_none():
    def staging(config):
        config["gpu-platform:environment"] = "staging"
    plan = plan_with("aws-prod", staging)
    protected = {r.type for r in plan.resources if r.options["protect"]}
    assert {"aws:eks/cluster:Cluster", "aws:ec2/vpc:Vpc", *TEAM_GUARDS} <= protected
    assert not [r for r in plan_with("aws-dev").resources if r.options["protect"]]
    gke = plan_with("gcp-prod", staging).of_type("gcp:container/cluster:Cluster")[0]
    assert gke.inputs["deletionProtection"] is True and gke.options["protect"]


def test_pinned_zones_are_refused_with_existing_subnets():
    config = copy.deepcopy(stack_config("aws-prod"))
    config["gpu-platform:cluster"]["aws"] = {"subnetIds": ["subnet-0aaa", "subnet-0bbb"], "vpcId": "vpc-0abc",
                                             "zones": ["us-east-1a", "us-east-1b"]}
    with pytest.raises(ConfigError) as err:
        validate_stack("aws-prod", config_overrides=config)
    assert "cluster.aws.zones: cannot be set with subnetIds" in err.value.render()


@pytest.mark.parametrize("vpc", ["10.40.0.0/16", "10.8.0.0/22"])
def test_subnet_slots_never_overlap_and_never_move_when_a_slot_is_added(vpc):
    import ipaddress

    from components.clouds.aws.network import MAX_SUBNET_SLOTS, subnet_cidrs

    private, public = subnet_cidrs(vpc, MAX_SUBNET_SLOTS)
    nets = [ipaddress.ip_network(c) for c in private + public]
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])
    for zones in range(1, MAX_SUBNET_SLOTS):
        assert subnet_cidrs(vpc, zones) == (private[:zones], public[:zones])


def test_an_oke_shape_change_updates_in_place_and_says_existing_nodes_keep_the_old_shape():
    before = plan_with("oci-prod")
    diff = diff_plans(before, plan_with("oci-prod", pool_edit("a100-infer", instanceType="BM.GPU.H100.8")))
    assert diff.of("replace") == [] and not diff.destructive
    assert "changes pool a100-infer for new nodes only: oci:ContainerEngine/nodePool:NodePool " \
           "ml-prod-oke-a100-infer-np (nodeShape); existing nodes keep the old value until the pool is cycled" \
        in diff.warnings()


def test_a_system_pool_replacement_deletes_first_and_is_named():
    system = [r for r in registrations("aws-prod") if r.type == NODE_GROUP and r.name == "ml-prod-system"]
    assert system[0].delete_before_replace

    def bigger(config):
        config["gpu-platform:cluster"]["systemPool"]["instanceType"] = "m6i.4xlarge"
    diff = diff_plans(plan_with("aws-prod"), plan_with("aws-prod", bigger))
    assert "replaces the system pool: aws:eks/nodeGroup:NodeGroup ml-prod-system (instanceTypes); system pods " \
           "(DNS, controllers) wait for its successor" in diff.warnings()
