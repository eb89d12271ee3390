"""KAI Scheduler (`scheduler.kind: kai`): the chart release, the department and team Queues sized from `teams[]`,
Topologies for topology-aware pools, and conformance with the v0.17.0 CRDs in ../shared/upstream/kai-scheduler.
The rendered chart is validated with the other charts in test_helm_render.py (variant aws-prod+kai)."""
from __future__ import annotations

import copy

import pytest

from components.config import ConfigError, validate
from components.pins import PINS
from components.scheduling.kai import component as kai
from components.scheduling.kai.facts import DEPARTMENT
from components.scheduling.kai.queues import team_gpus
from components.system_pool import SYSTEM_TOLERATION
from components.tenancy.queue_gate import POLICY as QUEUE_GATE
from gpu_platform.engine import plan_stack
from gpu_platform.engine.markdown import render_markdown
from gpu_platform.engine.mermaid import render_mermaid
from gpu_platform.engine.platform_view import platform_view

from support.paths import STACKS
from support.scheduling import checked_queues
from support.stacks import by_name, crd_errors, objects, ours, planned, stack_config, whole, with_scheduler

QUEUE_CRD = "kai-scheduler/crds/scheduling.run.ai_queues.yaml"
TOPOLOGY_CRD = "kai-scheduler/crds/kai.scheduler_topologies.yaml"


def queues(plan) -> dict[str, dict]:
    return {name: whole(q["spec"]) for name, q in by_name(plan, "Queue").items()}


def release(plan):
    return next(r.inputs for r in ours(plan) if r.type == "kubernetes:helm.sh/v3:Release")


def test_every_queue_validates_against_the_kai_crd():
    checked = checked_queues("kai", STACKS, QUEUE_CRD, "v2", "scheduling.run.ai/v2")
    assert checked == sum(len(stack_config(s)["gpu-platform:teams"]) + 1 for s in STACKS)  # + the department
    assert crd_errors(QUEUE_CRD, "v2", {"apiVersion": kai.API, "kind": "Queue", "metadata": {"name": "q"},
                                        "spec": {"resources": {"gpus": {"quota": 1}}}})  # strictness bites


def test_aws_prod_as_kai_maps_quota_borrowing_weight_and_priority():
    qs = queues(planned("aws-prod", "kai"))
    # research: 48 time-sliced replicas (2 per GPU) on h100 = 24 GPUs, plus a borrowingLimit capped by the pool.
    assert qs["research"]["parentQueue"] == DEPARTMENT
    assert qs["research"]["resources"]["gpu"] == {"quota": 24, "limit": 34, "overQuotaWeight": 24}
    assert qs["serving"]["resources"]["gpu"] == {"quota": 8, "limit": 8, "overQuotaWeight": 8}  # no borrowing
    assert qs["serving"]["priority"] > qs["research"]["priority"] > qs["applied"]["priority"]
    for q in qs.values():  # only GPUs are queued
        assert q["resources"]["cpu"] == q["resources"]["memory"] == {"quota": -1, "limit": -1, "overQuotaWeight": 1}


@pytest.mark.parametrize("stack", STACKS)
def test_the_department_guarantees_what_its_teams_are_guaranteed(stack):
    qs = queues(planned(stack, "kai"))
    department = qs.pop(DEPARTMENT)
    assert "parentQueue" not in department
    assert set(qs) == {t["name"] for t in stack_config(stack)["gpu-platform:teams"]}
    assert all(q["parentQueue"] == DEPARTMENT for q in qs.values())
    for key in ("quota", "limit"):
        assert department["resources"]["gpu"][key] == pytest.approx(sum(q["resources"]["gpu"][key]
                                                                        for q in qs.values()))
    assert all(q["resources"]["gpu"]["quota"] <= q["resources"]["gpu"]["limit"] for q in qs.values())


def test_mig_quota_counts_whole_gpu_equivalents(raw):
    raw["scheduler"] = {"kind": "kai"}
    config = validate(raw)
    serving = next(t for t in config.teams if t.name == "serving")
    # 56 1g.10gb slices at 7 per A100 = 8 GPUs; two teams share a cohort but serving sets no borrowingLimit.
    assert team_gpus(config, serving) == (8, 8)


def test_release_is_pinned_without_a_catch_all_queue():
    plan = planned("aws-dev", "kai")
    inputs = release(plan)
    assert (inputs["chart"], inputs["version"], inputs["namespace"]) == (kai.CHART, PINS["kai-scheduler"].version,
                                                                         "kai-scheduler")
    assert inputs["values"]["defaultQueue"] == {"createDefaultQueue": False}
    assert inputs["values"]["defaultPriorityClasses"] == {"enabled": False}


