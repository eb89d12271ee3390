"""Tenancy: team namespaces, GPU ResourceQuotas in each pool's units, priority ceilings, LimitRange defaults,
RBAC, and the cluster's priority classes."""
from __future__ import annotations

import json
import re

import pytest

from components.config import validate
from components.config.model import PRIORITIES
from components.config.priority_levels import DEFAULT, LEVELS, SYSTEM_CLASSES, allowed_classes, forbidden_classes
from components.scheduling.priorities import CEILING_POLICY, WORKLOAD_PRIORITY_LABEL
from components.tenancy.team import quota_hard

from support.paths import STACKS
from support.stacks import by_name, ours, planned, stack_config, whole


def teams_of(stack: str) -> list[dict]:
    return stack_config(stack)["gpu-platform:teams"]


@pytest.mark.parametrize("stack", STACKS)
def test_namespaces_carry_the_team_labels(stack):
    plan = planned(stack, "kueue")
    for team in teams_of(stack):
        ns = by_name(plan, "Namespace")[team["name"]]["metadata"]
        ours = {k: v for k, v in ns["labels"].items() if k.startswith("gpu-platform.io/")}
        policy = ({"gpu-platform.io/pod-security-policy": f"gpu-platform-fabric-baseline-{team['name']}"}
                  if team.get("podSecurity") == "fabric-sidecar" else {})
        assert ours == {"gpu-platform.io/team": team["name"], "gpu-platform.io/priority": team.get("priority", "normal"),
                        **policy}
        assert "annotations" not in ns  # the Volcano queue annotation only with Volcano


def test_gpu_quota_is_nominal_plus_borrowing_in_advertised_units():
    plan = planned("aws-prod", "kueue")
    hard = {name.split("/")[0]: q["spec"]["hard"] for name, q in by_name(plan, "ResourceQuota").items()
            if name.endswith("/gpu-quota")}
    # research: H100 16+8, L4 time-sliced 32+8 replicas; applied: H100 8+8, A100 MIG 56+8 slices; serving: 56.
    assert hard == {"research": {"requests.nvidia.com/gpu": "64"}, "applied": {"requests.nvidia.com/gpu": "80"},
                    "serving": {"requests.nvidia.com/gpu": "56"}}


def test_mixed_mig_quota_names_every_slice_and_zeroes_what_a_team_lacks():
    hard = {name.split("/")[0]: q["spec"]["hard"] for name, q in by_name(planned("oci-prod", "kueue"),
                                                                           "ResourceQuota").items()
            if name.endswith("/gpu-quota")}
    slices = {"requests.nvidia.com/mig-1g.10gb", "requests.nvidia.com/mig-2g.20gb", "requests.nvidia.com/mig-3g.40gb"}
    assert set(hard["risk"]) == set(hard["genai"]) == slices | {"requests.nvidia.com/gpu"}
    # risk: 8 GPUs' worth of the balanced layout (2x1g, 1x2g, 1x3g per GPU), no borrowing.
    assert {k: hard["risk"][k] for k in slices} == {"requests.nvidia.com/mig-1g.10gb": "16",
                                                    "requests.nvidia.com/mig-2g.20gb": "8",
                                                    "requests.nvidia.com/mig-3g.40gb": "8"}


def test_a_team_without_a_resource_gets_zero_of_it(raw):
    raw["gpuPools"][1]["sharing"] = {"mode": "mig", "migProfile": "all-balanced"}
    raw["teams"][1]["quotas"] = {"a100-infer": 8}
    config = validate(raw)
    hard = quota_hard(config, config.teams[0])
    assert hard["requests.nvidia.com/gpu"] == "24"
    assert {v for k, v in hard.items() if "mig-" in k} == {"0"} and len(hard) == 4


def test_quota_ceiling_never_exceeds_the_pool(raw):
    raw["teams"][0]["borrowingLimit"] = 100
    config = validate(raw)
    assert quota_hard(config, config.teams[0]) == {"requests.nvidia.com/gpu": "32"}  # 4 x 8 H100s


@pytest.mark.parametrize("stack", STACKS)
def test_priority_ceiling_forbids_classes_above_the_team(stack):
    plan = planned(stack, "kueue")
    for team in teams_of(stack):
        quota = by_name(plan, "ResourceQuota")[f"{team['name']}/priority-ceiling"]["spec"]
        assert quota["hard"] == {"pods": "0"}
        (selector,) = quota["scopeSelector"]["matchExpressions"]
        assert (selector["scopeName"], selector["operator"]) == ("PriorityClass", "In")
        assert selector["values"] == forbidden_classes(team.get("priority", "normal"))


