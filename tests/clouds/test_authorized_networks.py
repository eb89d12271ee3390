"""cluster.authorizedNetworks: parsed once for every cloud, required for a public production endpoint, and wired as
EKS publicAccessCidrs and AKS authorizedIPRanges."""
from __future__ import annotations

import copy

import pytest

from components.clouds import profile
from components.config import ConfigError, validate
from gpu_platform.cli import main
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import PROJECT_ROOT, read_stack_config

from support.plans import shared_plan

OFFICE = ["203.0.113.0/24", "198.51.100.7/32"]


def problems(raw):
    with pytest.raises(ConfigError) as info:
        validate(raw)
    return {p.path: p.message for p in info.value.problems}


def public(raw, **cluster):
    raw["cluster"].update(privateEndpoint=False, **cluster)
    return raw


def stack_cluster(stack: str, **changes) -> dict:
    cluster = copy.deepcopy(read_stack_config(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml")["gpu-platform:cluster"])
    cluster.update(changes)
    return {"gpu-platform:cluster": cluster}


# --- config --------------------------------------------------------------------------------------------------

def test_default_is_no_networks(raw):
    assert validate(raw).cluster.authorized_networks == ()


def test_networks_are_kept_in_order(raw):
    assert validate(public(raw, authorizedNetworks=OFFICE)).cluster.authorized_networks == tuple(OFFICE)


REQUIRED = ("is required when cluster.privateEndpoint is false (the default outside production): list the IPv4 CIDRs "
            "that may reach the public API endpoint, e.g. [203.0.113.0/24]")


def test_public_production_endpoint_needs_networks(raw):
    assert problems(public(raw)) == {"cluster.authorizedNetworks": REQUIRED}
    assert "cluster.authorizedNetworks" in problems(public(raw, authorizedNetworks=[]))


@pytest.mark.parametrize("environment", ["staging", "development"])
def test_public_endpoint_without_networks_warns_elsewhere(raw, environment):
    # ...and GPU013 (mandatory) fails `check` on it: tests/policy/test_policy_endpoints.py.
    raw["environment"] = environment
    assert f"cluster.authorizedNetworks: {REQUIRED}" in validate(public(raw)).warnings


def test_development_may_open_the_endpoint_only_by_saying_so(raw):
    # Config takes an explicit 0.0.0.0/0 outside production; GPU013 then fails the plan unless it is exempted.
    raw["environment"] = "development"
    assert validate(public(raw, authorizedNetworks=["0.0.0.0/0"])).cluster.authorized_networks == ("0.0.0.0/0",)


@pytest.mark.parametrize("networks, path, message", [
    (["203.0.113.0/33"], "cluster.authorizedNetworks[0]", "'203.0.113.0/33' is not an IPv4 CIDR like 203.0.113.0/24"),
    ([OFFICE[0], "office"], "cluster.authorizedNetworks[1]", "'office' is not an IPv4 CIDR like 203.0.113.0/24"),
    (["2001:db8::/32"], "cluster.authorizedNetworks[0]", "2001:db8::/32 is IPv6, which EKS does not take here; use an "
                                                         "IPv4 CIDR like 203.0.113.0/24"),
    (["203.0.113.9/24"], "cluster.authorizedNetworks[0]", "'203.0.113.9/24' has host bits set; the network is "
                                                          "203.0.113.0/24"),
    (["0.0.0.0/0"], "cluster.authorizedNetworks[0]", "0.0.0.0/0 opens the API endpoint to the whole internet; in "
                                                     "production list your own networks"),
    ("203.0.113.0/24", "cluster.authorizedNetworks", "must be a list of strings; got '203.0.113.0/24'"),
    ([24], "cluster.authorizedNetworks", "must be a list of strings; got [24]"),
])
def test_bad_networks(raw, networks, path, message):
    found = problems(public(raw, authorizedNetworks=networks))
    assert found[path] == message


def test_every_bad_network_is_reported_at_once(raw):
    found = problems(public(raw, authorizedNetworks=["x", OFFICE[0], "10.0.0.1/8"]))
    assert sorted(found) == ["cluster.authorizedNetworks[0]", "cluster.authorizedNetworks[2]"]


@pytest.mark.parametrize("cloud, pool, service", [
    ("aws", {"name": "h100", "instanceType": "p5.48xlarge", "maxNodes": 2}, "EKS"),
    ("azure", {"name": "h100", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2}, "AKS"),
])
def test_private_eks_and_aks_endpoints_take_no_networks(raw, cloud, pool, service):
    raw.update(cloud=cloud, gpuPools=[pool], teams=[{"name": "lab", "quotas": {"h100": 8}}])
    raw["cluster"].update(authorizedNetworks=OFFICE, region=profile(cloud).region_example)
    assert problems(raw) == {"cluster.authorizedNetworks": f"limits a public endpoint only on {service}, and "
                                                           "cluster.privateEndpoint is true; remove it or set "
                                                           "privateEndpoint: false"}


def test_bad_stack_exits_2_naming_the_path(tmp_path, capsys):
    stack = tmp_path / "Pulumi.aws-open.yaml"
    stack.write_text((PROJECT_ROOT / "stacks" / "Pulumi.aws-prod.yaml").read_text().replace(
        "    name: ml-prod\n", "    name: ml-prod\n    privateEndpoint: false\n    authorizedNetworks: [10.0.0.1/8]\n"))
    assert main(["plan", "--file", str(stack)]) == 2
    assert "cluster.authorizedNetworks[0]: '10.0.0.1/8' has host bits set" in capsys.readouterr().err


# --- EKS and AKS ---------------------------------------------------------------------------------------------

def test_eks_public_endpoint_is_limited_to_the_networks():
    plan = plan_stack("aws-prod", config_overrides=stack_cluster("aws-prod", privateEndpoint=False,
                                                                 authorizedNetworks=OFFICE))
    cluster, = plan.of_type("aws:eks/cluster:Cluster")
    assert cluster.inputs["vpcConfig"]["endpointPublicAccess"] is True
    assert cluster.inputs["vpcConfig"]["publicAccessCidrs"] == OFFICE


def test_eks_private_endpoint_names_no_cidrs_and_the_dev_stack_lists_its_networks():
    cluster, = shared_plan("aws-prod").of_type("aws:eks/cluster:Cluster")
    assert "publicAccessCidrs" not in cluster.inputs["vpcConfig"]
    cluster, = shared_plan("aws-dev").of_type("aws:eks/cluster:Cluster")
    assert cluster.inputs["vpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24"]


def test_aks_public_endpoint_is_limited_to_the_networks():
    plan = plan_stack("azure-prod", config_overrides=stack_cluster("azure-prod", privateEndpoint=False,
                                                                   authorizedNetworks=OFFICE))
    cluster, = plan.of_type("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["apiServerAccessProfile"] == {"enablePrivateCluster": False, "authorizedIPRanges": OFFICE}


def test_aks_private_endpoint_names_no_ranges():
    cluster, = shared_plan("azure-prod").of_type("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["apiServerAccessProfile"] == {"enablePrivateCluster": True}


@pytest.mark.parametrize("stack", ["aws-prod", "azure-prod"])
def test_limited_public_endpoint_passes_the_private_endpoint_policy(stack, tmp_path):
    path = tmp_path / f"Pulumi.{stack}-public.yaml"
    text = (PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    name = read_stack_config(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml")["gpu-platform:cluster"]["name"]
    path.write_text(text.replace(f"    name: {name}\n", f"    name: {name}\n    privateEndpoint: false\n"
                                                        f"    authorizedNetworks: [{OFFICE[0]}]\n"))
    assert main(["check", "--file", str(path)]) == 0


def test_adopted_cluster_takes_no_networks(raw):
    raw["cluster"].update(existingKubeconfig="apiVersion: v1", authorizedNetworks=OFFICE, privateEndpoint=False)
    warnings = validate(raw).warnings
    assert "cluster.authorizedNetworks: does nothing with cluster.existingKubeconfig (the stack creates no cluster); " \
           "limit the endpoint where that cluster is managed" in warnings
    del raw["cluster"]["authorizedNetworks"]
    assert validate(raw).cluster.authorized_networks == ()  # nothing to require either: the endpoint is not ours


# --- production: named networks only ---------------------------------------------------------------------------

WIDE = ("100.64.0.0/10 is wider than a named network: production allows /16 or narrower for IPv4 "
        "(cluster.authorizedNetworkMinPrefix.ipv4); list the networks that administer the cluster, or exempt "
        "ml-prod-eks from GPU011 with a reason (policy.exemptions)")


def gpu011_exemption(resource: str = "ml-prod-eks", days: int = 30) -> dict:
    from datetime import date, timedelta
    return {"exemptions": [{"rule": "GPU011", "resource": resource, "expires": (date.today() + timedelta(days)).isoformat(),
                            "reason": "the CI fleet egresses from a provider-wide range until the VPN lands"}]}


def test_production_refuses_a_network_wider_than_the_bound(raw):
    found = problems(public(raw, authorizedNetworks=[OFFICE[0], "100.64.0.0/10", "10.0.0.0/8"]))
    assert found["cluster.authorizedNetworks[1]"] == WIDE
    assert found["cluster.authorizedNetworks[2]"].startswith("10.0.0.0/8 is wider than a named network")
    assert "cluster.authorizedNetworks[0]" not in found


def test_the_bound_is_configurable_and_checked(raw):
    config = public(raw, authorizedNetworks=["100.64.0.0/10"], authorizedNetworkMinPrefix={"ipv4": 8})
    assert validate(config).cluster.authorized_networks == ("100.64.0.0/10",)
    config = public(raw, authorizedNetworks=[OFFICE[0]], authorizedNetworkMinPrefix={"ipv4": 30})
    assert "203.0.113.0/24 is wider than a named network: production allows /30" in \
        problems(config)["cluster.authorizedNetworks[0]"]
    config = public(raw, authorizedNetworks=[OFFICE[0]], authorizedNetworkMinPrefix={"ipv4": 33, "ipv6": 129, "v6": 1})
    found = problems(config)
    assert "must be <= 32" in found["cluster.authorizedNetworkMinPrefix.ipv4"]
    assert "must be <= 128" in found["cluster.authorizedNetworkMinPrefix.ipv6"]
    assert "unknown key; allowed: ipv4, ipv6" in found["cluster.authorizedNetworkMinPrefix.v6"]


def test_outside_production_a_wide_network_is_left_to_gpu013(raw):
    raw["environment"] = "staging"
    assert validate(public(raw, authorizedNetworks=["100.64.0.0/10"])).cluster.authorized_networks == ("100.64.0.0/10",)


def test_a_gpu011_exemption_for_the_cluster_turns_the_error_into_a_warning(raw):
    raw["policy"] = gpu011_exemption()
    config = validate(public(raw, authorizedNetworks=["100.64.0.0/10"]))
    (warning,) = [w for w in config.warnings if w.startswith("cluster.authorizedNetworks[0]")]
    assert warning.startswith(f"cluster.authorizedNetworks[0]: {WIDE}; exempted by policy.exemptions[0] until ")


@pytest.mark.parametrize("policy", [
    gpu011_exemption(resource="ml-prod-l4-*"),  # another resource
    gpu011_exemption(days=-1),  # expired
    {"exemptions": [{**gpu011_exemption()["exemptions"][0], "rule": "GPU013"}]},  # another rule
])
def test_an_exemption_that_does_not_cover_the_cluster_leaves_the_error(raw, policy):
    raw["policy"] = policy
    assert problems(public(raw, authorizedNetworks=["100.64.0.0/10"]))["cluster.authorizedNetworks[0]"] == WIDE


@pytest.mark.parametrize("stack", ["aws-prod", "azure-prod", "gcp-prod", "oci-prod"])
def test_the_exempted_name_is_the_planned_cluster_resource(stack):
    # Validation honours exemptions naming `<cluster>-<CloudProfile.cluster_resource_suffix>`: the name `check`
    # reports the cluster's GPU011 finding on.
    plan = shared_plan(stack)
    config = plan.config
    names = {r.name for r in plan.resources if r.custom and r.type.split(":")[0] in ("aws", "azure-native", "gcp", "oci")}
    assert f"{config.cluster.name}-{profile(config.cloud).cluster_resource_suffix}" in names


@pytest.mark.parametrize("networks, path", [
    (["11.0.0.0/17", "11.0.128.0/17", "8.8.8.0/24"], "cluster.authorizedNetworks"),  # a /16 and one /24 more
    ([f"{n}.0.0.0/17" for n in (11, 12, 13)], "cluster.authorizedNetworks"),  # three /17s: more than a /16 covers
    ([f"20.0.{n}.0/24" for n in range(256)] + ["20.1.0.0/24"], "cluster.authorizedNetworks"),  # 257 /24s
])
def test_production_measures_the_networks_together_by_coverage(raw, networks, path):
    # Each entry is narrower than /16, but together they cover more public addresses than one named network.
    assert "together these IPv4 networks cover" in problems(public(raw, authorizedNetworks=networks))[path]


@pytest.mark.parametrize("networks", [
    ["11.0.0.0/17", "11.0.128.0/17"],  # one /16 split in two
    [f"20.0.{n}.0/24" for n in range(256)],  # 256 /24s: a /16's worth
    ["11.0.0.0/16", "198.18.0.0/17", "192.0.2.0/24"],  # 198.18/15 and 192.0.2/24 hold no internet host
])
def test_networks_within_one_bound_together_pass(raw, networks):
    assert validate(public(raw, authorizedNetworks=networks)).cluster.authorized_networks == tuple(networks)


def gke(raw, **cluster):
    raw.update(cloud="gcp", gpuPools=[{"name": "l4", "instanceType": "g2-standard-8", "maxNodes": 2}],
               teams=[{"name": "lab", "quotas": {"l4": 1}}])
    raw["cluster"].update(region="us-central1", gcp={"project": "ml-prod", "zones": ["us-central1-a"]})
    return public(raw, **cluster)


def test_gke_takes_ipv6_networks_up_to_a_48(raw):
    networks = (OFFICE[0], "2a00:1450:4001::/48")
    assert validate(gke(raw, authorizedNetworks=list(networks))).cluster.authorized_networks == networks
    networks = (OFFICE[0], "2a00:1450:4001:1::/64", "2a01:4f8:1:2::/64")
    assert validate(gke(raw, authorizedNetworks=list(networks))).cluster.authorized_networks == networks


@pytest.mark.parametrize("networks, path, start", [
    (["2a00:1450::/32"], "cluster.authorizedNetworks[0]", "2a00:1450::/32 is wider than a named network: production "
                                                          "allows /48 or narrower for IPv6"),
    (["::/0"], "cluster.authorizedNetworks[0]", "::/0 opens the API endpoint to the whole internet"),
    ([f"2a00:1:{n}::/48" for n in range(3)], "cluster.authorizedNetworks", "together these IPv6 networks cover"),
    (["2001:db8::1/48"], "cluster.authorizedNetworks[0]", "'2001:db8::1/48' has host bits set; the network is "
                                                          "2001:db8::/48"),
])
def test_gke_ipv6_networks_are_bounded_and_measured_in_production(raw, networks, path, start):
    assert problems(gke(raw, authorizedNetworks=networks))[path].startswith(start)


def test_the_ipv6_bound_is_configurable(raw):
    config = gke(raw, authorizedNetworks=["2a00:1450::/32"], authorizedNetworkMinPrefix={"ipv6": 32})
    assert validate(config).cluster.authorized_networks == ("2a00:1450::/32",)


@pytest.mark.parametrize("cloud, pool", [
    ("azure", {"name": "h100", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2}),
    ("oci", {"name": "h100", "instanceType": "BM.GPU.H100.8", "maxNodes": 2}),
])
def test_clouds_without_ipv6_allow_lists_refuse_ipv6(raw, cloud, pool):
    raw.update(cloud=cloud, gpuPools=[pool], teams=[{"name": "lab", "quotas": {"h100": 8}}])
    raw["cluster"].update(region=profile(cloud).region_example)
    found = problems(public(raw, authorizedNetworks=[OFFICE[0], "2001:db8:1::/48"]))
    assert found["cluster.authorizedNetworks[1]"] == (f"2001:db8:1::/48 is IPv6, which {profile(cloud).service} does "
                                                      "not take here; use an IPv4 CIDR like 203.0.113.0/24")