def test_fractions_are_offered_where_pools_share_gpus():
    assert release(planned("aws-prod", "kai"))["values"]["global"]["gpuSharing"] is True  # time-slicing pool
    sharing = {p["name"]: (p.get("sharing") or {}).get("mode", "none")
               for p in stack_config("gcp-dev")["gpu-platform:gpuPools"]}
    assert set(sharing.values()) <= {"none", "mig"}
    assert release(planned("gcp-dev", "kai"))["values"]["global"]["gpuSharing"] is False


def test_kai_components_tolerate_the_system_pool():
    # global.tolerations reach the operator, its hook Jobs and the Config CR the operator deploys from.
    assert release(planned("aws-prod", "kai"))["values"]["global"]["tolerations"] == [SYSTEM_TOLERATION]


def test_topology_aware_pools_get_a_kai_topology():
    pools = copy.deepcopy(stack_config("aws-prod")["gpu-platform:gpuPools"])
    next(p for p in pools if p["name"] == "h100-train")["topology"] = True
    plan = plan_stack("aws-prod", config_overrides={**with_scheduler("aws-prod", "kai"),
                                                    "gpu-platform:gpuPools": pools})
    topologies = objects(plan, "Topology")
    assert [t["apiVersion"] for t in topologies] == ["kai.scheduler/v1alpha1"]
    assert crd_errors(TOPOLOGY_CRD, "v1alpha1", topologies[0]) == []
    assert topologies[0]["spec"]["levels"][-1] == {"nodeLabel": "kubernetes.io/hostname"}


@pytest.mark.parametrize("change, path, message", [
    (lambda r: r["teams"].append({"name": DEPARTMENT, "quotas": {"h100-train": 1}}), "teams[2].name",
     "KAI Scheduler's own gpu-platform queue"),
    (lambda r: r["teams"][0].update(reclaim=True), "teams[0].reclaim",
     "the reclaimer cannot act through KAI Scheduler; needs scheduler.kind: kueue or scheduler.kind: volcano"),
    (lambda r: r["scheduler"].update(frameworks=["jobset"]), "scheduler.frameworks", "scheduler.kind: kueue"),
])
def test_what_kai_cannot_do_is_refused_with_its_path(raw, change, path, message):
    raw["scheduler"] = {"kind": "kai"}
    change(raw)
    with pytest.raises(ConfigError) as err:
        validate(raw)
    assert any(path in str(p) and message in str(p) for p in err.value.problems), err.value.problems


# --- what holds a team's pods to its queue, preemptibility, and the platform view -----------------------------------

def test_waiting_classes_are_preemptible_under_kai_and_unchanged_under_the_others():
    """KAI keeps classes valued 100 or more within quota and never preempts them: normal and low (the classes that
    wait rather than evict) drop below 100 so they may borrow and be reclaimed; the order of all five stays."""
    values = {name: pc["value"] for name, pc in by_name(planned("aws-prod", "kai"), "PriorityClass").items()}
    assert values["gpu-critical"] > values["gpu-high"] >= 100 > values["gpu-normal"] > values["gpu-low"] > \
        values["gpu-default"] == 0
    assert {pc["metadata"]["name"]: pc["value"] for pc in objects(planned("aws-prod", "kueue"), "PriorityClass")} == \
        {"gpu-critical": 1_000_000, "gpu-high": 100_000, "gpu-normal": 10_000, "gpu-low": 1_000, "gpu-default": 0}


def gate(plan) -> dict:
    (policy,) = [p for p in objects(plan, "ValidatingAdmissionPolicy") if p["metadata"]["name"] == QUEUE_GATE]
    return policy["spec"]


def test_the_queue_gate_holds_every_gpu_pod_to_kai_and_the_teams_queue():
    spec = gate(planned("gcp-dev", "kai"))
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"]["resourceRules"][0]["resources"] == ["*"]  # top owners of any kind
    text = " ".join(v["expression"] for v in spec["validations"])
    assert '"kai-scheduler"' in text and '"kai.scheduler/queue"' in text and "object.spec.queue" in text
    assert not any("schedulingGates" in v["expression"] for v in spec["variables"])


def test_a_kai_plan_shows_each_teams_queue_and_who_may_borrow():
    plan = planned("aws-prod", "kai")
    view = platform_view(plan)
    assert view.scheduler == "kai" and not view.cohorts
    qs = queues(plan)
    for team in view.teams:
        gpu = qs[team.name]["resources"]["gpu"]
        assert team.queue == f"KAI Queue {team.name} (under {DEPARTMENT})"
        (quota,) = team.quotas
        assert (quota.resource, float(quota.nominal), quota.unit) == ("gpu", gpu["quota"], "GPUs")
        assert float(quota.borrowing) == pytest.approx(gpu["limit"] - gpu["quota"])
    borrowers = {b for b, _, _ in view.borrowing()}
    assert borrowers == {t.name for t in view.teams if float(t.quotas[0].borrowing) > 0} and borrowers
    markdown, picture = render_markdown(plan), render_mermaid(plan)
    assert all(f"KAI Queue {t.name}" in markdown and f"KAI Queue {t.name}" in picture for t in view.teams)
