"""GPU020 (team namespaces cap CPU, memory and pods; the system pool is tainted): compliant fixtures, then one changed
field per failing case; quotas are read by meaning (`cpu` is `requests.cpu`, any quantity suffix), taints in each
cloud's spelling, and both fail closed where unreadable."""
from __future__ import annotations

import pytest

from policy_fixtures import UNKNOWN, assert_undecided, drop, inputs, load, new_ids, notes, run
from policies.rules import RULES

QUOTA = "kubernetes:core/v1:ResourceQuota"


def hard(plan, team="research"):
    return inputs(plan, QUOTA, f"{team}-compute-quota")["spec"]["hard"]


def no_compute_quota(plan):
    drop(plan, QUOTA, "research-compute-quota")


def no_pod_cap(plan):
    del hard(plan)["pods"]


def no_memory_cap(plan):
    del hard(plan)["requests.memory"]


def cpu_not_a_quantity(plan):
    hard(plan)["requests.cpu"] = "lots"


def hard_not_a_map(plan):
    inputs(plan, QUOTA, "research-compute-quota")["spec"]["hard"] = ["requests.cpu=8"]


def scoped_compute_quota(plan):
    inputs(plan, QUOTA, "research-compute-quota")["spec"]["scopes"] = ["BestEffort"]


def volcano_team_without_cpu_cap(plan):
    del hard(plan, "alpha")["requests.cpu"]


def untainted_eks_system_pool(plan):
    del inputs(plan, "aws:eks/nodeGroup:NodeGroup", "ml-prod-system")["taints"]


def eks_system_pool_prefer_no_schedule(plan):
    inputs(plan, "aws:eks/nodeGroup:NodeGroup", "ml-prod-system")["taints"][0]["effect"] = "PREFER_NO_SCHEDULE"


def untainted_gke_system_pool(plan):
    inputs(plan, "gcp:container/nodePool:NodePool", "ml-dev-gke-system")["nodeConfig"]["taints"] = []


FAILING = [
    ("aws-prod", no_compute_quota, "'research' has no readable CPU, memory and pod caps (no cap on cpu, memory, pods)"),
    ("aws-prod", no_pod_cap, "(no cap on pods)"),
    ("aws-prod", no_memory_cap, "(no cap on memory)"),
    ("aws-prod", cpu_not_a_quantity, "requests.cpu: 'lots' is not a Kubernetes quantity"),
    ("aws-prod", hard_not_a_map, "research/compute-quota spec.hard is not a map"),
    ("aws-prod", scoped_compute_quota, "(no cap on cpu, memory, pods)"),
    ("gcp-dev", volcano_team_without_cpu_cap, "'alpha' has no readable CPU, memory and pod caps (no cap on cpu)"),
    ("aws-prod", untainted_eks_system_pool, "system pool 'ml-prod-system' is open to team pods (taints has no "
                                            "NoSchedule taint)"),
    ("aws-prod", eks_system_pool_prefer_no_schedule, "system pool 'ml-prod-system' is open to team pods"),
    ("gcp-dev", untainted_gke_system_pool, "system pool 'ml-dev-gke-system' is open to team pods"),
]


@pytest.mark.parametrize("fixture", ["aws-prod", "gcp-dev"])
def test_fixtures_are_compliant(fixture):
    report = run(load(fixture), "GPU020")
    assert report.findings == [] and notes(report, "GPU020", "not-applicable") == []


@pytest.mark.parametrize("fixture, change, expected", FAILING, ids=[c[1].__name__ for c in FAILING])
def test_one_changed_field_fails_exactly_gpu020(fixture, change, expected):
    plan = load(fixture)
    change(plan)
    report = run(plan, *(r.id for r in RULES))
    assert set(new_ids(report, fixture)) == {"GPU020"}
    assert any(expected in f.message for f in report.findings), [f.message for f in report.findings]
    assert report.exit_code() == 1


@pytest.mark.parametrize("spelling", [
    {"cpu": "8", "memory": "32Gi", "pods": "20"},  # the bare names Kubernetes reads as requests.*
    {"requests.cpu": "8000m", "requests.memory": "32Ki", "pods": "1e3"},  # any quantity suffix
])
def test_caps_are_read_by_meaning(spelling):
    plan = load("aws-prod")
    inputs(plan, QUOTA, "research-compute-quota")["spec"]["hard"] = spelling
    assert run(plan, "GPU020").findings == []


def test_caps_split_over_two_quotas_count():
    plan = load("aws-prod")
    caps = hard(plan)
    inputs(plan, QUOTA, "research-gpu-quota")["spec"]["hard"]["pods"] = caps.pop("pods")
    assert run(plan, "GPU020").findings == []


def test_a_cap_unknown_at_preview_is_undecided():
    plan = load("aws-prod")
    hard(plan)["requests.cpu"] = UNKNOWN
    assert_undecided(run(plan, "GPU020"), "GPU020")


def test_no_team_namespace_is_not_applicable():
    plan = load("aws-prod")
    plan["resources"] = [r for r in plan["resources"] if r["type"] not in (
        "kubernetes:core/v1:Namespace", "gpu-platform:tenancy:Team") and "ClusterQueue" not in r["type"]]
    assert notes(run(plan, "GPU020"), "GPU020", "not-applicable")


AKS = "azure-native:containerservice:ManagedCluster"


def aks_cluster(plan, node_taints):
    """The aws-prod fixture with an AKS cluster beside it, its system pool an agentPoolProfiles entry."""
    plan["resources"].append({"custom": True, "type": AKS, "name": "ml-prod-aks", "parent": None,
                              "urn": f"urn:pulumi:aws-prod::gpu-platform::{AKS}::ml-prod-aks",
                              "options": {"dependsOn": [], "ignoreChanges": [], "protect": False},
                              "inputs": {"agentPoolProfiles": [{"name": "system", "mode": "System",
                                                                "vmSize": "Standard_D8s_v5",
                                                                **({"nodeTaints": node_taints}
                                                                   if node_taints is not None else {})}]}})
    return plan


@pytest.mark.parametrize("node_taints, expected", [
    (["CriticalAddonsOnly=true:NoSchedule"], None),
    (["dedicated:NoExecute"], None),
    (None, "system pool 'ml-prod-aks agentPoolProfiles[system]' is open to team pods (nodeTaints has no NoSchedule"),
    (["CriticalAddonsOnly=true:PreferNoSchedule"], "nodeTaints has no NoSchedule taint"),
    (["CriticalAddonsOnly=true"], "has an entry that is not key=value:Effect"),  # unreadable: fails closed
])
def test_the_aks_system_pool_is_read_from_the_cluster(node_taints, expected):
    report = run(aks_cluster(load("aws-prod"), node_taints), "GPU020")
    messages = [f.message for f in report.findings]
    assert (messages == []) if expected is None else any(expected in m for m in messages), messages


def test_a_system_pool_taint_unknown_at_preview_is_undecided():
    plan = load("aws-prod")
    inputs(plan, "aws:eks/nodeGroup:NodeGroup", "ml-prod-system")["taints"] = UNKNOWN
    assert_undecided(run(plan, "GPU020"), "GPU020")
