"""GKE hardening: per-zone initial counts, Google Groups for RBAC, the nodes' own service account, authorized
networks on the control plane."""
from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from components.clouds.gcp.cluster import NODE_ROLES, node_service_account_id
from components.config import ConfigError, validate

from support.paths import ROOT
from support.plans import one, plan_fixture

NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
ACCOUNT = "gcp:serviceaccount/account:Account"
IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"


prod = plan_fixture("gcp-prod")
dev = plan_fixture("gcp-dev")
dev_authorized = plan_fixture("gcp-dev", cluster={"authorizedNetworks": ["203.0.113.0/24", "198.51.100.7/32"]})


RAW = {
    "cloud": "gcp",
    "cluster": {"name": "ml", "region": "us-central1", "systemPool": {"minNodes": 1, "maxNodes": 3},
                "authorizedNetworks": ["203.0.113.0/24"],
                "gcp": {"project": "p", "zones": ["us-central1-a", "us-central1-b"]}},
    "gpuPools": [{"name": "l4", "instanceType": "g2-standard-24", "minNodes": 1, "maxNodes": 4}],
    "teams": [{"name": "serving", "quotas": {"l4": 8}}],
}


def problems(raw) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        validate(raw)
    return {p.path: p.message for p in info.value.problems}


# --- per-zone initial node counts ---------------------------------------------------------------------------------

@pytest.mark.parametrize("stack", ["gcp-dev", "gcp-prod"])
def test_every_planned_pool_starts_within_its_limits(stack, request):
    plan = request.getfixturevalue(stack.split("-")[1])
    for pool in plan.of_type(NODE_POOL):
        inputs = pool.inputs
        started = inputs["initialNodeCount"] * len(inputs["nodeLocations"])
        limits = inputs["autoscaling"]
        assert limits["totalMinNodeCount"] <= started <= limits["totalMaxNodeCount"], pool.name
        assert "minNodeCount" not in limits and "maxNodeCount" not in limits  # per-zone limits would multiply


def test_system_pool_starting_above_max_over_the_zones_is_refused():
    raw = copy.deepcopy(RAW)
    raw["cluster"]["gcp"]["zones"] = ["us-central1-a", "us-central1-b", "us-central1-c"]
    raw["cluster"]["systemPool"] = {"minNodes": 1, "maxNodes": 2}
    assert problems(raw) == {"cluster.systemPool.maxNodes": (
        "GKE starts 1 node(s) in each of the 3 zones of cluster.gcp.zones, 3 in all for minNodes 1, above maxNodes "
        "2; raise maxNodes to at least 3 or list fewer zones")}


def test_gpu_pool_rounded_up_per_zone_is_checked_against_its_max():
    raw = copy.deepcopy(RAW)
    raw["gpuPools"][0].update(minNodes=3, maxNodes=3)  # 2 per zone over two zones: 4 nodes
    assert "4 in all for minNodes 3, above maxNodes 3" in problems(raw)["gpuPools[0].maxNodes"]
    raw["gpuPools"][0]["maxNodes"] = 4
    assert validate(raw).gpu_pools[0].max_nodes == 4


@pytest.mark.parametrize("zones, fragment", [
    (None, "is required on gcp"),
    ([], "must list one or more distinct zones"),
    (["us-central1-a", "us-central1-a"], "must list one or more distinct zones"),
])
def test_zones_are_required_and_distinct(zones, fragment):
    raw = copy.deepcopy(RAW)
    if zones is None:
        del raw["cluster"]["gcp"]["zones"]
    else:
        raw["cluster"]["gcp"]["zones"] = zones
    assert fragment in problems(raw)["cluster.gcp.zones"]


