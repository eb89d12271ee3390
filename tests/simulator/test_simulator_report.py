"""Simulator: report metrics on a hand-computed run, output formats, and the `simulate` command (exit codes)."""
from __future__ import annotations

import json

import pytest

from gpu_platform.cli import main
from gpu_platform.simulator import load_model
from gpu_platform.simulator.report import build_report, jain, percentile, render_html, render_table, summarize

from support.simulator import cq, kueue_plan, run

PLAN = kueue_plan({"p": (1, {"nvidia.com/gpu": 8}, 8)}, {"a": cq({"p": 4}), "b": cq({"p": 4})})


def test_percentiles_and_jain():
    assert percentile([1, 2, 3, 4], 50) == 2 and percentile([1, 2, 3, 4], 99) == 4 and percentile([], 50) is None
    assert jain([1, 1, 1, 1]) == 1 and jain([1, 0, 0, 0]) == 0.25 and jain([]) is None


def test_metrics_of_a_hand_computed_run():
    # a runs 8 GPUs (4 borrowed) from 0 to 100; b's 4-GPU job arrives at 50 and waits (no reclaim) until 100,
    # then runs to 200. Capacity 8, span 0-200.
    model = load_model(PLAN)
    result, _ = run(model, [("a1", "a", 0, 100, 8), ("b1", "b", 50, 100, 4)])
    s = summarize(result)
    o = s["overall"]
    assert (o["jobs_submitted"], o["jobs_completed"], o["jobs_pending_at_end"]) == (2, 2, 0)
    assert o["allocated_share"] == pytest.approx((8 * 100 + 4 * 100) / (8 * 200))
    assert o["queue_delay_p50_s"] == 0 and o["queue_delay_p99_s"] == 50
    assert s["teams"]["a"]["allocated_share"] == 0.5 and s["teams"]["b"]["allocated_share"] == 0.25
    assert s["teams"]["a"]["usage_vs_nominal"] == 1.0  # 8 GPUs for half the span on a nominal 4
    # b waited 50 s for 4 GPUs it could use while... nothing was idle: a held all 8.
    assert o["idle_gpu_minutes_while_pending"] == 0
    # Normalised by nominal: a 4/4, b 2/4 -> Jain (1.5^2) / (2 * 1.25) = 0.9.
    assert o["jain_fairness"] == 0.9
    assert o["queue_delay_by_gang"] == {"3-4": {"jobs": 1, "p50_s": 50.0, "p95_s": 50.0, "p99_s": 50.0},
                                        "5-8": {"jobs": 1, "p50_s": 0.0, "p95_s": 0.0, "p99_s": 0.0}}
    assert s["series"]["allocated_gpus"]["a"][0] == 8 and s["series"]["allocated_gpus"]["a"][-1] == 0
    assert s["pools"] == {"p": {"capacity_gpus": 8, "allocated_share": 0.75, "idle_gpu_minutes_while_pending": 0}}


def test_idle_gpus_while_jobs_wait_are_counted():
    # Static quota 4 each: a's 8-GPU job never fits; 8 GPUs stay idle the whole 100 s while it waits...
    # and b's 2-GPU job runs 100 s: idle = min(8 - 2, 8) for 100 s, then 8 until the end (nothing else ends).
    model = load_model(PLAN).static()
    result, _ = run(model, [("a1", "a", 0, 100, 8), ("b1", "b", 0, 100, 2)], horizon=200)
    o = summarize(result)["overall"]
    assert o["jobs_pending_at_end"] == 1
    assert o["idle_gpu_minutes_while_pending"] == pytest.approx((6 * 100 + 8 * 100) / 60, abs=0.1)
    # A job submitted after the horizon is not counted as submitted, nor waiting.
    result, _ = run(model, [("a1", "a", 0, 100, 8), ("b1", "b", 0, 100, 2), ("late", "b", 500, 10, 1)],
                    horizon=200)
    o = summarize(result)["overall"]
    assert (o["jobs_submitted"], o["jobs_after_horizon"], o["queue_delay_p50_s"]) == (2, 1, 0)
    assert summarize(result)["pools"]["p"]["idle_gpu_minutes_while_pending"] == o["idle_gpu_minutes_while_pending"]


