"""Topology-aware placement in the simulator: blocks per TAS pool, the three policies on small deterministic
traces, the pools read from the plan, and the CLI report."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_platform.engine import plan_stack
from gpu_platform.simulator import SimulationError, load_model
from gpu_platform.simulator.topology import DEFAULT_BLOCK, TasPool, compare, place, tas_pools
from gpu_platform.simulator.traces import TraceJob

from support.paths import ROOT
from support.stacks import planned, stack_config


def job(name: str, submit: float, duration: float, gpus: int, pool: str | None = "p") -> TraceJob:
    return TraceJob(job_id=name, team="research", submit_s=submit, duration_s=duration, units=gpus, pool=pool)


POOL = TasPool("p", nodes=4, per_node=8, block_size=2, topology="gpu-network")  # blocks {0,1} and {2,3}


def test_spread_splits_a_gang_that_tas_keeps_in_one_block():
    # a holds node 0; spread then puts b's two pods on the emptiest nodes, 1 and 2, across both blocks, while TAS
    # picks block {2,3}.
    trace = [job("a", 0, 100, 8), job("b", 1, 10, 16)]
    none, preferred, required = (place(POOL, trace, p) for p in ("none", "preferred", "required"))
    assert (none.gangs, none.one_block, none.mean_blocks) == (1, 0, 2.0)
    for tas in (preferred, required):
        assert (tas.gangs, tas.one_block, tas.one_block_fraction) == (1, 1, 1.0)
        assert tas.mean_wait_s == 0.0


def test_tas_packs_small_jobs_so_a_later_gang_finds_a_whole_block():
    pool = TasPool("p", nodes=6, per_node=8, block_size=2, topology="gpu-network")  # blocks {0,1} {2,3} {4,5}
    trace = [job("a", 0, 100, 8), job("b", 0, 100, 8), job("c", 0, 100, 8), job("d", 1, 10, 16)]
    # spread: a, b, c on nodes 0, 1, 2, so d gets 3 and 4 (two blocks); TAS: a, b fill block 0, c block 1, d block 2
    none, preferred = place(pool, trace, "none"), place(pool, trace, "preferred")
    assert (none.gangs, none.one_block) == (1, 0)
    assert (preferred.gangs, preferred.one_block) == (1, 1)
    assert none.mean_wait_s == preferred.mean_wait_s == 0.0


def test_required_leaves_a_gang_larger_than_any_block_unplaced():
    trace = [job("big", 0, 10, 24)]  # 3 pods of 8, blocks of 2 nodes
    assert place(POOL, trace, "required").placed == 0
    preferred = place(POOL, trace, "preferred")
    assert preferred.placed == 1 and preferred.mean_blocks == 2.0 and preferred.one_block == 0


def test_required_waits_until_a_block_frees_up():
    pool = TasPool("p", nodes=4, per_node=8, block_size=2, topology="gpu-network")
    trace = [job("a", 0, 100, 8), job("b", 0, 100, 8), job("c", 0, 100, 8), job("d", 5, 10, 16)]
    # TAS packs a, b into block 0 and c into block 1: d (2 nodes) fits no block until c ends at 100
    required = place(pool, trace, "required")
    assert required.placed == 4 and required.one_block == 1
    assert required.makespan_s == 110.0 and required.p95_wait_s == 95.0


def test_jobs_larger_than_the_pool_are_counted_not_placed():
    result = place(POOL, [job("huge", 0, 10, 64)], "none")
    assert (result.jobs, result.placed, result.never_fit) == (1, 0, 1)


def test_unknown_policy_is_refused():
    with pytest.raises(SimulationError, match="allowed: none, preferred, required"):
        place(POOL, [], "strict")


def tas_plan():
    """aws-prod with its h100-train pool topology-aware."""
    pools = copy.deepcopy(stack_config("aws-prod")["gpu-platform:gpuPools"])
    next(p for p in pools if p["name"] == "h100-train")["topology"] = True
    return plan_stack("aws-prod", config_overrides={"gpu-platform:gpuPools": pools})


def test_tas_pools_come_from_the_planned_flavors():
    plan = tas_plan()
    model = load_model(plan)
    pools = tas_pools(plan, model, {"h100-train": 2})
    assert list(pools) == ["h100-train"]
    assert pools["h100-train"].block_size == 2 and pools["h100-train"].topology == "gpu-network"
    assert pools["h100-train"].per_node == 8 and pools["h100-train"].nodes == model.pools["h100-train"].nodes
    assert tas_pools(plan, model)["h100-train"].block_size == DEFAULT_BLOCK
    with pytest.raises(SimulationError, match="without a topology-aware flavor: a100-infer"):
        tas_pools(plan, model, {"a100-infer": 2})
    assert tas_pools(planned("aws-prod", "kueue"), load_model(planned("aws-prod", "kueue"))) == {}


def test_compare_reports_every_policy_per_pool_and_routes_unnamed_jobs_to_the_first_pool():
    rows = compare({"p": POOL}, [job("a", 0, 100, 8, pool=None), job("b", 1, 10, 16), job("x", 0, 1, 8, "other")])
    assert [p["policy"] for p in rows[0]["policies"]] == ["none", "preferred", "required"]
    assert all(p["jobs"] == 2 for p in rows[0]["policies"])
    assert rows[0]["policies"][0]["one_block_fraction"] == 0.0 and rows[0]["policies"][2]["one_block_fraction"] == 1.0


def run_cli(plan: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_platform.cli", "simulate", "--plan", str(plan), *args],
                          cwd=ROOT, capture_output=True, text=True)


def test_cli_adds_the_placement_comparison(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(tas_plan().to_json()))
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,team,submit_s,duration_s,gpus,pool\n"
                     "a,research,0,100,8,h100-train\nb,research,1,10,16,h100-train\n")
    out = run_cli(plan, "--trace", str(trace), "--topology-blocks", "h100-train=2", "--format", "json", "--baseline", "none")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["topology"]
    assert rows[0]["pool"] == "h100-train" and rows[0]["blocks"] == 2
    table = run_cli(plan, "--trace", str(trace), "--topology", "--baseline", "none")
    assert "Topology-aware placement" in table.stdout and "blocks of 4" in table.stdout
    bad = run_cli(plan, "--trace", str(trace), "--topology-blocks", "h100-train=x")
    assert bad.returncode == 2 and "--topology-blocks 'h100-train=x'" in bad.stderr and "Traceback" not in bad.stderr
