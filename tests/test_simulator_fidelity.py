"""Simulator fidelity against real Kueue: its scheduler performance baseline scenario, at the pinned v0.19.2.

kubernetes-sigs/kueue test/performance/scheduler/configs/baseline: 5 cohorts x 6 ClusterQueues (nominal 20,
borrowingLimit 100, reclaimWithinCohort Any, withinClusterQueue LowerPriority); per queue 350 small (1 unit,
200 ms, priority 50, every 100 ms), 100 medium (5, 500 ms, 100, every 500 ms), 50 large (20, 1 s, 200, every
1.2 s). Measured on real Kueue v0.19.2 (rangespec.yaml, SchedulingEquivalenceHashing on): average ClusterQueue
usage 55.9 %, time to admission large 16.5 s, medium 76.8 s, small 215.5 s. The cycle model (cycle length, finish
latency) is calibrated on it (docs/simulator.md).
"""
from __future__ import annotations

import pytest

from gpu_platform.simulator.scenarios import (KUEUE_BASELINE_MEASURED, KUEUE_CALIBRATED, KUEUE_RANGESPEC,
                                              kueue_baseline, kueue_baseline_measured, kueue_module_dir,
                                              read_rangespec)


def test_kueue_performance_baseline_scenario():
    measured = kueue_baseline_measured()
    out = kueue_baseline(KUEUE_CALIBRATED)
    assert out["large_s"] < out["medium_s"] < out["small_s"]
    assert abs(out["usage_percent"] - measured["usage_percent"]) <= 10
    # Each class within a factor of 1.5 of the measured average (docs/simulator.md has the exact figures).
    for key in ("large_s", "medium_s", "small_s"):
        assert measured[key] / 1.5 <= out[key] <= measured[key] * 1.5, (key, out[key], measured[key])
    result = out["result"]
    assert len(result.jobs) == 15000 and all(j.finish_t is not None for j in result.jobs)


def test_the_anchor_is_the_pinned_versions_rangespec():
    root = kueue_module_dir()
    if root is None or not (root / KUEUE_RANGESPEC).is_file():
        pytest.skip("sigs.k8s.io/kueue@v0.19.2 not downloaded (go mod download); the copy in scenarios.py is used")
    measured = read_rangespec(root / KUEUE_RANGESPEC)
    assert {k: measured[k] for k in KUEUE_BASELINE_MEASURED} == KUEUE_BASELINE_MEASURED


def test_rangespec_averages_are_read_from_its_comments(tmp_path):
    path = tmp_path / "rangespec.yaml"
    path.write_text("cmd:\n  # Average value 351116.4 (+/- 0.9%), setting at +20%\n  maxWallMs: 425_000\n"
                    "clusterQueueClassesMinUsage:\n  # Average value 55.9 (+/- 1.1%)\n  # more words\n  cq: 50 #%\n"
                    "wlClassesMaxAvgTimeToAdmissionMs:\n  # Average value 16501 (+/- 13%)\n  large: 23_000\n"
                    "  medium: 90_000\n")
    assert read_rangespec(path) == {"wall_s": 351.1164, "usage_percent": 55.9, "large_s": 16.501}