def test_report_shape_table_and_html():
    model = load_model(PLAN)
    jobs = [("a1", "a", 0, 100, 8), ("b1", "b", 50, 100, 4)]
    result, _ = run(model, jobs)
    base, _ = run(model.static(), jobs)
    report = build_report(result, base, {"stack": "test", "trace_name": "t.csv", "scheduler": "kueue",
                                         "cycle_s": 1.0, "baseline": "static"})
    for part in (report, report["baseline"]):
        assert {"allocated_share", "jobs_submitted", "jobs_completed", "jobs_pending_at_end"} <= set(part["overall"])
        assert {"queue_delay_p50_s", "allocated_share"} <= set(part["teams"]["a"])
    assert report["baseline"]["name"] == "static"
    table = render_table(report)
    assert "allocated share of capacity" in table and "baseline: static" in table and "team a" in table
    page = render_html(report, result, base)
    assert page.count("<svg") == 2 and "<polyline" in page and "a (stack)" in page and "a (static)" in page
    json.dumps(report)


@pytest.fixture
def plan_file(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(PLAN))
    return path


def test_simulate_command_json(plan_file, tmp_path, capsys):
    trace = tmp_path / "trace.csv"
    trace.write_text("job_id,team,submit_s,duration_s,gpus\nj1,a,0,100,8\nj2,b,50,100,4\n")
    out = tmp_path / "report.json"
    assert main(["simulate", "--plan", str(plan_file), "--trace", str(trace), "--format", "json",
                 "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    # Borrowing lets a's 8-GPU job run at all; with static quotas of 4 it never can.
    assert report["overall"]["jobs_completed"] == 2 and report["baseline"]["overall"]["jobs_pending_at_end"] == 1
    assert report["teams"]["a"]["jobs_completed"] == 1
    assert report["baseline"]["teams"]["a"]["jobs_completed"] == 0


@pytest.mark.parametrize("content, message", [
    ("j1,a,0,100,8\nj2,b,fifty,100,4\n", "trace.csv:2: submit_s must be a number"),
    ("j1,nobody,0,100,8\n", "trace team(s) nobody match no stack team"),
    ("j1,a,0,100,8,h200\n", "pool 'h200' is not a pool or flavor of queue a"),
    ("j1,a,0,100,8,,urgent\n", "unknown priority 'urgent'"),
])
def test_simulate_command_rejects_bad_traces_with_exit_2(plan_file, tmp_path, capsys, content, message):
    trace = tmp_path / "trace.csv"
    trace.write_text(content)
    assert main(["simulate", "--plan", str(plan_file), "--trace", str(trace)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_simulate_command_rejects_bad_node_overrides(plan_file, capsys):
    assert main(["simulate", "--plan", str(plan_file), "--trace", "synthetic:jobs=5", "--nodes", "p=two"]) == 2
    assert "--nodes 'p=two': expected POOL=N" in capsys.readouterr().err


def test_malformed_trace_exits_2_without_traceback_as_a_module(plan_file, tmp_path):
    # `python -m gpu_platform.cli` runs the CLI as __main__: the error must still be a clean exit 2.
    import subprocess
    import sys

    from support.paths import ROOT

    trace = tmp_path / "trace.csv"
    trace.write_text("j1,a,0,100,8\nj2,b,later,100,4\n")
    proc = subprocess.run([sys.executable, "-m", "gpu_platform.cli", "simulate", "--plan", str(plan_file),
                           "--trace", str(trace)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "trace.csv:2: submit_s must be a number from 0 to 3.1536e+08, got 'later'" in proc.stderr
    assert "Traceback" not in proc.stderr
