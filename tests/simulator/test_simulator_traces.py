"""Simulator: trace readers (CSV, Gavel Philly-derived on ../shared/traces), synthetic generator, team mapping."""
from __future__ import annotations

import json
import statistics

import pytest

from gpu_platform.simulator import SimulationError
from gpu_platform.simulator.traces import (map_teams, parse_csv, parse_synthetic, read_gavel, read_runtimes,
                                           read_team_map, synthetic)

from support.paths import SHARED

TRACES = SHARED / "traces"


def traces(relative: str):
    path = TRACES / relative
    if not path.exists():
        pytest.skip(f"../shared/traces not present ({path}): the trace readers are checked on the shared traces")
    return path


def test_csv_with_and_without_header():
    jobs = parse_csv(["# a comment", "", "j1,research,0,3600,8", "j2,applied,60.5,100,1,h100-train,high"])
    assert [(j.job_id, j.team, j.submit_s, j.duration_s, j.units) for j in jobs] == [
        ("j1", "research", 0, 3600, 8), ("j2", "applied", 60.5, 100, 1)]
    assert (jobs[1].pool, jobs[1].priority) == ("h100-train", "high")
    reordered = parse_csv(["team,job_id,gpus,submit_s,duration_s,priority", "serving,x,2,5,10,100"])
    assert (reordered[0].job_id, reordered[0].units, reordered[0].priority) == ("x", 2, "100")


def test_csv_pool_may_name_a_resource():
    jobs = parse_csv(["a,t,0,1,1,a100-infer/mig-1g.10gb", "b,t,0,1,1,nvidia.com/mig-3g.40gb"])
    assert (jobs[0].pool, jobs[0].resource) == ("a100-infer", "nvidia.com/mig-1g.10gb")
    assert (jobs[1].pool, jobs[1].resource) == (None, "nvidia.com/mig-3g.40gb")


@pytest.mark.parametrize("lines, message", [
    (["j1,a,0,10"], r"trace:1: expected 5 to 7 comma-separated fields"),
    (["j1,a,0,10,1", "j2,a,soon,10,1"], r"trace:2: submit_s must be a number from 0 to 3.1536e\+08, got 'soon'"),
    (["j1,a,0,-5,1"], r"trace:1: duration_s must be a number from 0 to"),
    (["j1,a,0,10,0"], r"trace:1: gpus must be a whole number from 1 to 1000000, got '0'"),
    (["j1,a,0,10,1.5"], r"trace:1: gpus must be a whole number from 1 to 1000000, got '1.5'"),
    (["j1,a,0,10,1", "# x", "j1,b,0,10,1"], r"trace:3: job_id 'j1' repeats line 1"),
    (["j1,,0,10,1"], r"trace:1: team is empty"),
    (["job_id,team,when,duration_s,gpus"], r"trace:1: header must name columns .*unknown: when"),
    (["# nothing"], r"trace: no jobs in trace"),
])
def test_malformed_csv_names_the_line(lines, message):
    with pytest.raises(SimulationError, match=message):
        parse_csv(lines)


def test_gavel_reader_on_the_shared_philly_traces():
    folder = traces("gavel-philly-derived/seed=0")
    runtimes = traces("philly-runtimes/philly_runtime.csv")
    jobs = read_gavel(folder, runtimes, seed=1)
    lines = sum(1 for f in folder.glob("*.trace") for line in f.read_text().splitlines() if line.strip())
    assert len(jobs) == lines == 15264
    assert len({j.team for j in jobs}) == 15
    sizes = {j.units for j in jobs}
    assert {1, 2, 4, 8, 16, 32, 64} <= sizes
    assert sum(1 for j in jobs if j.units == 1) == 10480
    pool = set(read_runtimes(runtimes))
    assert all(j.duration_s in pool for j in jobs)
    # Reproducible per seed, different across seeds; arrivals and gang sizes never change.
    again = read_gavel(folder, runtimes, seed=1)
    other = read_gavel(folder, runtimes, seed=2)
    assert [j.duration_s for j in again] == [j.duration_s for j in jobs]
    assert [j.duration_s for j in other] != [j.duration_s for j in jobs]
    assert [(j.submit_s, j.units) for j in other] == [(j.submit_s, j.units) for j in jobs]
    # The draws follow Philly's heavy tail (p50 1,186 s over all 83,154 runtimes).
    assert 600 < statistics.median(j.duration_s for j in jobs) < 2400


def test_gavel_finds_the_runtimes_next_to_the_trace_folder():
    folder = traces("gavel-philly-derived/seed=0")
    traces("philly-runtimes/philly_runtime.csv")
    assert len(read_gavel(folder / "795a4c.trace", seed=0)) == 3


