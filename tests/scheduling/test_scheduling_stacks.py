"""Teams and scheduling on every example stack, with Kueue and with Volcano: what each plan contains, that core
objects are valid Kubernetes, and that adding a team renames nothing.

Plans are cached per (stack, scheduler) for the whole session; the other test_scheduling_* and test_tenancy
modules read them from here.
"""
from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest

from components.clouds.facts import DEFAULT_KUBERNETES_VERSION
from gpu_platform.engine import Plan, plan_stack

from support.paths import STACKS
from support.stacks import by_name, objects, ours, planned, stack_config, whole, with_scheduler

KINDS = ("kueue", "volcano")
CORE_TYPES = {
    "kubernetes:core/v1:Namespace", "kubernetes:core/v1:ResourceQuota", "kubernetes:core/v1:LimitRange",
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "kubernetes:scheduling.k8s.io/v1:PriorityClass",
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding",
}


def all_plans() -> list[tuple[str, str, Plan]]:
    return [(stack, kind, planned(stack, kind)) for stack in STACKS for kind in KINDS]


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_example_stack_plans_teams_and_queues(stack, kind):
    plan = planned(stack, kind)
    teams = [t["name"] for t in stack_config(stack)["gpu-platform:teams"]]
    namespaces = by_name(plan, "Namespace")
    assert sorted(namespaces) == sorted(teams)
    assert sorted(by_name(plan, "ResourceQuota")) == sorted(
        f"{t}/{q}" for t in teams for q in ("gpu-quota", "compute-quota", "priority-ceiling"))
    assert sorted(by_name(plan, "PriorityClass")) == ["gpu-critical", "gpu-default", "gpu-high", "gpu-low",
                                                      "gpu-normal"]
    releases = [r for r in ours(plan) if r.type == "kubernetes:helm.sh/v3:Release"]
    assert [r.inputs["name"] for r in releases] == [kind]
    if kind == "kueue":
        assert sorted(by_name(plan, "ClusterQueue")) == sorted(teams)
        assert sorted(by_name(plan, "LocalQueue")) == sorted(f"{t}/default" for t in teams)
        assert objects(plan, "Queue") == []
    else:
        assert sorted(by_name(plan, "Queue")) == sorted(teams)
        assert objects(plan, "ClusterQueue") == [] and objects(plan, "ResourceFlavor") == []
    assert plan.outputs["scheduling"]["kind"] == kind
    assert sorted(plan.outputs["scheduling"]["teams"]) == sorted(teams)


def test_example_stacks_cover_both_schedulers():
    kinds = {(stack_config(s).get("gpu-platform:scheduler") or {}).get("kind", "kueue") for s in STACKS}
    assert kinds == {"kueue", "volcano"}


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("kind", KINDS)
def test_core_objects_are_valid_kubernetes(stack, kind):
    checked = 0
    for resource in ours(planned(stack, kind)):
        if resource.type in CORE_TYPES:
            kubernetes_validate.validate(whole(resource.inputs), DEFAULT_KUBERNETES_VERSION, strict=True)
            checked += 1
    teams = len(stack_config(stack)["gpu-platform:teams"])
    assert checked >= 7 + 4 * teams  # priority classes and ceiling policy; namespace, two quotas, LimitRange per team


def test_scheduler_objects_wait_for_their_release():
    for _, kind, plan in all_plans():
        release = next(r.urn for r in ours(plan) if r.type == "kubernetes:helm.sh/v3:Release")
        custom = [r for r in ours(plan)
                  if r.type.startswith(("kubernetes:kueue.x-k8s.io", "kubernetes:scheduling.volcano"))]
        assert custom and all(release in r.options["dependsOn"] for r in custom)


def test_team_objects_live_in_the_team_namespace_and_follow_it():
    plan = planned("aws-prod", "kueue")
    namespace_urns = {r.inputs["metadata"]["name"]: r.urn for r in ours(plan)
                      if r.type == "kubernetes:core/v1:Namespace"}
    for resource in ours(plan):
        namespace = resource.inputs.get("metadata", {}).get("namespace")
        if namespace:
            assert namespace_urns[namespace] in resource.options["dependsOn"], resource.urn


def test_namespaces_are_protected_in_production_only():
    prod = [r for r in ours(planned("aws-prod", "kueue")) if r.type == "kubernetes:core/v1:Namespace"]
    dev = [r for r in ours(planned("aws-dev", "kueue")) if r.type == "kubernetes:core/v1:Namespace"]
    assert prod and all(r.options["protect"] for r in prod)
    assert dev and not any(r.options["protect"] for r in dev)


def _added_team_overrides(stack: str, kind: str) -> dict[str, Any]:
    config = stack_config(stack)
    teams = copy.deepcopy(config["gpu-platform:teams"])
    # Put the new team first: names must not depend on a team's position either.
    teams.insert(0, {"name": "newcomers", "quotas": {"l4-notebooks": 8}, "priority": "low", "groups": ["new"]})
    return {**with_scheduler(stack, kind), "gpu-platform:teams": teams}


@pytest.mark.parametrize("kind", KINDS)
def test_adding_a_team_renames_nothing(kind):
    before = planned("aws-prod", kind)
    after = plan_stack("aws-prod", config_overrides=_added_team_overrides("aws-prod", kind))

    def names(plan: Plan) -> dict[str, tuple]:
        return {r.urn: (r.inputs.get("metadata", {}).get("namespace"), r.inputs.get("metadata", {}).get("name"),
                        r.inputs.get("name")) for r in ours(plan)}

    old, new = names(before), names(after)
    assert set(old) <= set(new), sorted(set(old) - set(new))
    assert {urn: new[urn] for urn in old} == old
    added = set(new) - set(old)
    assert added and all("newcomers" in urn for urn in added)
