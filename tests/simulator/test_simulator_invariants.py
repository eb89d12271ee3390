"""Simulator invariants on random traces: never above capacity or quota (checked after every event), no job lost."""
from __future__ import annotations

import pytest

from gpu_platform.simulator import load_model
from gpu_platform.simulator.engine import Simulation, Timing, build_jobs
from gpu_platform.simulator.report import summarize
from gpu_platform.simulator.traces import synthetic

from support.simulator import cq, kueue_plan

POOLS = {"h100": (3, {"nvidia.com/gpu": 8}, 8), "l4": (2, {"nvidia.com/gpu": 16}, 4)}


def plan(fair: bool, gang: bool):
    queues = {
        "a": cq({"h100": (8, 8, None), "l4": 8}, within="LowerPriority", reclaim="Any", weight=1),
        "b": cq({"h100": (8, None, 4), "l4": 8}, within="LowerPriority", reclaim="LowerPriority", weight=2,
                borrow_within={"policy": "LowerPriority", "maxPriorityThreshold": 5}),
        "c": cq({"h100": 8, "l4": (16, 0, None)}, within="LowerOrNewerEqualPriority", reclaim="Never"),
    }
    return kueue_plan(POOLS, queues, fair=fair, pods_ready={"timeout": "5m"} if gang else None)


@pytest.mark.parametrize("seed, fair, gang, horizon", [
    (1, False, True, None), (2, True, True, None), (3, False, False, 20000.0), (4, True, False, None),
])
def test_random_traces_keep_every_invariant(seed, fair, gang, horizon):
    model = load_model(plan(fair, gang))
    trace = synthetic({"a": 2, "b": 1, "c": 1}, jobs=250, seed=seed, interarrival=40,
                      gangs={1: 0.5, 2: 0.2, 4: 0.15, 8: 0.1, 16: 0.05}, median=600, sigma=1.2)
    trace = [t.__class__(**{**t.__dict__, "priority": str(i % 3 * 5)}) for i, t in enumerate(trace)]
    jobs = build_jobs(model, trace)
    result = Simulation(model, jobs, Timing(1.0, 0.5, 30.0), horizon=horizon, check=True).run()
    o = summarize(result)["overall"]
    assert o["jobs_submitted"] == o["jobs_completed"] + o["jobs_running_at_end"] + o["jobs_pending_at_end"] == 250
    assert all(peak <= capacity for peak, capacity in result.group_peaks.values())
    assert result.checks["events"] > 500
    if horizon is None and gang:
        assert o["jobs_completed"] + o["jobs_pending_at_end"] == 250 and o["jobs_running_at_end"] == 0


def test_bench_scenario_entry_point():
    # The benchmark issue calls this with 100,000 jobs; a small run checks the shape (figures in docs/simulator.md).
    from gpu_platform.simulator import bench_scenario

    out = bench_scenario(n_jobs=300, gpus=64, queues=6, cohorts=2)
    assert out["jobs"] == out["completed"] == 300 and out["gpus"] == 64 and out["queues"] == 6
    assert out["wall_s"] < 10 and 0 < out["allocated_share"] <= 1


@pytest.mark.parametrize("fair, mixed, reclaim", [
    (False, True, "Any"), (True, True, "Any"), (False, False, "Any"), (False, "random", "Any"),
    (False, True, "LowerPriority"), (False, True, "Never"),
])
def test_fast_paths_change_no_outcome(fair, mixed, reclaim):
    # The preemption-search bound, its first try among candidates already evicting and the parking of heads until the
    # cohort has enough free are shortcuts: with them off (every head re-evaluated after any release, every search run
    # in full), every admission and eviction is the same.
    # Also with per-job priorities (three classes, or a random integer each), and when a head that lacks units still
    # holds quota back each cycle (reclaimWithinCohort not Any), which parking used to skip.
    import random
    from dataclasses import replace

    from gpu_platform.simulator.kueue.cycle import ANY_RELEASE
    from gpu_platform.simulator.kueue.preemption import Shortfall
    from gpu_platform.simulator.scenarios import DEFAULT_TIMING, bench_model, bench_trace

    model = bench_model(gpus=96, queues=6, cohorts=2)
    model = replace(model, fair_sharing=fair, queues={name: replace(q, reclaim_within_cohort=reclaim)
                                                      for name, q in model.queues.items()})
    trace = bench_trace(model, 1000, seed=3, mixed_priorities=mixed is True)
    if mixed == "random":
        rng = random.Random(1)
        trace = [replace(t, priority=rng.randint(0, 1_000_000)) for t in trace]

    def history(exhaustive: bool):
        sim = Simulation(model, build_jobs(model, trace), DEFAULT_TIMING)
        if exhaustive:
            sim.scheduler._deficit = lambda cq, job: ANY_RELEASE
            sim.scheduler._shortfall = lambda cq, job, fr, available=None: Shortfall(job, fr, 0)
            sim.scheduler._among_evicting = lambda *args: []
        events = []
        admit, evict = sim.admit, sim.evict
        sim.admit = lambda job, *a, **kw: (events.append(("admit", sim.now, job.id)), admit(job, *a, **kw))
        sim.evict = lambda job, reason, t: (events.append(("evict", t, job.id, reason)), evict(job, reason, t))
        sim.run()
        return events

    fast = history(False)
    assert len(fast) > 1000 and any(e[0] == "evict" for e in fast)
    assert fast == history(True)
