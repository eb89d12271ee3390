"""Simulator fidelity against real Kueue: its scheduler performance baseline scenario, at the pinned v0.19.2.

kubernetes-sigs/kueue test/performance/scheduler/configs/baseline: 5 cohorts x 6 ClusterQueues (nominal 20,
borrowingLimit 100, reclaimWithinCohort Any, withinClusterQueue LowerPriority); per queue 350 small (1 unit,
200 ms, priority 50, every 100 ms), 100 medium (5, 500 ms, 100, every 500 ms), 50 large (20, 1 s, 200, every
1.2 s). Measured on real Kueue v0.19.2 (rangespec.yaml, SchedulingEquivalenceHashing on): average ClusterQueue
usage 55.9 %, time to admission large 16.5 s, medium 76.8 s, small 215.5 s. The cycle model (cycle length, finish
latency; API writes through the test's rate-limited client, read from its source) is calibrated on it and validated
on the large-scale scenario (docs/simulator.md).
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from gpu_platform.simulator.scenarios import (KUEUE_BASELINE_MEASURED, KUEUE_PERF_TIMING,
                                              KUEUE_LARGE_SCALE_MEASURED, KUEUE_LARGE_SCALE_RANGESPEC,
                                              KUEUE_RANGESPEC, kueue_baseline, kueue_baseline_measured,
                                              kueue_large_scale, kueue_module_dir, read_rangespec)


def test_kueue_performance_baseline_scenario():
    measured = kueue_baseline_measured()
    out = kueue_baseline(KUEUE_PERF_TIMING)
    assert out["large_s"] < out["medium_s"] < out["small_s"]
    assert abs(out["usage_percent"] - measured["usage_percent"]) <= 10
    # Each class within a factor of 1.5 of the measured average (docs/simulator.md has the exact figures).
    for key in ("large_s", "medium_s", "small_s"):
        assert measured[key] / 1.5 <= out[key] <= measured[key] * 1.5, (key, out[key], measured[key])
    result = out["result"]
    assert len(result.jobs) == 15000 and all(j.finish_t is not None for j in result.jobs)


@pytest.mark.parametrize("rangespec, copy", [(KUEUE_RANGESPEC, KUEUE_BASELINE_MEASURED),
                                              (KUEUE_LARGE_SCALE_RANGESPEC, KUEUE_LARGE_SCALE_MEASURED)])
def test_the_anchor_is_the_pinned_versions_rangespec(rangespec, copy):
    root = kueue_module_dir()
    if root is None or not (root / rangespec).is_file():
        pytest.skip("sigs.k8s.io/kueue@v0.19.2 not downloaded (go mod download); the copy in scenarios.py is used")
    measured = read_rangespec(root / rangespec)
    assert {k: measured[k] for k in copy} == copy


def test_large_scale_scenario_validates_the_admission_throughput():
    # Not calibrated on. 1,000 ClusterQueues, 50,000 workloads: the API writes through minimalkueue's 50 QPS client
    # set the pace, as in real Kueue, and admitted quota waits behind them: the admission patches Kueue sends from
    # goroutines queue up in the client while the workloads hold their quota (docs/simulator.md). Every class,
    # the run's length and usage within the bounds the baseline must meet. When each cycle waited for its
    # admission patches, large was 1.84x too soon and usage 29 points low; without the write model every class was
    # 33-45x too soon.
    measured = kueue_baseline_measured(KUEUE_LARGE_SCALE_RANGESPEC, KUEUE_LARGE_SCALE_MEASURED)
    out = kueue_large_scale(KUEUE_PERF_TIMING)
    assert len(out["result"].jobs) == 50000 and all(j.admit_t is not None for j in out["result"].jobs)
    assert out["large_s"] < out["medium_s"] < out["small_s"]
    for key in ("large_s", "medium_s", "small_s"):
        assert measured[key] / 1.5 <= out[key] <= measured[key] * 1.5, (key, out[key], measured[key])
    assert 1179.4 / 1.5 <= out["wall_s"] <= 1179.4 * 1.5, out["wall_s"]
    assert abs(out["usage_percent"] - measured["usage_percent"]) <= 10, out["usage_percent"]


def test_api_writes_set_the_pace_with_many_queues():
    # The same large-scale scenario with an unlimited client: back to a fixed cycle for every queue at once.
    out = kueue_large_scale(replace(KUEUE_PERF_TIMING, api_qps=0.0))
    assert out["small_s"] < 30 and out["wall_s"] < 60, (out["small_s"], out["wall_s"])


def test_rangespec_averages_are_read_from_its_comments(tmp_path):
    path = tmp_path / "rangespec.yaml"
    path.write_text("cmd:\n  # Average value 351116.4 (+/- 0.9%), setting at +20%\n  maxWallMs: 425_000\n"
                    "clusterQueueClassesMinUsage:\n  # Average value 55.9 (+/- 1.1%)\n  # more words\n  cq: 50 #%\n"
                    "wlClassesMaxAvgTimeToAdmissionMs:\n  # Average value 16501 (+/- 13%)\n  large: 23_000\n"
                    "  medium: 90_000\n")
    assert read_rangespec(path) == {"wall_s": 351.1164, "usage_percent": 55.9, "large_s": 16.501}
    # large-scale/rangespec.yaml's form: the mean above a limit, or after it on the same line.
    path.write_text("# 4. Set maxWallMs = mean x 1.20\ncmd:\n  # mean=1179411ms, stdev=13280ms\n  maxWallMs: 1_416_000\n"
                    "clusterQueueClassesMinUsage:\n  # mean=38.64%, mean-7% rounded down\n  cq: 31.6 #%\n"
                    "wlClassesMaxAvgTimeToAdmissionMs:\n  # mean x 1.2\n  large: 128_000   # mean=105604ms\n"
                    "  small: 841_000\n")
    assert read_rangespec(path) == {"wall_s": 1179.411, "usage_percent": 38.64, "large_s": 105.604}
