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
from support.policy import STACK, entry

NSG_RULE = "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule"
SUBNET = "oci:Core/subnet:Subnet"
SECURITY_LIST = "oci:Core/securityList:SecurityList"


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
        "isPublicIpEnabled": True, "subnetId": "ocid1.subnet.oc1-00c0ffee", "nsgIds": ["ocid1.nsg.oc1..api"]}}),
            nsg_rule("api-office", "ocid1.nsg.oc1..api", "203.0.113.0/24"),
            nsg_rule("api-egress", "ocid1.nsg.oc1..api", "0.0.0.0/0", direction="EGRESS"),
            # The endpoint subnet (its offline id is `<name>-<8 hex>`) and its security list: VCN-internal only.
            entry(SUBNET, "ocid1.subnet.oc1", {"cidrBlock": "10.0.0.0/28",
                                               "securityListIds": ["endpoint-sl-0123abcd"]}),
            entry(SECURITY_LIST, "endpoint-sl", {"ingressSecurityRules": [
                {"protocol": "6", "source": "10.0.0.0/16", "tcpOptions": {"min": 6443.0, "max": 6443.0}},
                {"protocol": "6", "source": "0.0.0.0/0", "tcpOptions": {"min": 443.0, "max": 443.0}}]})],
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
    ("eks", _set("vpcConfig.publicAccessCidrs", ["0.0.0.0/1", "128.0.0.0/1"]), "covers 3,702,258,688 public IPv4"),
    ("aks", _set("apiServerAccessProfile.authorizedIPRanges", []), "authorizedIPRanges does not limit it"),
    ("aks", _set("apiServerAccessProfile.authorizedIPRanges", ["0.0.0.0/0"]), "covers 3,702,258,688 public IPv4"),
    ("gke", _set("masterAuthorizedNetworksConfig", None), "masterAuthorizedNetworksConfig.cidrBlocks does not limit"),
    ("gke", _set("masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled", True), "every Google Cloud public IP"),
    ("gke", _set("masterAuthorizedNetworksConfig.cidrBlocks", [{"cidrBlock": "0.0.0.0/2"}]), "more than a /16's worth"),
    ("oke", _set("endpointConfig.nsgIds", []), "endpointConfig.nsgIds and the endpoint subnet's security lists "
                                               "(ingress sources) does not limit"),
    ("oke", _set("endpointConfig", None), "does not limit it"),
    ("oke", _oke_rule_source("0.0.0.0/0"), "covers 3,702,258,688 public IPv4"),
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


# Issue 25: the other ways in. GKE's DNS endpoint ignores authorized networks; OCI admits what an NSG rule or a
# security list of the endpoint subnet admits.


def _gke_dns_external(plan):
    cluster(plan)["controlPlaneEndpointsConfig"] = {"dnsEndpointConfig": {"allowExternalTraffic": True}}


def _gke_private_but_dns_external(plan):
    cluster(plan)["privateClusterConfig"]["enablePrivateEndpoint"] = True
    _gke_dns_external(plan)


def _oke_security_list_source(source: str, ports=(6443.0, 6443.0), protocol="6"):
    def change(plan):
        security_list = next(r for r in plan["resources"] if r["type"] == SECURITY_LIST)
        rule = {"protocol": protocol, "source": source}
        if ports:
            rule["tcpOptions"] = {"min": ports[0], "max": ports[1]}
        security_list["inputs"]["ingressSecurityRules"].append(rule)
    change.__name__ = f"security_list_{source}_{protocol}_{ports}"
    return change


@pytest.mark.parametrize("change", [
    _gke_dns_external, _gke_private_but_dns_external])
def test_gke_dns_endpoint_open_to_external_traffic_fails(change):
    plan = plan_of("gke", "production")
    change(plan)
    report = check(plan, "GPU011", "GPU013")
    assert [f.rule for f in report.findings] == ["GPU011"]
    assert "dnsEndpointConfig.allowExternalTraffic" in report.findings[0].message


def test_gke_dns_endpoint_without_external_traffic_passes():
    plan = plan_of("gke", "production")
    cluster(plan)["controlPlaneEndpointsConfig"] = {"dnsEndpointConfig": {"allowExternalTraffic": False}}
    assert check(plan, "GPU011", "GPU013").findings == []


@pytest.mark.parametrize("change", [
    _oke_security_list_source("0.0.0.0/0"), _oke_security_list_source("0.0.0.0/0", ports=(1.0, 65535.0)),
    _oke_security_list_source("0.0.0.0/0", ports=None), _oke_security_list_source("0.0.0.0/0", None, "all")])
def test_oke_open_security_list_next_to_a_narrow_nsg_fails(change):
    plan = plan_of("oke", "production")
    change(plan)
    report = check(plan, "GPU011", "GPU013")
    assert [f.rule for f in report.findings] == ["GPU011"] and "public IPv4" in report.findings[0].message


@pytest.mark.parametrize("change", [
    _oke_security_list_source("0.0.0.0/0", ports=(443.0, 443.0)), _oke_security_list_source("0.0.0.0/0", None, "17"),
    _oke_security_list_source("198.51.100.0/24")])
def test_oke_security_list_rules_that_do_not_open_the_api_pass(change):
    plan = plan_of("oke", "production")
    change(plan)
    assert check(plan, "GPU011", "GPU013").findings == []


def test_oke_endpoint_subnet_outside_the_stack_is_undecided():
    plan = plan_of("oke", "production")
    plan["resources"] = [r for r in plan["resources"] if r["type"] != SUBNET]
    report = check(plan, "GPU011", "GPU013")
    assert report.findings == []
    assert any("endpoint subnet" in n.reason for n in report.notes if n.kind == "unknown" and n.rule == "GPU011")
