"""Simulator: Volcano semantics (proportion shares, gang plugin, preempt and reclaim actions) on small scenarios."""
from __future__ import annotations

from dataclasses import replace

import pytest

from gpu_platform.simulator import VOLCANO_TIMING, TraceJob, default_timing, load_model, simulate
from gpu_platform.simulator.engine import RUNNING

from support.simulator import run, volcano_plan


def test_model_reads_queues_actions_and_plugins():
    m = load_model(volcano_plan({"a": {"weight": 3, "capability": {"nvidia.com/gpu": "12"}, "reclaimable": False}},
                                actions="enqueue, allocate, preempt, reclaim"))
    assert m.scheduler == "volcano" and m.actions == ("enqueue", "allocate", "preempt", "reclaim")
    assert m.gang.enabled and m.placement == "binpack" and "proportion" in m.plugins
    a = m.queues["a"]
    assert (a.weight, a.capability, a.reclaimable) == (3, {"nvidia.com/gpu": 12}, False)


def test_proportion_shares_idle_capacity_by_weight():
    # 16 GPUs, weights 1 and 3, both with more demand than capacity: deserved 4 and 12.
    m = load_model(volcano_plan({"a": {"weight": 1}, "b": {"weight": 3}}))
    jobs = [*((f"a{i}", "a", 0, 1000, 1) for i in range(16)), *((f"b{i}", "b", 0, 1000, 1) for i in range(16))]
    _, sim_jobs = run(m, jobs, horizon=10)
    running = {q: sum(1 for j in sim_jobs.values() if j.queue == q and j.state == RUNNING) for q in "ab"}
    assert running == {"a": 4, "b": 12}
    # Alone, a takes everything.
    _, sim_jobs = run(m, jobs[:16], horizon=10)
    assert sum(1 for j in sim_jobs.values() if j.state == RUNNING) == 16


@pytest.mark.parametrize("gang, held_before_start", [(True, 0), (False, 8)])
def test_gang_plugin_binds_all_or_nothing(gang, held_before_start):
    # x (4 GPUs) sits on node 0 until 100; g (2 x 8) needs both nodes. With the gang plugin nothing of g is
    # bound before 100; without it one pod takes node 1 at once and holds 8 GPUs idle until g can start.
    m = load_model(volcano_plan({"a": {"weight": 1}}, gang=gang))
    result, jobs = run(m, [("x", "a", 0, 100, 4), ("g", "a", 1, 50, 16)])
    assert jobs["g"].first_start == 100
    # The team's allocated GPUs after each bind or release, up to g's start.
    held = [v for t, v in zip(result.series_t, result.series_value) if t < 100]
    assert max(held) == 4 + held_before_start


@pytest.mark.parametrize("actions, expected_b", [("enqueue, allocate, reclaim, backfill", 8),
                                                 ("enqueue, allocate, backfill", 0)])
def test_reclaim_action_gives_an_idle_queue_its_share_back(actions, expected_b):
    # a took all 16 while b was idle; b arrives: its deserved share is 8 and reclaim evicts a's jobs down to
    # a's deserved 8. Without the reclaim action b waits for a's jobs to end at 1000.
    m = load_model(volcano_plan({"a": {"weight": 1}, "b": {"weight": 1}}, actions=actions))
    jobs = [*((f"a{i}", "a", 0, 1000, 1) for i in range(16)), *((f"b{i}", "b", 10, 1000, 1) for i in range(8))]
    result, sim_jobs = run(m, jobs, horizon=100)
    assert sum(1 for j in sim_jobs.values() if j.queue == "b" and j.state == RUNNING) == expected_b
    assert len(result.preemptions) == expected_b
    assert all(p.reason == "VolcanoReclaim" and p.team == "a" for p in result.preemptions)


def test_preempt_action_evicts_lower_priority_in_the_same_queue():
    m = load_model(volcano_plan({"a": {"weight": 1}}, nodes=1, actions="enqueue, allocate, preempt, backfill"))
    result, jobs = run(m, [("low", "a", 0, 1000, 8, None, 0), ("high", "a", 5, 100, 8, None, 10)])
    assert [(p.job, p.reason) for p in result.preemptions] == [("low", "VolcanoPreempt")]
    assert jobs["high"].first_start < 10 and jobs["low"].start_t == jobs["high"].first_start + 100


def test_static_variant_caps_queues_at_their_share():
    m = load_model(volcano_plan({"a": {"weight": 1, "capability": {"nvidia.com/gpu": 8},
                                       "guarantee": {"resource": {"nvidia.com/gpu": 8}}},
                                 "b": {"weight": 1, "capability": {"nvidia.com/gpu": 8},
                                       "guarantee": {"resource": {"nvidia.com/gpu": 8}}}}))
    jobs = [(f"a{i}", "a", 0, 1000, 1) for i in range(16)]
    _, sim_jobs = run(m.static(), jobs, horizon=10)
    assert sum(1 for j in sim_jobs.values() if j.state == RUNNING) == 8


def test_proportion_allocates_only_within_deserved():
    # 16 GPUs, weights 1:1, both queues ask for more: deserved 8 each. a's jobs take 3 GPUs, b's 2. Volcano's
    # proportion allocatable is allocated + request <= deserved (proportion.go queueAllocatable), so a stops at
    # 6 and b gets 8; nobody is reclaimed. (Before: a took a third job, 9 > 8, b's last job found no room and
    # reclaimed it, a took it back the next session: a0 was reclaimed every second, without end.)
    m = load_model(volcano_plan({"a": {"weight": 1}, "b": {"weight": 1}}, actions="enqueue, allocate, reclaim"))
    jobs = [*((f"a{i}", "a", 0, 1000, 3) for i in range(8)), *((f"b{i}", "b", 0, 1000, 2) for i in range(8))]
    result, sim_jobs = run(m, jobs, horizon=500)
    assert result.preemptions == [] and result.livelock is None
    running = {q: sum(j.units for j in sim_jobs.values() if j.queue == q and j.state == RUNNING) for q in "ab"}
    assert running == {"a": 6, "b": 8}


def test_sessions_run_every_schedule_period_of_one_second():
    # Volcano's timing, not Kueue's 0.25 s cycle: wait.Until(runOnce, schedulePeriod), 1 s by default. A job
    # submitted at 0.3 s is bound by the session at 1 s, not at 0.5 s.
    m = load_model(volcano_plan({"a": {"weight": 1}}))
    assert default_timing(m) is VOLCANO_TIMING and VOLCANO_TIMING.cycle_s == 1.0
    result = simulate(m, [TraceJob("j", "a", 0.3, 10, 8)])
    assert result.jobs[0].first_start == 1.0


def test_pod_binds_go_through_the_schedulers_client():
    # Each pod bind is an API call through the scheduler's client, sent after the session: at 1 QPS with one token,
    # a 16-GPU gang (two pods of 8) bound by the session at 0 starts when its second bind goes through, at 1 s;
    # the 8-GPU job bound in the same session waits behind them, until 2 s. The nodes are taken at 0.
    m = load_model(volcano_plan({"a": {"weight": 1}}, nodes=3))
    timing = replace(VOLCANO_TIMING, api_qps=1.0, api_burst=1)
    result, jobs = run(m, [("g", "a", 0, 10, 16, None, 10), ("s", "a", 0, 10, 8, None, 0)], timing)
    assert (jobs["g"].first_start, jobs["s"].first_start) == (1.0, 2.0)
    assert max(v for t, v in zip(result.series_t, result.series_value) if t == 0.0) == 24