def test_malformed_gavel_trace_names_the_line(tmp_path):
    runtimes = tmp_path / "runtimes.csv"
    runtimes.write_text("runtime\n10\n20\n")
    trace = tmp_path / "t1.trace"
    trace.write_text("ResNet\tcmd\t-n\t1\t100\t0.0\t1\nResNet\tcmd\t-n\t1\t100\tlater\t2\n")
    with pytest.raises(SimulationError, match=r"t1.trace:2: arrival_time must be a number"):
        read_gavel(trace, runtimes)
    trace.write_text("ResNet\tcmd\t1\n")
    with pytest.raises(SimulationError, match=r"t1.trace:1: expected 7 tab-separated fields"):
        read_gavel(trace, runtimes)
    runtimes.write_text("runtime\nfast\n")
    with pytest.raises(SimulationError, match=r"runtimes.csv:2: runtime must be a number"):
        read_runtimes(runtimes)


def test_synthetic_generator_is_reproducible_and_heavy_tailed():
    jobs = synthetic({"a": 3, "b": 1}, jobs=4000, seed=7, interarrival=60, gangs={1: 0.5, 8: 0.5}, median=1000,
                     sigma=1.5)
    assert jobs == synthetic({"a": 3, "b": 1}, jobs=4000, seed=7, interarrival=60, gangs={1: 0.5, 8: 0.5},
                             median=1000, sigma=1.5)
    share_a = sum(1 for j in jobs if j.team == "a") / len(jobs)
    assert 0.72 < share_a < 0.78
    assert {j.units for j in jobs} == {1, 8}
    assert 55 < jobs[-1].submit_s / len(jobs) < 65
    durations = sorted(j.duration_s for j in jobs)
    p50, p99 = durations[len(durations) // 2], durations[int(len(durations) * 0.99)]
    assert 850 < p50 < 1150 and p99 / p50 > 15


def test_synthetic_spec_string():
    jobs = parse_synthetic("synthetic:jobs=50,interarrival=10,gangs=1:1/4:1,teams=x/y,pool=h100-train", ["z"], 3)
    assert len(jobs) == 50 and {j.team for j in jobs} <= {"x", "y"} and {j.pool for j in jobs} == {"h100-train"}
    weighted = parse_synthetic("synthetic:jobs=400,teams=x:3/y:1", ["z"], 3)
    assert 0.7 < sum(1 for j in weighted if j.team == "x") / 400 < 0.8
    with pytest.raises(SimulationError, match="unknown synthetic trace option 'size'"):
        parse_synthetic("synthetic:size=3", ["z"], 0)


def test_team_mapping_by_name_file_and_auto(tmp_path):
    jobs = parse_csv(["1,research,0,1,1", "2,x1,0,1,1", "3,x2,0,1,1"])
    with pytest.raises(SimulationError, match=r"trace team\(s\) x1, x2 match no stack team"):
        map_teams(jobs, ["research", "applied"], None)
    assert [j.team for j in map_teams(jobs, ["research", "applied"], "auto")] == ["research", "research", "applied"]
    mapping = tmp_path / "teams.yaml"
    mapping.write_text("x1: research\nx2: applied\n")
    assert [j.team for j in map_teams(jobs, ["research", "applied"], read_team_map(mapping))] == [
        "research", "research", "applied"]
    csv_map = tmp_path / "teams.csv"
    csv_map.write_text("x1,applied\nx2\n")
    with pytest.raises(SimulationError, match=r"teams.csv:2: expected trace_team,stack_team"):
        read_team_map(csv_map)


def test_auto_deals_a_trace_team_only_to_stack_teams_with_quota_on_its_pools():
    jobs = parse_csv(["1,x1,0,1,1,h100", "2,x2,0,1,1,h100", "3,x3,0,1,1,h100", "4,x4,0,1,1,l4", "5,x5,0,1,1,l4"])
    quota = {"h100": {"research", "applied"}, "l4": {"serving"}}
    eligible = lambda pools: [t for t in ["research", "applied", "serving"] if all(t in quota[p] for p in pools)]
    mapped = map_teams(jobs, ["research", "applied", "serving"], "auto", eligible=eligible)
    assert [j.team for j in mapped] == ["research", "applied", "research", "serving", "serving"]
    # No team has quota on both pools: dealt as before, and the run reports what can never be admitted.
    both = parse_csv(["1,x1,0,1,1,h100", "2,x1,0,1,1,l4", "3,x2,0,1,1,l4"])
    assert [j.team for j in map_teams(both, ["research", "serving"], "auto", eligible=eligible)] == [
        "research", "research", "serving"]


def test_simulate_auto_never_deals_jobs_to_a_team_without_quota_on_the_pool(capsys):
    # aws-prod: research and applied have h100-train quota, serving has none.
    from gpu_platform.cli import main

    assert main(["simulate", "aws-prod", "--trace", "synthetic:jobs=30,interarrival=60,teams=x1/x2/x3,pool=h100-train",
                 "--team-map", "auto", "--baseline", "none", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    submitted = {team: row["jobs_submitted"] for team, row in report["teams"].items()}
    assert submitted["serving"] == 0 and submitted["research"] + submitted["applied"] == 30
    assert report["never_admittable"] == []
