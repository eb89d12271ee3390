"""`simulate` refuses traces it cannot replay faithfully, naming the line or job: never a traceback or a hang."""
from __future__ import annotations

import json

import pytest

from gpu_platform.simulator import SimulationError
from gpu_platform.simulator.traces import MAX_SYNTHETIC_JOBS, parse_csv, parse_synthetic

from support.fuzzing import run_cli


@pytest.mark.parametrize("cell, column", [
    ("²", "gpus"), ("٣", "gpus"), ("１", "gpus"), ("9" * 5000, "gpus"), ("0", "gpus"), ("-2", "gpus"),
])
def test_gpu_counts_are_ascii_whole_numbers_in_range(cell, column):
    with pytest.raises(SimulationError, match=f"trace:1: {column} must be a whole number from 1 to 1000000"):
        parse_csv([f"j1,a,0,10,{cell}"])


@pytest.mark.parametrize("submit, duration", [("nan", "10"), ("0", "inf"), ("1e308", "1"), ("0", "1e999"),
                                              ("-1", "10"), ("٣", "10")])
def test_times_are_finite_and_bounded(submit, duration):
    with pytest.raises(SimulationError, match=r"must be a number from 0 to 3.1536e\+08"):
        parse_csv([f"j1,a,{submit},{duration},1"])


@pytest.mark.parametrize("spec, message", [
    (f"synthetic:jobs={MAX_SYNTHETIC_JOBS + 1}", f"jobs must be a whole number from 1 to {MAX_SYNTHETIC_JOBS}"),
    ("synthetic:jobs=0", "jobs must be a whole number from 1"),
    ("synthetic:gangs=0:1", "gang size"), ("synthetic:gangs=-4:1", "gang size"),
    ("synthetic:gangs=1:nan", "weight of gang '1'"), ("synthetic:gangs=1:0", "gang sizes from 1"),
    ("synthetic:interarrival=inf", "interarrival must be a number"), ("synthetic:median=1e308", "median"),
    ("synthetic:teams=a:-1", "weight of 'a'"), ("synthetic:teams=a:0", "team weights"),
    ("synthetic:sigma=1000", "sigma from 0 to 10"),
])
def test_synthetic_traces_are_bounded(spec, message):
    with pytest.raises(SimulationError, match=message):
        parse_synthetic(spec, ["a"], 0)


def test_gavel_rows_refuse_nan_arrivals_and_zero_gangs(tmp_path):
    from gpu_platform.simulator.traces import read_gavel

    runtimes = tmp_path / "runtimes.csv"
    runtimes.write_text("runtime\n100\n")
    for arrival, gang, message in (("nan", "1", "arrival_time must be a number"), ("0", "0", "scale_factor"),
                                   ("0", "-1", "scale_factor"), ("0", "²", "scale_factor")):
        trace = tmp_path / "team.trace"
        trace.write_text("\t".join(["ResNet-18", "cmd", "steps", "True", "100", arrival, gang]) + "\n")
        with pytest.raises(SimulationError, match=message):
            read_gavel(trace, runtimes)


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory):
    from gpu_platform.engine import plan_stack

    path = tmp_path_factory.mktemp("plan") / "plan.json"
    path.write_text(json.dumps(plan_stack("aws-dev").to_json()))
    return path


def test_a_job_larger_than_the_cluster_is_refused_naming_it(tmp_path, plan_file):
    trace = tmp_path / "trace.csv"
    trace.write_text("j1,team-a,0,100,1\nhuge,team-a,5,100,999\n")
    outcome, code, _, err = run_cli(["simulate", "--plan", str(plan_file), "--trace", str(trace), "--team-map", "auto"])
    assert (outcome, code) == ("refused", 2)
    assert "job huge: asks for 999 nvidia.com/gpu but the cluster offers at most" in err


def test_larger_nodes_make_the_same_job_fit(tmp_path, plan_file):
    trace = tmp_path / "trace.csv"
    trace.write_text("big,team-a,0,100,16\n")
    argv = ["simulate", "--plan", str(plan_file), "--trace", str(trace), "--team-map", "auto", "--baseline", "none"]
    assert run_cli(argv)[0] == "refused"
    assert run_cli(argv + ["--nodes", "a10g-train=4"])[1] == 0


@pytest.mark.parametrize("flags, message", [
    (["--cycle=nan"], "--cycle must be a number of seconds from 0.01 to 3600"),
    (["--cycle=inf"], "--cycle must be"), (["--cycle=1e-9"], "--cycle must be"),
    (["--horizon=-5"], "--horizon must be"), (["--horizon=nan"], "--horizon must be"),
    (["--nodes", "l4-dev=99999999999999"], "whole number from 0 to 10000"),
    (["--nodes", "l4-dev=²"], "whole number from 0 to 10000"),
])
def test_unbounded_or_non_finite_flags_are_usage_errors(plan_file, flags, message):
    outcome, code, _, err = run_cli(["simulate", "--plan", str(plan_file), "--trace", "synthetic:jobs=5,gangs=1:1",
                                     "--team-map", "auto", *flags])
    assert (outcome, code) == ("refused", 2) and message in err, err
