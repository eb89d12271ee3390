"""Simulator invariants on random traces: never above capacity or quota (checked after every event), no job lost."""
from __future__ import annotations

import pytest

from gpu_platform.simulator import load_model
from gpu_platform.simulator.engine import Simulation, Timing, build_jobs
from gpu_platform.simulator.report import summarize
from gpu_platform.simulator.traces import synthetic
from test_simulator_model import cq, kueue_plan

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
