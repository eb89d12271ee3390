"""Built-in scenarios: Kueue's own scheduler performance test (fidelity) and the speed benchmark."""
from __future__ import annotations

import os
import random
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpu_platform.simulator.engine import SimResult, Simulation, Timing, build_jobs
from gpu_platform.simulator.model import Flavor, Gang, Model, Pool, Queue, Quota, Team
from gpu_platform.simulator.traces import DEFAULT_GANGS, TraceJob, synthetic

# kubernetes-sigs/kueue test/performance/scheduler/configs/baseline at the pinned v0.19.2: generator.yaml, and the
# averages of five real runs recorded as comments in rangespec.yaml (ClusterQueue usage in %, time to admission in
# seconds), with SchedulingEquivalenceHashing on: usage 55.9 % (58.7 without), large 16,501 ms (6,666 without),
# medium 76,768 ms, small 215,468 ms, wall 351,116 ms. read_rangespec() reads them again from the module source
# (`go mod download sigs.k8s.io/kueue@v0.19.2`) when it is there; tests/simulator/test_simulator_fidelity.py checks
# these
# against it.
KUEUE_VERSION = "v0.19.2"
KUEUE_RANGESPEC = "test/performance/scheduler/configs/baseline/rangespec.yaml"
KUEUE_BASELINE_MEASURED = {"usage_percent": 55.9, "large_s": 16.501, "medium_s": 76.768, "small_s": 215.468}
KUEUE_BASELINE_CLASSES = (  # class, count, creation interval s, runtime s, priority, request
    ("small", 350, 0.1, 0.2, 50, 1),
    ("medium", 100, 0.5, 0.5, 100, 5),
    ("large", 50, 1.2, 1.0, 200, 20),
)
# test/performance/scheduler/configs/large-scale at v0.19.2: 10 cohorts x 100 ClusterQueues of the same shape, per
# queue 35 small (every 60 ms, running 150 ms), 11 medium (300 ms, 350 ms) and 4 large (700 ms, 700 ms): 50,000
# workloads. Means of 19 periodic runs, in its rangespec.yaml's comments: usage 38.64 %, large 105,604 ms, medium
# 256,413 ms, small 700,379 ms, wall 1,179,411 ms. Not calibrated on: it validates the API-write model calibrated
# on the baseline (docs/simulator.md).
KUEUE_LARGE_SCALE_RANGESPEC = "test/performance/scheduler/configs/large-scale/rangespec.yaml"
KUEUE_LARGE_SCALE_MEASURED = {"usage_percent": 38.64, "large_s": 105.604, "medium_s": 256.413, "small_s": 700.379}
KUEUE_LARGE_SCALE_CLASSES = (
    ("small", 35, 0.06, 0.15, 50, 1),
    ("medium", 11, 0.3, 0.35, 100, 5),
    ("large", 4, 0.7, 0.7, 200, 20),
)
# The cycle model calibrated on the baseline (docs/simulator.md explains how): the fixed cycle and finish latency,
# with the API client's rate limit at Kueue v0.19.2's defaults (apis/config/v1beta2/defaults.go: QPS 300, burst
# 500). Its test runner finishes an eviction as soon as it sees one, so evictions take what a finish takes.
KUEUE_CALIBRATED = Timing(cycle_s=0.25, finish_latency_s=0.55, evict_latency_s=0.55, api_qps=300.0, api_burst=500)
# The performance test's minimalkueue sets its own client to QPS 50, burst 100 (test/performance/scheduler/
# minimalkueue/main.go): not calibrated, read from the source.
KUEUE_PERF_TIMING = replace(KUEUE_CALIBRATED, api_qps=50.0, api_burst=100)
# For real clusters: the same cycle model, and pods that get Kubernetes' default 30 s termination grace period.
DEFAULT_TIMING = replace(KUEUE_CALIBRATED, evict_latency_s=30.0)
# Volcano v1.15.1's scheduler, read from its source, not calibrated: a session every schedulePeriod (1 s,
# cmd/scheduler/app/options/options.go defaultSchedulerPeriod), pod binds through its client at kube-api-qps 2000
# and kube-api-burst 2000 (the same file). A job's end is seen as late as with Kueue (an API round trip), and
# evicted pods get the same grace period.
VOLCANO_TIMING = replace(DEFAULT_TIMING, cycle_s=1.0, api_qps=2000.0, api_burst=2000)


def default_timing(model: Model) -> Timing:
    """The timing of the model's scheduler on a real cluster."""
    return VOLCANO_TIMING if model.scheduler == "volcano" else DEFAULT_TIMING


