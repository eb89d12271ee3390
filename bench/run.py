"""`make bench`: how fast plan and check are, how cost grows, and what our code adds on top of the Pulumi SDK.

Prints a table and writes bench/results/latest.json. Every ratio compares two figures measured in this run.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bare import bare_program  # noqa: E402
from probe import check_plan  # noqa: E402
from synthetic import write_stack  # noqa: E402

from gpu_platform.engine.plan import plan_stack, read_stack_config, run_program  # noqa: E402

SIZES = ((5, 1), (25, 4), (50, 8), (100, 16), (200, 32))  # (teams, pools)
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))
# Warm in-process timings take the fastest of REPEATS runs: on a shared machine noise only ever adds time.
BEST = min


def probe(mode: str, stack_file: Path | None = None) -> dict:
    """Run one plan, check or simulation in a fresh interpreter and read its own figures."""
    env = {**os.environ, "BENCH_T0": repr(time.time())}
    args = [str(stack_file)] if stack_file else []
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "probe.py"), mode, *args], cwd=ROOT,
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def in_process(stack_file: Path) -> dict:
    """Warm timings in this process: our program, the bare SDK replay of its graph, and plan + check."""
    plan = plan_stack(file=stack_file)  # warm-up: imports and caches
    config = read_stack_config(stack_file)
    registrations, _ = run_program(plan.stack, config)
    replay = bare_program(registrations)
    ours, bare, checked = [], [], []
    for _ in range(REPEATS):  # interleaved, so drift on a noisy machine hits both sides alike
        ours.append(timed(lambda: run_program(plan.stack, config)))
        bare.append(timed(lambda: run_program(plan.stack, config, replay)))
        checked.append(timed(lambda: check_plan(plan)))  # check = plan + this; timed alone, it is not lost in noise
    failing = len(check_plan(plan).failing(None))  # a benchmark of a failing platform would time the wrong path
    plan_s = BEST(timed(lambda: plan_stack(file=stack_file)) for _ in range(REPEATS))
    ours_s, bare_s, policy_s = map(BEST, (ours, bare, checked))
    return {"resources": len(registrations), "program_s": ours_s, "bare_s": bare_s, "overhead_ratio": ours_s / bare_s,
            "plan_s": plan_s, "policy_s": policy_s, "policy_cost_ratio": policy_s / plan_s,
            "per_resource_ms": 1000 * plan_s / len(registrations), "failing_findings": failing}


OWN_CODE = tuple(str(ROOT / d) for d in ("components", "gpu_platform", "policies", "__main__.py"))


def own_code_share(stack_file: Path) -> float:
    """Share of plan + check CPU time spent inside this project's own functions (the rest is the SDK's)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(lambda: check_plan(plan_stack(file=stack_file)))
    stats = pstats.Stats(profiler)
    own = sum(row[2] for (path, _, _), row in stats.stats.items() if path.startswith(OWN_CODE))
    return own / stats.total_tt


def main() -> None:
    results = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
               "repeats": REPEATS, "stacks": {}, "scaling": {}}
    stacks = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
    print(f"{'stack':<14}{'res':>5}{'plan s':>8}{'check s':>8}{'start s':>8}{'peak MB':>8}{'overhead':>9}"
          f"{'policy %':>9}{'own %':>7}{'fail':>5}")
    for path in stacks:
        name = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        cold_plan, cold_check = probe("plan", path), probe("check", path)
        warm = in_process(path)
        warm["own_code_share"] = own_code_share(path)
        results["stacks"][name] = {"cold_plan": cold_plan, "cold_check": cold_check, "warm": warm}
        print(f"{name:<14}{warm['resources']:>5}{cold_plan['wall_s']:>8.2f}{cold_check['wall_s']:>8.2f}"
              f"{cold_plan['startup_s']:>8.2f}{cold_check['peak_rss_mb']:>8.0f}{warm['overhead_ratio']:>9.2f}"
              f"{100 * warm['policy_cost_ratio']:>8.1f}%{100 * warm['own_code_share']:>6.1f}%{warm['failing_findings']:>5}")

    print(f"\n{'teams x pools':<16}{'res':>6}{'plan s':>9}{'ms/res':>9}{'overhead':>10}{'policy %':>10}{'fail':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        for teams, pools in SIZES:
            warm = in_process(write_stack(Path(tmp), teams, pools))
            results["scaling"][f"{teams}x{pools}"] = warm
            print(f"{teams:>5} x {pools:<8}{warm['resources']:>6}{warm['plan_s']:>9.2f}{warm['per_resource_ms']:>9.2f}"
                  f"{warm['overhead_ratio']:>10.2f}{100 * warm['policy_cost_ratio']:>9.1f}%{warm['failing_findings']:>5}")
    sim = results["simulator"] = probe("simulate")
    print(f"\nsimulator: {sim['jobs']:,} jobs on {int(sim['gpus']):,} GPUs, {sim['queues']} queues in {sim['cohorts']} cohorts: "
          f"{sim['cpu_s']:.1f} s CPU ({sim['wall_s']:.1f} s wall), {sim['peak_rss_mb']} MB peak  (target < 30 s CPU, "
          f"< 512 MB)")
    sizes = list(results["scaling"].values())
    growth = sizes[-1]["per_resource_ms"] / sizes[0]["per_resource_ms"]
    results["summary"] = {
        "max_overhead_ratio": max(s["warm"]["overhead_ratio"] for s in results["stacks"].values()),
        "per_resource_growth": growth,
        "max_policy_cost_ratio": max(s["policy_cost_ratio"] for s in sizes + [v["warm"] for v in results["stacks"].values()]),
        "max_warm_startup_s": max(s["cold_plan"]["startup_s"] for s in results["stacks"].values()),
        "max_own_code_share": max(s["warm"]["own_code_share"] for s in results["stacks"].values()),
    }
    summary = results["summary"]
    print(f"\noverhead ratio (ours / bare SDK), worst stack: {summary['max_overhead_ratio']:.2f}  (target <= 1.25)")
    print(f"per-resource cost, largest / smallest size:   {growth:.2f}  (target <= 1.3)")
    print(f"policy cost (check - plan) / plan, worst:     {100 * summary['max_policy_cost_ratio']:.1f}%  (target <= 10%)")
    print(f"start-up to first resource, worst stack:      {summary['max_warm_startup_s']:.2f} s  (target < 1.5 s)")
    print(f"own code share of plan + check CPU, worst:    {100 * summary['max_own_code_share']:.1f}%  (the rest is the SDK's)")
    out = ROOT / "bench" / "results" / "latest.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
