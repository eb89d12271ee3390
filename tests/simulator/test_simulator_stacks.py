"""Simulator end to end on the example stacks: the queue model comes from their planned objects."""
from __future__ import annotations

import json

import pytest

from gpu_platform.cli import main
from gpu_platform.simulator import SimulationError, load_model
from gpu_platform.simulator.report import summarize

from support.simulator import run
from support.stacks import planned
from support.plans import plan_fixture


aws_plan = plan_fixture("aws-prod")
gcp_dev_plan = plan_fixture("gcp-dev")


def test_aws_prod_model_comes_from_the_planned_kueue_objects(aws_plan):
    m = load_model(aws_plan)
    assert m.scheduler == "kueue" and m.fair_sharing and m.warnings == ()
    assert {n: (p.nodes, p.per_node) for n, p in m.pools.items()} == {
        "h100-train": (4, {"nvidia.com/gpu": 8}), "a100-infer": (2, {"nvidia.com/gpu": 56}),
        "l4-notebooks": (4, {"nvidia.com/gpu": 16})}
    assert set(m.teams) == {"research", "applied", "serving"}
    research = m.queues["research"]
    assert research.cohort is not None and research.reclaim_within_cohort == "Any"
    assert research.quotas[("h100-train", "nvidia.com/gpu")].nominal == 16
    assert research.flavors_for("nvidia.com/gpu") == ["h100-train", "l4-notebooks"]
    assert m.gang.enabled and m.gang.timeout_s == 600
    # Jobs without a priority class run at the non-preempting global default (gpu-default), whatever the team.
    assert {t.priority for t in m.teams.values()} == {m.priorities["gpu-default"]}


def test_aws_prod_cohort_borrowing_beats_static_quotas(aws_plan):
    # applied (nominal 8 H100s, borrowingLimit 8) bursts 16 one-GPU jobs while research's 16 sit idle:
    # with the cohort all 16 run at once; with static quotas 8 run, then the other 8.
    m = load_model(aws_plan)
    jobs = [(f"j{i}", "applied", 0, 3600, 1, "h100-train") for i in range(16)]
    stack, stack_jobs = run(m, jobs)
    static, static_jobs = run(m.static(), jobs)
    assert max(j.first_start for j in stack_jobs.values()) < 60
    assert sorted(j.first_start for j in static_jobs.values())[8] >= 3600
    assert stack.end < 3700 and static.end >= 7200
    # applied's nominal is 16 GPUs' worth (8 H100s and 56 one-seventh A100 slices): the cohort lets it use
    # all of it for the whole span on H100s alone, static quotas half.
    assert summarize(stack)["teams"]["applied"]["usage_vs_nominal"] == pytest.approx(1.0, abs=0.01)
    assert summarize(static)["teams"]["applied"]["usage_vs_nominal"] == pytest.approx(0.5, abs=0.01)


def test_simulate_aws_prod_from_the_command_line(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("job_id,team,submit_s,duration_s,gpus,pool,priority\n"
                     "r1,research,0,600,8,h100-train,\nr2,research,0,600,8,h100-train,\n"
                     "a1,applied,30,600,16,h100-train,gpu-normal\ns1,serving,0,600,7,a100-infer,\n")
    out = tmp_path / "r.json"
    assert main(["simulate", "aws-prod", "--trace", str(trace), "--format", "json", "--out", str(out),
                 "--baseline", "no-gang"]) == 0
    report = json.loads(out.read_text())
    assert report["scheduler"] == "kueue" and report["baseline"]["name"] == "no-gang"
    assert report["overall"]["jobs_completed"] == 4 and report["overall"]["capacity_gpus"] == 64
    # 7 MIG slices on the A100 pool are one GPU's worth.
    assert report["teams"]["serving"]["avg_allocated_gpus"] > 0


def test_gcp_dev_volcano_model_and_run(gcp_dev_plan):
    m = load_model(gcp_dev_plan)
    assert m.scheduler == "volcano" and m.gang.enabled
    assert {"allocate", "preempt", "reclaim"} <= set(m.actions) and "capacity" in m.plugins
    assert set(m.queues) == {"alpha", "beta"}
    assert m.queues["alpha"].capability == {"nvidia.com/gpu": 6}
    result, jobs = run(m, [(f"a{i}", "alpha", 0, 100, 1, "l4-train") for i in range(8)])
    # alpha may hold at most its capability of 6 of the 8 L4s: two jobs wait for the first to end.
    assert sorted(j.first_start for j in jobs.values())[6] >= 100
    assert result.group_peaks["l4-train/nvidia.com/gpu"] == (6, 8)


def test_a_kai_stack_is_refused_naming_what_is_not_modelled():
    with pytest.raises(SimulationError, match="schedules with KAI Scheduler, which the simulator does not model "
                                              r"\(hierarchical queues.*GPU fractions and PodGroup gangs\)"):
        load_model(planned("gcp-dev", "kai"))