def test_the_cli_refuses_the_inconsistent_dev_stack_with_the_path(tmp_path):
    stack = (ROOT / "stacks" / "Pulumi.gcp-dev.yaml").read_text().replace(
        "zones: [europe-west4-a, europe-west4-b]", "zones: [europe-west4-a, europe-west4-b, europe-west4-c]")
    path = tmp_path / "Pulumi.gcp-dev3.yaml"
    path.write_text(stack)
    result = subprocess.run([sys.executable, "-m", "gpu_platform.cli", "plan", "--file", str(path)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2
    assert "cluster.systemPool.maxNodes: GKE starts 1 node(s) in each of the 3 zones" in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


# --- Google Groups for RBAC --------------------------------------------------------------------------------------

def test_production_maps_google_groups_into_rbac(prod, dev):
    assert one(prod, CLUSTER, "ml-prod-gke-gke").inputs["authenticatorGroupsConfig"] == {
        "securityGroup": "gke-security-groups@acme.example"}
    # The teams' RoleBindings name the same group emails GKE puts in tokens.
    subjects = {s["name"] for r in prod.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
                for s in r.inputs.get("subjects", []) if s.get("kind") == "Group"}
    assert {"research@acme.example", "search-ml@acme.example"} <= subjects
    assert "authenticatorGroupsConfig" not in one(dev, CLUSTER, "ml-dev-gke-gke").inputs  # no team lists groups


def test_team_groups_need_the_security_group():
    raw = copy.deepcopy(RAW)
    raw["teams"][0]["groups"] = ["serving@example.com"]
    message = problems(raw)["cluster.gcp.securityGroup"]
    assert message.startswith("is required when teams list groups (serving): without it GKE passes no group")
    raw["cluster"]["gcp"]["securityGroup"] = "gke-security-groups@example.com"
    assert validate(raw).teams[0].groups == ("serving@example.com",)


@pytest.mark.parametrize("group", ["serving-admins", "00000000-0000-0000-0000-0000000000a1", "a@b"])
def test_team_groups_must_be_google_group_emails(group):
    raw = copy.deepcopy(RAW)
    raw["cluster"]["gcp"]["securityGroup"] = "gke-security-groups@example.com"
    raw["teams"][0]["groups"] = ["ok@example.com", group]
    assert problems(raw) == {"teams[0].groups[1]": (
        f"must be a Google group email like ml-research@example.com (GKE puts group emails in tokens); got {group!r}")}


@pytest.mark.parametrize("value", ["security@example.com", "gke-security-groups@", "gke-security-groups"])
def test_security_group_must_be_gke_security_groups_at_a_domain(value):
    raw = copy.deepcopy(RAW)
    raw["cluster"]["gcp"]["securityGroup"] = value
    raw["teams"][0]["groups"] = ["serving@example.com"]
    assert problems(raw) == {"cluster.gcp.securityGroup": (
        f"must be gke-security-groups@<your Google Workspace or Cloud Identity domain>; got {value!r}")}


# --- the nodes' own service account ------------------------------------------------------------------------------

def test_nodes_run_as_a_dedicated_least_privilege_service_account(prod):
    account = one(prod, ACCOUNT, "ml-prod-gke-nodes-sa")
    assert account.inputs["accountId"] == "ml-prod-gke-nodes" and account.inputs["project"] == "acme-ml-prod"
    email = "ml-prod-gke-nodes@acme-ml-prod.iam.gserviceaccount.com"
    grants = prod.of_type(IAM_MEMBER)
    assert sorted(g.inputs["role"] for g in grants) == sorted(NODE_ROLES) == [
        "roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount"]
    assert all(g.inputs["member"] == f"serviceAccount:{email}" and g.inputs["project"] == "acme-ml-prod"
               for g in grants)
    pools = prod.of_type(NODE_POOL)
    assert len(pools) == 4
    for pool in pools:
        assert pool.inputs["nodeConfig"]["serviceAccount"] == email, pool.name
        # Nodes boot only after their grants exist, or they cannot log or pull images.
        assert {g.urn for g in grants} <= set(pool.options["dependsOn"]), pool.name


def test_even_the_removed_default_pool_uses_the_nodes_account(prod):
    cluster = one(prod, CLUSTER, "ml-prod-gke-gke")
    assert cluster.inputs["nodeConfig"] == {
        "serviceAccount": "ml-prod-gke-nodes@acme-ml-prod.iam.gserviceaccount.com",
        "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"]}
    # It describes only the default pool GKE creates and the program removes: a change must not replace the cluster.
    assert cluster.options["ignoreChanges"] == ["nodeConfig"]
    assert {g.urn for g in prod.of_type(IAM_MEMBER)} <= set(cluster.options["dependsOn"])


def test_node_service_account_id_fits_gcp_limits():
    longest = node_service_account_id("a" * 23 + "-" + "b" * 16)  # a 40-character cluster name
    assert longest == "a" * 23 + "-nodes" and 6 <= len(longest) <= 30
    assert node_service_account_id("ml") == "ml-nodes"


# --- authorized networks ------------------------------------------------------------------------------------------

def test_public_endpoint_is_limited_to_the_authorized_networks(dev_authorized):
    inputs = one(dev_authorized, CLUSTER, "ml-dev-gke-gke").inputs
    assert inputs["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert inputs["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [{"cidrBlock": "203.0.113.0/24", "displayName": "authorized-0"},
                       {"cidrBlock": "198.51.100.7/32", "displayName": "authorized-1"}],
        "gcpPublicCidrsAccessEnabled": False}


def test_authorized_networks_must_be_cidrs():
    raw = copy.deepcopy(RAW)
    raw["cluster"]["authorizedNetworks"] = ["203.0.113.0/24", "203.0.113.1/24", "office"]
    found = problems(raw)
    assert set(found) == {"cluster.authorizedNetworks[1]", "cluster.authorizedNetworks[2]"}
    assert found["cluster.authorizedNetworks[2]"] == ("'office' is not an IPv4 or IPv6 CIDR like 203.0.113.0/24 or "
                                                      "2001:db8:1::/48")
    raw["cluster"]["authorizedNetworks"] = "203.0.113.0/24"
    assert problems(raw)["cluster.authorizedNetworks"].startswith("must be a list of strings")
