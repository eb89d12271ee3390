"""GPU013 (and GPU011) on every cloud's own endpoint fields, with cluster fixtures built by hand: a compliant
cluster, then one changed field per failing case."""
from __future__ import annotations

import copy

import pytest

from gpu_platform.engine.plan import Plan
from gpu_platform.policy.runner import evaluate
from policies import context
from policies.exemptions import Policy
from policies.rules import BY_ID
from policy_fixtures import TODAY, UNKNOWN

STACK = "dev"
NSG_RULE = "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule"


def entry(type_: str, name: str, inputs: dict) -> dict:
    return {"custom": True, "inputs": inputs, "name": name, "type": type_, "parent": "",
            "urn": f"urn:pulumi:{STACK}::gpu-platform::{type_}::{name}",
            "options": {"dependsOn": [], "ignoreChanges": [], "protect": False}}


def nsg_rule(name: str, nsg: str, source: str, direction: str = "INGRESS", source_type: str = "CIDR_BLOCK") -> dict:
    return entry(NSG_RULE, name, {"networkSecurityGroupId": nsg, "direction": direction, "protocol": "6",
                                  "source": source, "sourceType": source_type,
                                  "tcpOptions": {"destinationPortRange": {"min": 6443, "max": 6443}}})


# Compliant public endpoints limited to an office range, one per cloud (wire names of the pinned SDKs).
CLUSTERS = {
    "eks": [entry("aws:eks/cluster:Cluster", "eks", {"vpcConfig": {
        "endpointPublicAccess": True, "endpointPrivateAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]}})],
    "aks": [entry("azure-native:containerservice:ManagedCluster", "aks", {"apiServerAccessProfile": {
        "enablePrivateCluster": False, "authorizedIPRanges": ["203.0.113.0/24"]}})],
    "gke": [entry("gcp:container/cluster:Cluster", "gke", {
        "privateClusterConfig": {"enablePrivateEndpoint": False, "enablePrivateNodes": True},
        "masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "203.0.113.0/24", "displayName": "office"}]}})],
    "oke": [entry("oci:ContainerEngine/cluster:Cluster", "oke", {"endpointConfig": {
        "isPublicIpEnabled": True, "subnetId": "ocid1.subnet.oc1..api", "nsgIds": ["ocid1.nsg.oc1..api"]}}),
            nsg_rule("api-office", "ocid1.nsg.oc1..api", "203.0.113.0/24"),
            nsg_rule("api-egress", "ocid1.nsg.oc1..api", "0.0.0.0/0", direction="EGRESS")],
}


def plan_of(cloud: str, environment: str = "development") -> dict:
    facts = entry("gpu-platform:policy:StackFacts", "facts", {"environment": environment})
    return {"project": "gpu-platform", "stack": STACK, "outputs": {},
            "resources": [*copy.deepcopy(CLUSTERS[cloud]), facts]}


def check(plan: dict, *rules: str):
    return evaluate(Plan.from_json(plan), context.build(None, Policy(), TODAY), [BY_ID[r] for r in rules])


def cluster(plan: dict) -> dict:
    return plan["resources"][0]["inputs"]


@pytest.mark.parametrize("cloud", sorted(CLUSTERS))
def test_limited_public_endpoints_pass(cloud):
    report = check(plan_of(cloud), "GPU011", "GPU013")
    assert report.findings == [] and [n for n in report.notes if n.kind == "unknown"] == []


def _set(path: str, value):
    def change(plan):
        node = cluster(plan)
        *parents, last = path.split(".")
        for step in parents:
            node = node[step]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return change


def _oke_rule_source(source: str):
    def change(plan):
        plan["resources"][1]["inputs"]["source"] = source
    return change


def _oke_rules_dropped(plan):
    plan["resources"] = [r for r in plan["resources"] if r["type"] != NSG_RULE]


# cloud, one changed field, what the finding says
FAILING = [
    ("eks", _set("vpcConfig.publicAccessCidrs", None), "vpcConfig.publicAccessCidrs does not limit it"),
    ("eks", _set("vpcConfig.publicAccessCidrs", ["0.0.0.0/1", "128.0.0.0/1"]), "covers 100.0% of the IPv4 space"),
    ("aks", _set("apiServerAccessProfile.authorizedIPRanges", []), "authorizedIPRanges does not limit it"),
    ("aks", _set("apiServerAccessProfile.authorizedIPRanges", ["0.0.0.0/0"]), "covers 100.0% of the IPv4 space"),
    ("gke", _set("masterAuthorizedNetworksConfig", None), "masterAuthorizedNetworksConfig.cidrBlocks does not limit"),
    ("gke", _set("masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled", True), "every Google Cloud public IP"),
    ("gke", _set("masterAuthorizedNetworksConfig.cidrBlocks", [{"cidrBlock": "0.0.0.0/2"}]), "25.0% of the IPv4"),
    ("oke", _set("endpointConfig.nsgIds", []), "endpointConfig.nsgIds (ingress rules' source CIDRs) does not limit"),
    ("oke", _set("endpointConfig", None), "does not limit it"),
    ("oke", _oke_rule_source("0.0.0.0/0"), "covers 100.0% of the IPv4 space"),
]


@pytest.mark.parametrize("cloud, change, message", FAILING, ids=lambda c: getattr(c, "__name__", None))
def test_unrestricted_public_endpoint_fails_gpu013(cloud, change, message):
    plan = plan_of(cloud)
    change(plan)
    report = check(plan, "GPU011", "GPU013")
    assert [f.rule for f in report.findings] == ["GPU013"]
    assert message in report.findings[0].message and report.findings[0].resource == cloud


@pytest.mark.parametrize("cloud, change, message", FAILING, ids=lambda c: getattr(c, "__name__", None))
def test_in_production_the_same_endpoint_fails_gpu011_instead(cloud, change, message):
    plan = plan_of(cloud, "production")
    change(plan)
    report = check(plan, "GPU011", "GPU013")
    assert [f.rule for f in report.findings] == ["GPU011"] and message in report.findings[0].message
    assert "a production stack: GPU011 holds its endpoint" in [n.reason for n in report.notes if n.rule == "GPU013"]


@pytest.mark.parametrize("cloud, private", [
    ("eks", _set("vpcConfig.endpointPublicAccess", False)),
    ("aks", _set("apiServerAccessProfile.enablePrivateCluster", True)),
    ("gke", _set("privateClusterConfig.enablePrivateEndpoint", True)),
    ("oke", _set("endpointConfig.isPublicIpEnabled", False)),
])
def test_private_endpoints_pass_without_allow_list(cloud, private):
    plan = plan_of(cloud)
    private(plan)
    for field in ("vpcConfig.publicAccessCidrs", "apiServerAccessProfile.authorizedIPRanges",
                  "masterAuthorizedNetworksConfig", "endpointConfig.nsgIds"):
        head, _, rest = field.partition(".")
        node = cluster(plan).get(head) if rest else cluster(plan)
        if isinstance(node, dict):
            node.pop(rest or head, None)
    assert check(plan, "GPU011", "GPU013").findings == []


def test_oke_nsg_without_rules_in_the_stack_is_undecided():
    plan = plan_of("oke")
    _oke_rules_dropped(plan)
    report = check(plan, "GPU013")
    assert report.findings == []
    assert [n.reason for n in report.notes if n.kind == "unknown"] == [
        "oke: the endpoint's NSGs (ocid1.nsg.oc1..api) have no security rules in this stack, so what they admit "
        "cannot be read"]


def test_unknown_allow_list_is_reported_not_guessed():
    plan = plan_of("eks")
    cluster(plan)["vpcConfig"]["publicAccessCidrs"] = UNKNOWN
    report = check(plan, "GPU013")
    assert report.findings == [] and [n.kind for n in report.notes if n.rule == "GPU013"] == ["unknown"]