def kueue_module_dir(version: str = KUEUE_VERSION) -> Path | None:
    """Where `go mod download sigs.k8s.io/kueue@<version>` put the module source, if it did (never downloads)."""
    roots = [os.environ.get("GOMODCACHE")]
    roots += [str(Path(p) / "pkg" / "mod") for p in (os.environ.get("GOPATH") or "").split(os.pathsep) if p]
    roots.append(str(Path.home() / "go" / "pkg" / "mod"))
    for root in roots:
        if root and (Path(root) / "sigs.k8s.io" / f"kueue@{version}").is_dir():
            return Path(root) / "sigs.k8s.io" / f"kueue@{version}"
    return None


def read_rangespec(path: Path | str) -> dict[str, float]:
    """The measured averages in a Kueue performance rangespec.yaml. They are comments above the limits they set
    (`# Average value 16501 (...)`, or `# mean=38.64%, ...`), or after them on the same line (`large: 128_000  #
    mean=105604ms`): usage per ClusterQueue class in %, time to admission per workload class in ms (returned in s,
    as `<class>_s`), and the command's wall time (`wall_s`)."""
    out: dict[str, float] = {}
    section, average = "", None
    for line in Path(path).read_text().splitlines():
        text = line.strip()
        found = re.match(r"#\s*(?:Average value\s+|mean=)([0-9.]+)", text)
        if found:
            average = float(found.group(1))
            continue
        key = re.match(r"([A-Za-z][\w-]*):", text)
        if not key or text.startswith("#"):
            continue
        inline = re.search(r"#\s*mean=([0-9.]+)", text)
        if inline:
            average = float(inline.group(1))
        if not line.startswith((" ", "\t")):
            section, average = key.group(1), None
            continue
        if average is None:
            continue
        if section == "clusterQueueClassesMinUsage":
            out["usage_percent"] = average
        elif section == "wlClassesMaxAvgTimeToAdmissionMs":
            out[f"{key.group(1)}_s"] = average / 1000
        elif section == "cmd" and key.group(1) == "maxWallMs":
            out["wall_s"] = average / 1000
        average = None
    return out


def kueue_baseline_measured(rangespec: str = KUEUE_RANGESPEC,
                            copy: dict[str, float] = KUEUE_BASELINE_MEASURED) -> dict[str, float]:
    """The pinned version's figures: read from the module source when it was downloaded, else the copy above."""
    root = kueue_module_dir()
    if root is not None and (root / rangespec).is_file():
        measured = read_rangespec(root / rangespec)
        if all(k in measured for k in copy):
            return {k: measured[k] for k in copy}
    return dict(copy)