def test_priority_ceilings_by_level():
    assert forbidden_classes("critical") == list(SYSTEM_CLASSES)
    assert forbidden_classes("high") == ["gpu-critical", *SYSTEM_CLASSES]
    assert forbidden_classes("low") == ["gpu-critical", "gpu-high", "gpu-normal", *SYSTEM_CLASSES]
    for priority in PRIORITIES:
        assert sorted(allowed_classes(priority) + forbidden_classes(priority)[:-2]) == sorted(
            lv.name for lv in LEVELS.values())


@pytest.mark.parametrize("stack", STACKS)
def test_limit_range_sets_cpu_and_memory_requests_only(stack):
    plan = planned(stack, "kueue")
    for team in teams_of(stack):
        (limit,) = by_name(plan, "LimitRange")[f"{team['name']}/defaults"]["spec"]["limits"]
        assert limit == {"type": "Container", "defaultRequest": {"cpu": "500m", "memory": "1Gi"}}


@pytest.mark.parametrize("stack", STACKS)
def test_groups_get_edit_in_their_namespace_only(stack):
    plan = planned(stack, "kueue")
    bindings = by_name(plan, "RoleBinding")
    for team in teams_of(stack):
        name = f"{team['name']}/team-edit"
        if not team.get("groups"):
            assert name not in bindings
            continue
        binding = bindings[name]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}
        assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}
                                       for g in team["groups"]]
    cluster_wide = [r for r in ours(plan) if "ClusterRoleBinding" in r.type]
    assert cluster_wide == []


def test_team_component_records_its_quota():
    plan = planned("aws-prod", "kueue")
    team = next(r for r in plan.resources if r.type == "gpu-platform:tenancy:Team" and r.name == "research")
    assert team.inputs["gpuQuota"] == {"requests.nvidia.com/gpu": "64"}
    assert (team.inputs["priority"], team.inputs["groups"]) == ("high", ["research-admins"])


def test_priority_classes_are_ordered_and_only_the_top_two_preempt():
    classes = {name: whole(pc) for name, pc in by_name(planned("aws-prod", "kueue"), "PriorityClass").items()}
    order = ["gpu-critical", "gpu-high", "gpu-normal", "gpu-low", "gpu-default"]
    values = [classes[n]["value"] for n in order]
    assert values == sorted(values, reverse=True) and len(set(values)) == 5 and values[0] < 1_000_000_000
    assert {n: classes[n]["preemptionPolicy"] for n in order} == {
        "gpu-critical": "PreemptLowerPriority", "gpu-high": "PreemptLowerPriority", "gpu-normal": "Never",
        "gpu-low": "Never", "gpu-default": "Never"}
    assert [n for n in order if classes[n]["globalDefault"]] == [DEFAULT.name]
    assert classes[DEFAULT.name]["value"] == 0


def test_one_priority_level_per_team_priority():
    assert tuple(LEVELS) == PRIORITIES


def test_admission_policy_holds_kueue_labels_and_podgroups_to_the_ceiling():
    plan = planned("aws-prod", "volcano")
    policy = by_name(plan, "ValidatingAdmissionPolicy")[CEILING_POLICY]["spec"]
    binding = by_name(plan, "ValidatingAdmissionPolicyBinding")[CEILING_POLICY]["spec"]
    assert binding == {"policyName": CEILING_POLICY, "validationActions": ["Deny"]}
    assert policy["failurePolicy"] == "Fail"
    assert policy["matchConstraints"]["namespaceSelector"] == {
        "matchExpressions": [{"key": "gpu-platform.io/team", "operator": "Exists"}]}
    assert policy["matchConstraints"]["resourceRules"][0]["scope"] == "Namespaced"
    (variable,) = policy["variables"]
    table, key = re.fullmatch(r"(\{.*\})\[namespaceObject\.metadata\.labels\[(.*)\]\]", variable["expression"]).groups()
    assert json.loads(key) == "gpu-platform.io/priority"
    assert json.loads(table) == {p: forbidden_classes(p) for p in PRIORITIES}
    label_rule, *template_rules, _wrapped = (v["expression"] for v in policy["validations"])
    assert f'object.metadata.labels["{WORKLOAD_PRIORITY_LABEL}"] in variables.forbidden' in label_rule
    (podgroup_rule,) = [r for r in template_rules if '"PodGroup"' in r]
    assert "object.spec.priorityClassName in variables.forbidden" in podgroup_rule
