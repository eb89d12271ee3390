"""GPU016 (NetworkPolicy enforced by the cluster): the compliant fixtures and planned stacks, then one changed field
per cloud and failing case, not-applicable, unknown-at-preview and exemption cases."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from gpu_platform.cli import main
from policies.rules import RULES

from policy_fixtures import TODAY, UNKNOWN, assert_undecided, drop, ids, inputs, load, new_ids, notes, run
from support.policy import base_plan, entry

ADDON = "aws:eks/addon:Addon"
EKS = "aws:eks/cluster:Cluster"
NAMESPACE = "kubernetes:core/v1:Namespace"
TEAM = "gpu-platform:tenancy:Team"
GKE = "gcp:container/cluster:Cluster"
REASON = "Calico is installed by the network team's own program (NET-212), outside this stack"


def with_cluster(type_: str, inputs_: dict) -> dict:
    """gcp-dev's plan (team namespaces and all) with its cluster swapped for another cloud's."""
    plan = load("gcp-dev")
    drop(plan, GKE)
    plan["resources"].append(entry(type_, "cluster", inputs_))
    return plan


def test_fixtures_and_every_example_stack_enforce():
    for fixture in ("aws-prod", "gcp-dev"):
        assert ids(run(load(fixture), "GPU016")) == []
    # The planned stacks, as the cluster components build them (OKE with Calico: tests/clouds/test_oke_calico.py).
    for stack in ("aws-dev", "aws-prod", "azure-prod", "gcp-dev", "gcp-prod", "oci-prod"):
        plan = base_plan(stack)
        assert ids(run(plan, "GPU016", environment=None)) == [], stack


def addon_without_policy_agent(plan):
    inputs(plan, ADDON)["configurationValues"] = "{}"


def addon_for_another_cluster(plan):
    inputs(plan, ADDON)["clusterName"] = "other"


def no_addon(plan):
    drop(plan, ADDON)


def addon_values_not_json(plan):
    inputs(plan, ADDON)["configurationValues"] = "enableNetworkPolicy=true"


def gke_without_dataplane_v2(plan):
    del inputs(plan, GKE)["datapathProvider"]


# fixture, change, what the message says
FAILING = [
    ("aws-prod", addon_without_policy_agent, 'does not set configurationValues {"enableNetworkPolicy": "true"}'),
    ("aws-prod", addon_for_another_cluster, "no managed vpc-cni add-on for it"),
    ("aws-prod", no_addon, "no managed vpc-cni add-on for it"),
    ("aws-prod", addon_values_not_json, "configurationValues are not JSON"),
    ("gcp-dev", gke_without_dataplane_v2, "neither Dataplane V2"),
]


@pytest.mark.parametrize("fixture, change, expected", FAILING, ids=[c[1].__name__ for c in FAILING])
def test_one_changed_field_fails_exactly_gpu016(fixture, change, expected):
    plan = load(fixture)
    change(plan)
    report = run(plan, *(r.id for r in RULES))
    assert new_ids(report, fixture) == ["GPU016"]
    assert any(expected in f.message for f in report.findings), [f.message for f in report.findings]
    assert report.exit_code() == 1


@pytest.mark.parametrize("type_, inputs_, enforced", [
    ("azure-native:containerservice:ManagedCluster", {"networkProfile": {"networkPolicy": "cilium"}}, True),
    ("azure-native:containerservice:ManagedCluster", {"networkProfile": {"networkPolicy": "calico"}}, True),
    ("azure-native:containerservice:ManagedCluster", {"networkProfile": {"networkPolicy": "none"}}, False),
    ("azure-native:containerservice:ManagedCluster", {"networkProfile": {"networkPlugin": "azure"}}, False),
    (GKE, {"networkPolicy": {"enabled": True}, "addonsConfig": {"networkPolicyConfig": {"disabled": False}}}, True),
    (GKE, {"networkPolicy": {"enabled": True}, "addonsConfig": {"networkPolicyConfig": {"disabled": True}}}, False),
    (GKE, {"datapathProvider": "LEGACY_DATAPATH"}, False),
    ("oci:ContainerEngine/cluster:Cluster", {"clusterPodNetworkOptions": [{"cniType": "OCI_VCN_IP_NATIVE"}]}, False),
    ("oci:ContainerEngine/cluster:Cluster", {}, False),  # flannel, OKE's API default
])
def test_each_clouds_enforcement_settings(type_, inputs_, enforced):
    report = run(with_cluster(type_, inputs_), "GPU016")
    assert ids(report) == ([] if enforced else ["GPU016"]), [f.message for f in report.findings]


def test_oke_names_its_cni_and_the_calico_route():
    report = run(with_cluster("oci:ContainerEngine/cluster:Cluster",
                              {"clusterPodNetworkOptions": [{"cniType": "OCI_VCN_IP_NATIVE"}]}), "GPU016")
    assert "OKE's OCI_VCN_IP_NATIVE CNI does not enforce NetworkPolicy objects" in report.findings[0].message
    assert "fits only FLANNEL_OVERLAY clusters" in report.findings[0].message
    flannel = run(with_cluster("oci:ContainerEngine/cluster:Cluster", {}), "GPU016")
    assert "Calico in policy-only mode, which this stack does not install" in flannel.findings[0].message


def test_exemption_waives_the_finding():
    plan = load("aws-prod")
    no_addon(plan)
    report = run(plan, "GPU016", exemptions=(("GPU016", "ml-prod-eks", REASON, TODAY + timedelta(days=30)),))
    assert ids(report) == []
    assert {u.rule for u in report.exemptions.used} == {"GPU016"}


def test_not_applicable_without_teams_or_without_a_cluster():
    plan = load("aws-prod")
    for type_ in (NAMESPACE, TEAM):
        drop(plan, type_)
    report = run(plan, "GPU016")
    assert "no team namespaces (Namespaces labelled gpu-platform.io/team)" in notes(report, "GPU016",
                                                                                    "not-applicable")
    adopted = load("aws-prod")
    drop(adopted, EKS)
    report = run(adopted, "GPU016")
    assert ids(report) == []
    assert any("adopted cluster" in n for n in notes(report, "GPU016", "not-applicable"))


@pytest.mark.parametrize("change", [
    lambda plan: inputs(plan, ADDON).__setitem__("configurationValues", UNKNOWN),
    lambda plan: inputs(plan, ADDON).__setitem__("clusterName", UNKNOWN),
])
def test_unknown_at_preview_is_undecided(change):
    plan = load("aws-prod")
    change(plan)
    assert_undecided(run(plan, "GPU016"), "GPU016")
