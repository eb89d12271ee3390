"""Simulator fidelity against real Kueue: its scheduler performance baseline scenario.

kubernetes-sigs/kueue test/performance/scheduler/configs/baseline: 5 cohorts x 6 ClusterQueues (nominal 20,
borrowingLimit 100, reclaimWithinCohort Any, withinClusterQueue LowerPriority); per queue 350 small (1 unit,
200 ms, priority 50, every 100 ms), 100 medium (5, 500 ms, 100, every 500 ms), 50 large (20, 1 s, 200, every
1.2 s). Measured on real Kueue: average ClusterQueue usage 58.7 %, time to admission large 6.7 s, medium 76.8 s,
small 215.5 s. The cycle model (cycle length, finish latency) was calibrated once on it (docs/simulator.md).
"""
from __future__ import annotations

from gpu_platform.simulator.scenarios import KUEUE_BASELINE_MEASURED, KUEUE_CALIBRATED, kueue_baseline


def test_kueue_performance_baseline_scenario():
    out = kueue_baseline(KUEUE_CALIBRATED)
    assert out["large_s"] < out["medium_s"] < out["small_s"]
    assert abs(out["usage_percent"] - KUEUE_BASELINE_MEASURED["usage_percent"]) <= 10
    # Each class within a factor of two of the measured average (docs/simulator.md has the exact figures).
    for key in ("large_s", "medium_s", "small_s"):
        assert KUEUE_BASELINE_MEASURED[key] / 2 <= out[key] <= KUEUE_BASELINE_MEASURED[key] * 2, key
    result = out["result"]
    assert len(result.jobs) == 15000 and all(j.finish_t is not None for j in result.jobs)