def kueue_baseline_model(cohorts: int = 5, queues_per_cohort: int = 6) -> Model:
    """5 cohorts x 6 ClusterQueues: nominal 20, borrowingLimit 100, reclaimWithinCohort Any,
    withinClusterQueue LowerPriority, one flavor without nodes (the test runs no pods)."""
    queues = {}
    for c in range(cohorts):
        for i in range(queues_per_cohort):
            name = f"cq-{i}-cohort-{c}"
            queues[name] = Queue(name=name, cohort=f"cohort-{c}", quotas={("rf", "cpu"): Quota(20, 100)},
                                 within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
    return Model(scheduler="kueue", pools={}, flavors={"rf": Flavor("rf", None)}, queues=queues,
                 teams={n: Team(n, n) for n in queues}, source="kueue performance baseline")


def kueue_baseline_trace(model: Model, classes=KUEUE_BASELINE_CLASSES) -> list[TraceJob]:
    """Each queue's three workload sets start together; each creates one workload per interval."""
    jobs = []
    for name in model.queues:
        for label, count, interval, runtime, priority, request in classes:
            for k in range(count):
                jobs.append(TraceJob(job_id=f"{name}-{label}-{k}", team=name, submit_s=round((k + 1) * interval, 3),
                                     duration_s=runtime, units=request, resource="cpu", priority=priority,
                                     label=label))
    return jobs


def kueue_baseline(timing: Timing = KUEUE_PERF_TIMING, check: bool = False) -> dict[str, Any]:
    """Run the baseline scenario; usage and time to (last) admission computed the way Kueue's recorder does."""
    return kueue_performance(kueue_baseline_model(), KUEUE_BASELINE_CLASSES, timing, check)


def kueue_large_scale(timing: Timing = KUEUE_PERF_TIMING) -> dict[str, Any]:
    """Run the large-scale scenario (1,000 ClusterQueues, 50,000 workloads), measured the same way."""
    return kueue_performance(kueue_baseline_model(cohorts=10, queues_per_cohort=100), KUEUE_LARGE_SCALE_CLASSES,
                             timing)


def kueue_performance(model: Model, classes, timing: Timing, check: bool = False) -> dict[str, Any]:
    jobs = build_jobs(model, kueue_baseline_trace(model, classes))
    result = Simulation(model, jobs, timing, check=check).run()
    nominal = sum(result.team_nominal_gpus)
    out: dict[str, Any] = {"usage_percent": 100 * sum(result.usage_area) / (nominal * result.end),
                           "wall_s": result.end, "evictions": len(result.preemptions), "result": result}
    for label, *_ in classes:
        waits = [j.admit_t - j.submit for j in jobs if j.label == label]
        out[f"{label}_s"] = sum(waits) / len(waits)
    return out


def bench_model(gpus: int = 1000, queues: int = 30, cohorts: int = 5, gpus_per_node: int = 8) -> Model:
    """One GPU pool of `gpus`, `queues` team queues spread over `cohorts`, nominal quotas summing to the pool."""
    nodes = gpus // gpus_per_node
    capacity = nodes * gpus_per_node
    pool = Pool("gpu", nodes, {"nvidia.com/gpu": gpus_per_node}, gpus_per_node)
    qs = {}
    for i in range(queues):
        name = f"team-{i:02d}"
        nominal = capacity // queues + (1 if i < capacity % queues else 0)
        qs[name] = Queue(name=name, cohort=f"cohort-{i % cohorts}",
                         quotas={("gpu", "nvidia.com/gpu"): Quota(nominal, nominal * 2)},
                         within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
    return Model(scheduler="kueue", pools={"gpu": pool}, flavors={"gpu": Flavor("gpu", "gpu")}, queues=qs,
                 teams={n: Team(n, n) for n in qs}, priorities={"low": 100, "normal": 1000, "high": 10000},
                 gang=Gang(enabled=True, timeout_s=600), source="benchmark")


def bench_trace(model: Model, n_jobs: int, load: float = 0.9, seed: int = 0,
                mixed_priorities: bool = False) -> list[TraceJob]:
    """Synthetic jobs sized so the offered load is `load` of the pool. Each team runs at its own priority (one
    in five high, one in five low), as a team's jobs do by default on this platform; `mixed_priorities` instead
    draws each job's priority (30 % low, 60 % normal, 10 % high), a stress case with many more preemptions."""
    gangs = DEFAULT_GANGS
    median, sigma = 1800.0, 1.5
    mean_units = sum(k * w for k, w in gangs.items())
    mean_duration = median * 2.718281828 ** (sigma * sigma / 2)
    interarrival = mean_units * mean_duration / (load * model.capacity_gpus())
    jobs = synthetic(list(model.teams), jobs=n_jobs, seed=seed, interarrival=interarrival, gangs=gangs,
                     median=median, sigma=sigma)
    level = {team: ("high", "normal", "normal", "normal", "low")[i % 5] for i, team in enumerate(model.teams)}
    rng = random.Random(seed + 1)
    return [TraceJob(j.job_id, j.team, j.submit_s, j.duration_s, j.units,
                     priority=rng.choices(("low", "normal", "high"), (0.3, 0.6, 0.1))[0] if mixed_priorities
                     else level[j.team]) for j in jobs]


def bench_scenario(n_jobs: int = 100_000, gpus: int = 1000, queues: int = 30, cohorts: int = 5,
                   seed: int = 0, timing: Timing = DEFAULT_TIMING, mixed_priorities: bool = False) -> dict[str, Any]:
    """The speed benchmark: wall time and headline numbers of one run (bench/probe.py adds the process's peak
    memory, measured where the process is its own)."""
    model = bench_model(gpus, queues, cohorts)
    trace = bench_trace(model, n_jobs, seed=seed, mixed_priorities=mixed_priorities)
    start = time.perf_counter()
    jobs = build_jobs(model, trace)
    result: SimResult = Simulation(model, jobs, timing).run()
    wall = time.perf_counter() - start
    done = sum(1 for j in jobs if j.finish_t is not None)
    return {"jobs": n_jobs, "gpus": result.capacity_gpus, "queues": queues, "cohorts": cohorts,
            "wall_s": round(wall, 2),
            "simulated_days": round(result.end / 86400, 1), "completed": done, "cycles": result.cycles,
            "preemptions": len(result.preemptions),
            "allocated_share": round(sum(result.alloc_area) / (result.capacity_gpus * result.end), 3)}
