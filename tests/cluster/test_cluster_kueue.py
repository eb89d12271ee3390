"""The real Kueue v0.19.2 on a real API server, running aws-prod's planned manager configuration and queues.

Jobs go to the team LocalQueues the way users submit them, and admission is read from the Workload objects Kueue
writes. Every expectation is derived from the planned ClusterQueues' numbers (nominal quota, borrowing limits,
preemption policies), so a plan change moves the expectations with it, and a queue Kueue treats differently from
what the platform (and its simulator) assumes fails here.
"""
from __future__ import annotations

import json
import math
import random
import time

import pytest
import yaml

from gpu_platform.engine import plan_stack
from gpu_platform.simulator import KUEUE_CALIBRATED, load_model, simulate
from gpu_platform.simulator.traces import TraceJob, read_gavel

from support.helm import Helm, extract_helm
from support.paths import ROOT, SHARED, STACKS
from support.realkueue import (RealKueue, admitted_units, condition, create_nodes, is_true, job, node_pools,
    planned_objects, replay, workloads)

pytestmark = pytest.mark.cluster

STACK = "aws-prod"  # three queues in one cohort, borrowing limits, fair sharing, waitForPodsReady
SETTLE = 90.0  # seconds for Kueue to act on a change on a busy 2-core machine


@pytest.fixture(scope="module")
def plan() -> dict:
    return plan_stack(STACK).to_json()


def scheduler_kind(stack: str) -> str:
    config = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    return (config.get("gpu-platform:scheduler") or {}).get("kind", "kueue")


OTHER_KUEUE_STACKS = [s for s in STACKS if s != STACK and scheduler_kind(s) == "kueue"]


@pytest.fixture(scope="module")
def helm(tmp_path_factory) -> Helm:
    home = tmp_path_factory.mktemp("helm")
    return Helm(extract_helm(home), home)


def start_kueue(control_plane, stack: str, plan: dict, helm: Helm) -> RealKueue:
    """A fresh cluster running Kueue on the stack's planned configuration, with its nodes and queue objects."""
    cluster = control_plane.cluster(f"kueue-{stack}")
    real = RealKueue(cluster, plan, helm)
    create_nodes(cluster, plan)
    cluster.apply(planned_objects(plan))
    for queue in queues(plan):
        cluster.kubectl("wait", "--for=condition=Active", "--timeout=120s", f"clusterqueue/{queue}")
    return real


@pytest.fixture(scope="module")
def kueue(control_plane, plan, helm) -> RealKueue:
    return start_kueue(control_plane, STACK, plan, helm)


@pytest.fixture(autouse=True)
def clean(request):
    """Each test starts from empty queues: its Jobs (and so their Workloads) are deleted after it."""
    yield
    if "kueue" not in request.fixturenames:
        return
    real, plan = request.getfixturevalue("kueue"), request.getfixturevalue("plan")
    for ns in team_namespaces(plan):
        real.cluster.kubectl("delete", "jobs", "--all", "-n", ns, "--cascade=background", "--wait=false")
    wait(lambda: not workloads(real.cluster), "every Workload to be gone", real)


# ---- the plan's numbers ---------------------------------------------------------------------------------------

def queues(plan: dict) -> dict[str, dict]:
    """ClusterQueue specs by name."""
    return {o["metadata"]["name"]: o["spec"] for o in planned_objects(plan, ("ClusterQueue",))}


def team_namespaces(plan: dict) -> dict[str, str]:
    """LocalQueue namespace -> its ClusterQueue."""
    return {o["metadata"]["namespace"]: o["spec"]["clusterQueue"] for o in planned_objects(plan, ("LocalQueue",))}


def namespace_of(plan: dict, queue: str) -> str:
    return next(ns for ns, cq in team_namespaces(plan).items() if cq == queue)


def quota(spec: dict, flavor: str, resource: str = "nvidia.com/gpu") -> dict | None:
    for group in spec["resourceGroups"]:
        for f in group["flavors"]:
            if f["name"] == flavor:
                return next((r for r in f["resources"] if r["name"] == resource), None)
    return None


def lendable(plan: dict, queue: str, flavor: str) -> int:
    """What the other queues of `queue`'s cohort can lend it of `flavor` when idle."""
    specs = queues(plan)
    cohort = specs[queue].get("cohortName")
    total = 0
    for name, spec in specs.items():
        q = quota(spec, flavor)
        if name != queue and cohort and spec.get("cohortName") == cohort and q:
            total += q.get("lendingLimit", q["nominalQuota"])
    return total


def ceiling(plan: dict, queue: str, flavor: str) -> int:
    """The most `queue` can hold of `flavor` with the rest of its cohort idle: nominal plus what it may borrow."""
    q = quota(queues(plan)[queue], flavor)
    borrow = lendable(plan, queue, flavor)
    if q.get("borrowingLimit") is not None:
        borrow = min(borrow, q["borrowingLimit"])
    return q["nominalQuota"] + borrow


def per_node(plan: dict, pool: str) -> int:
    return next(int(p["advertised"]["nvidia.com/gpu"]) for p in node_pools(plan) if p["poolName"] == pool)


def shaped(plan: dict, ns: str, name: str, units: int, pool: str, **kw) -> dict:
    """A Job of `units` GPUs on `pool` in as few equal pods as whole nodes allow (16 on 8-GPU nodes: 2 x 8)."""
    size = math.gcd(units, per_node(plan, pool))
    return job(ns, name, size, pods=units // size, pool=pool, **kw)


def borrowing_pair(plan: dict) -> tuple[str, str, str]:
    """(borrower, lender, flavor): two queues of one cohort that both hold nominal quota of one flavor, the
    borrower allowed to borrow some of it: where borrowing and reclaiming happen. The scarcest such flavor
    (least nominal quota in all), where a few dozen jobs contend."""
    specs = queues(plan)
    scarcity = {p["poolName"]: sum((quota(s, p["poolName"]) or {}).get("nominalQuota", 0) for s in specs.values())
                for p in node_pools(plan)}
    for flavor in sorted(scarcity, key=scarcity.get):
        holders = [name for name, spec in specs.items() if (quota(spec, flavor) or {}).get("nominalQuota")]
        for borrower in holders:
            if ceiling(plan, borrower, flavor) > quota(specs[borrower], flavor)["nominalQuota"]:
                lenders = [h for h in holders if h != borrower
                           and specs[h].get("cohortName") == specs[borrower].get("cohortName")]
                if lenders:
                    return borrower, lenders[0], flavor
    pytest.fail(f"{STACK} plans no cohort where one queue borrows another's quota: pick a stack that does")


# ---- waiting on Kueue -----------------------------------------------------------------------------------------

def wait(predicate, what: str, real: RealKueue, timeout: float = SETTLE):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\nKueue log:\n{real.log()}")


def workload(real: RealKueue, ns: str, name: str) -> dict | None:
    return workloads(real.cluster, ns).get((ns, name))


def wait_admitted(real: RealKueue, ns: str, name: str) -> dict:
    return wait(lambda: (w := workload(real, ns, name)) and is_true(w, "Admitted") and w,
                f"{ns}/{name} to be admitted", real)


def wait_held(real: RealKueue, ns: str, name: str) -> dict:
    """Kueue tried the workload and kept it pending: QuotaReserved False, with its reason."""
    def held():
        w = workload(real, ns, name)
        c = condition(w, "QuotaReserved") if w else None
        return c and c["status"] == "False" and w
    return wait(held, f"{ns}/{name} to be tried and held pending", real)


def wait_preempted(real: RealKueue, ns: str, name: str) -> dict:
    return wait(lambda: (w := workload(real, ns, name)) and is_true(w, "Preempted") and w,
                f"{ns}/{name} to be preempted", real)


def suspended(real: RealKueue, ns: str, name: str) -> bool:
    return real.cluster.get("job", name, "-n", ns)["spec"].get("suspend") is True


# ---- tests ----------------------------------------------------------------------------------------------------

def test_planned_queues_run_on_real_kueue(kueue, plan):
    """Kueue accepted the planned configuration and every queue object, and serves every planned queue."""
    assert_queues_active(kueue, plan)


@pytest.mark.parametrize("stack", OTHER_KUEUE_STACKS)
def test_other_stacks_queues_run_on_real_kueue(control_plane, helm, stack):
    plan = plan_stack(stack).to_json()
    real = start_kueue(control_plane, stack, plan, helm)
    try:
        assert_queues_active(real, plan)
    finally:
        real.cluster.close()  # one stack's API server and Kueue at a time on this machine


def assert_queues_active(kueue: RealKueue, plan: dict) -> None:
    for name in queues(plan):
        cq = kueue.cluster.get("clusterqueue", name)
        assert is_true(cq, "Active"), (name, cq.get("status"))
    for ns in team_namespaces(plan):
        # A LocalQueue's status is written after its ClusterQueue's: wait for it rather than race it.
        kueue.cluster.kubectl("wait", "--for=condition=Active", "--timeout=60s", "localqueue/default", "-n", ns)
    # The manager runs what the chart renders from our values, overrides aside.
    for key in ("waitForPodsReady", "fairSharing", "resources", "integrations", "manageJobsWithoutQueueName",
                "managedJobsNamespaceSelector"):
        assert kueue.config.get(key) == kueue.planned_config.get(key), key


def test_unlabelled_job_in_team_namespace_is_queued(kueue, plan):
    """manageJobsWithoutQueueName with a LocalQueue named `default`: a Job created running and without a queue
    label in a team namespace is suspended by Kueue's webhook and goes through the team's queue, so omitting the
    label never bypasses quota."""
    ns = next(iter(team_namespaces(plan)))
    bare = job(ns, "no-label", 1)
    bare["metadata"]["labels"] = {}
    bare["spec"]["suspend"] = False
    kueue.cluster.apply([bare])
    w = wait_admitted(kueue, ns, "no-label")
    assert w["spec"]["queueName"] == "default"
    assert w["status"]["admission"]["clusterQueue"] == team_namespaces(plan)[ns]


def test_admits_within_quota_borrows_then_holds(kueue, plan):
    borrower, _, flavor = borrowing_pair(plan)
    ns = namespace_of(plan, borrower)
    nominal = quota(queues(plan)[borrower], flavor)["nominalQuota"]
    most = ceiling(plan, borrower, flavor)

    kueue.cluster.apply([shaped(plan, ns, "nominal", nominal, flavor)])
    w = wait_admitted(kueue, ns, "nominal")
    assert admitted_units(w) == {(flavor, "nvidia.com/gpu"): nominal}
    assert not suspended(kueue, ns, "nominal")

    # Up to the ceiling by borrowing the idle lenders' quota.
    kueue.cluster.apply([shaped(plan, ns, "borrowing", most - nominal, flavor)])
    wait_admitted(kueue, ns, "borrowing")

    def usage() -> dict | None:
        """The ClusterQueue's usage of the flavor once its status counts both jobs (it is written after them)."""
        cq = kueue.cluster.get("clusterqueue", borrower)
        found = {(f["name"], r["name"]): r for f in cq["status"].get("flavorsUsage", []) for r in f["resources"]}
        gpu = found.get((flavor, "nvidia.com/gpu"))
        return gpu if gpu and int(gpu["total"]) == most else None
    assert int(wait(usage, f"{borrower}'s usage of {flavor} to reach {most}", kueue)["borrowed"]) == most - nominal

    # One more GPU is above what the queue may hold: held, its Job still suspended.
    kueue.cluster.apply([shaped(plan, ns, "above", 1, flavor)])
    wait_held(kueue, ns, "above")
    assert suspended(kueue, ns, "above")

    # Quota freed by a finished job admits it.
    kueue.cluster.kubectl("delete", "job", "borrowing", "-n", ns, "--cascade=background")
    wait_admitted(kueue, ns, "above")


def test_gang_is_admitted_whole_or_not_at_all(kueue, plan):
    """A multi-pod Job is one Workload: with room for part of it, none of it is admitted and no pod exists."""
    borrower, _, flavor = borrowing_pair(plan)
    ns = namespace_of(plan, borrower)
    most, size = ceiling(plan, borrower, flavor), per_node(plan, flavor)
    assert most >= 2 * size, "need room for a two-node gang"

    kueue.cluster.apply([shaped(plan, ns, "filler", most - size, flavor)])
    wait_admitted(kueue, ns, "filler")
    # Two nodes' worth with one node's worth free.
    kueue.cluster.apply([job(ns, "gang", size, pods=2, pool=flavor)])
    wait_held(kueue, ns, "gang")
    assert suspended(kueue, ns, "gang")
    pods = kueue.cluster.get("pods", "-n", ns, "-l", "job-name=gang")["items"]
    assert pods == []

    kueue.cluster.kubectl("delete", "job", "filler", "-n", ns, "--cascade=background")
    w = wait_admitted(kueue, ns, "gang")
    assert [p["count"] for p in w["status"]["admission"]["podSetAssignments"]] == [2]
    assert admitted_units(w) == {(flavor, "nvidia.com/gpu"): 2 * size}


def test_lender_reclaims_borrowed_quota(kueue, plan):
    """The lender's nominal quota is a guarantee: its job evicts the borrower's (reclaimWithinCohort: Any)."""
    borrower, lender, flavor = borrowing_pair(plan)
    specs = queues(plan)
    assert specs[lender]["preemption"]["reclaimWithinCohort"] == "Any"
    b_ns, l_ns = namespace_of(plan, borrower), namespace_of(plan, lender)
    most = ceiling(plan, borrower, flavor)
    lender_nominal = quota(specs[lender], flavor)["nominalQuota"]

    # The borrower takes everything it may, including some of the lender's idle quota.
    kueue.cluster.apply([shaped(plan, b_ns, "borrower", most, flavor)])
    wait_admitted(kueue, b_ns, "borrower")
    # The lender now wants its whole nominal quota back.
    kueue.cluster.apply([shaped(plan, l_ns, "lender", lender_nominal, flavor)])
    w = wait_preempted(kueue, b_ns, "borrower")
    # A preemptor within its nominal quota reclaims, fair sharing or not; the simulator must say the same.
    assert condition(w, "Preempted")["reason"] == "InCohortReclamation", condition(w, "Preempted")
    sim = simulate(load_model(plan), [TraceJob("borrower", borrower, 0, 3600, most, pool=flavor),
                                      TraceJob("lender", lender, 10, 3600, lender_nominal, pool=flavor)],
                   KUEUE_CALIBRATED)
    assert [(p.job, p.reason) for p in sim.preemptions] == [("borrower", "InCohortReclamation")]
    wait_admitted(kueue, l_ns, "lender")
    wait(lambda: suspended(kueue, b_ns, "borrower"), "the preempted Job to be suspended", kueue)


def test_higher_priority_preempts_lower_within_queue(kueue, plan):
    """withinClusterQueue: LowerPriority. A full queue's gpu-low job is evicted for a gpu-high one; an equal
    priority newcomer waits instead."""
    specs = queues(plan)
    name = next(n for n, s in specs.items() if s["preemption"]["withinClusterQueue"] == "LowerPriority")
    ns = namespace_of(plan, name)
    flavor = next(p["poolName"] for p in node_pools(plan) if (quota(specs[name], p["poolName"]) or {}).get("nominalQuota"))
    most = ceiling(plan, name, flavor)

    kueue.cluster.apply([shaped(plan, ns, "low", most, flavor, priority="gpu-low")])
    wait_admitted(kueue, ns, "low")
    kueue.cluster.apply([shaped(plan, ns, "low-too", 1, flavor, priority="gpu-low")])
    wait_held(kueue, ns, "low-too")
    assert not is_true(workload(kueue, ns, "low"), "Evicted")

    kueue.cluster.apply([shaped(plan, ns, "high", 1, flavor, priority="gpu-high")])
    w = wait_preempted(kueue, ns, "low")
    assert condition(w, "Preempted")["reason"] == "InClusterQueue"
    wait_admitted(kueue, ns, "high")


def test_default_priority_matches_the_simulator(kueue, plan):
    """A Job without a priority class gets the priority the simulator assumes for its team."""
    model = load_model(plan)
    for ns, queue in team_namespaces(plan).items():
        kueue.cluster.apply([job(ns, "plain", 1)])
        w = wait(lambda: workload(kueue, ns, "plain"), f"{ns}/plain's Workload", kueue)
        assert w["spec"].get("priority", 0) == model.teams[queue].priority, (ns, w["spec"].get("priorityClassRef"))


# ---- a trace through the simulator and through the real Kueue --------------------------------------------------

GAVEL = SHARED / "traces" / "gavel-philly-derived" / "seed=0"
REPLAY_JOBS = 36
TIME_SCALE = 100.0  # trace seconds per wall-clock second
SPACING_S = 2.0  # Kueue orders by creationTimestamp, in whole seconds: keep creations in different seconds
DURATION_S = (8.0, 90.0)  # wall-clock bounds: longer than Kueue's reaction, short enough for a test
TOLERANCE_S = 3.0  # a poll, a request and Kueue's own reaction, on a busy 2-core machine


def replay_trace(plan: dict) -> list[TraceJob]:
    """The first jobs of the Philly-derived Gavel trace (arrivals, gang sizes, Philly runtimes; seed 0), on the
    borrowing pair's pool, dealt alternately to the two queues, and scaled down to wall-clock seconds."""
    borrower, lender, flavor = borrowing_pair(plan)
    raw = sorted(read_gavel(GAVEL), key=lambda j: (j.submit_s, j.job_id))[:REPLAY_JOBS]
    jobs, previous = [], -SPACING_S
    for i, tj in enumerate(raw):
        submit = max(tj.submit_s / TIME_SCALE, previous + SPACING_S)
        previous = submit
        duration = min(max(tj.duration_s / TIME_SCALE, DURATION_S[0]), DURATION_S[1])
        jobs.append(TraceJob(job_id=f"j{i:02d}", team=(lender, borrower)[i % 2], submit_s=round(submit, 1),
                             duration_s=round(duration, 1), units=tj.units, pool=flavor))
    return jobs


def concordance(a: dict[str, float], b: dict[str, float]) -> float:
    """The fraction of job pairs both runs admit in the same order (ties count as agreeing)."""
    names = sorted(a)
    pairs = [(x, y) for i, x in enumerate(names) for y in names[i + 1:]]
    agree = sum(1 for x, y in pairs if (a[x] - a[y]) * (b[x] - b[y]) >= 0)
    return agree / len(pairs)


def test_trace_replay_agrees_with_the_simulator(kueue, plan):
    trace = replay_trace(plan)
    pool = trace[0].pool
    # The real run has no kube-scheduler: pods never bind, so only quota decides. Give the simulator nodes to spare
    # so that it, too, starts every job when Kueue admits it.
    model = load_model(plan).with_nodes({pool: 4 * sum(j.units for j in trace)})
    sim = {j.id: j for j in simulate(model, trace, KUEUE_CALIBRATED).jobs}
    real = replay(kueue, plan, trace, {q: namespace_of(plan, q) for q in queues(plan)},
                  timeout=sum(j.duration_s for j in trace) + 120)

    submit = {j.job_id: j.submit_s for j in trace}
    sim_first = {name: j.first_start for name, j in sim.items()}
    real_first = {name: r.admissions[0] for name, r in real.items()}
    errors = sorted(abs(real_first[n] - sim_first[n]) for n in sim)
    within = sum(1 for e in errors if e <= TOLERANCE_S) / len(errors)
    order = concordance(real_first, sim_first)
    sim_evictions = {n: j.evictions for n, j in sim.items()}
    real_evictions = {n: r.evictions for n, r in real.items()}
    figures = {
        "jobs": len(trace), "pair order agreement": round(order, 3), f"first admission within {TOLERANCE_S} s":
        round(within, 3), "median |delta| s": round(errors[len(errors) // 2], 2), "max |delta| s": round(errors[-1], 2),
        "largest creation lag s": round(max(r.submitted - submit[n] for n, r in real.items()), 2),
        "evictions real": sum(real_evictions.values()), "evictions simulated": sum(sim_evictions.values()),
        "per job": {n: {"submit": submit[n], "sim": round(sim_first[n], 2),
                        "real": round(real_first[n], 2), "sim evictions": sim_evictions[n],
                        "real evictions": real_evictions[n]} for n in sorted(sim)},
    }
    (kueue.folder / "replay.json").write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures, indent=1))
    # Measured: every pair in the same order, every first admission within 1 s (docs/simulator.md); the margin
    # is for a busier machine, not for a different policy.
    assert order >= 0.95 and within >= 0.9, figures


# ---- the fair-sharing churn of the docs' aws-prod trace, through both ------------------------------------------

# The nine jobs caught in the churn the simulator found on docs/simulator.md's 2,000-job aws-prod trace (spread
# placement, seed 7), in the order they held their quota there: three long jobs that stay (research 1 GPU, applied
# 4 and 1), then applied 8, research 1 and 1, applied 2 and 1, and research's 16-GPU gang. (team, GPUs, seconds)
CHURN = (("research", 1, 90), ("applied", 4, 90), ("applied", 1, 90), ("applied", 8, 30), ("research", 1, 30),
         ("research", 1, 30), ("applied", 2, 30), ("applied", 1, 30), ("research", 16, 30))
CHURNING = 2  # evictions of one job while the long jobs run that make it part of the churn, as the livelock report


def test_fair_sharing_churn_happens_in_real_kueue_too(kueue, plan):
    # research (nominal 16, weight 24) and applied (nominal 8, weight 16) share 24 H100s with fair sharing. Once
    # the first eight hold 19, research's gang preempts applied's 8, 2 and 1 by fair sharing (its share after
    # admission, 3 borrowed, stays below applied's); applied, back within nominal, reclaims from research, which
    # borrows; the evicted jobs are admitted again and it starts over, until the long jobs end (kueue#14543
    # reports endless fair-sharing preemption). Measured in three runs: real Kueue churns too, applied's 8 and 2
    # evicted 5 to 9 and 4 to 8 times in 90 s, the gang 1 to 4 times (24, 11, 18 evictions in all); the simulator
    # churns harder (98: each of six jobs 16 or 17 times) and also evicts research's two 1-GPU jobs, which Kueue
    # never did: while the gang waits for its targets to go, the simulator holds their quota for it (kueue#13797),
    # so applied's 2, nominated in the cycle that admits the gang, reclaims the 1-GPU jobs, the only research
    # workloads admitted then (docs/simulator.md).
    specs = queues(plan)
    assert [quota(specs[q], "h100-train")["nominalQuota"] for q in ("research", "applied")] == [16, 8], \
        "CHURN is cut to aws-prod's H100 quotas: research 16, applied 8"
    trace = [TraceJob(job_id=f"c{i}", team=team, submit_s=SPACING_S * i, duration_s=float(seconds), units=units,
                      pool="h100-train") for i, (team, units, seconds) in enumerate(CHURN)]
    model = load_model(plan).with_nodes({"h100-train": 4 * sum(j.units for j in trace)})  # quota alone, as in Kueue
    sim = {j.id: j.evictions for j in simulate(model, trace, KUEUE_CALIBRATED).jobs}
    real = replay(kueue, plan, trace, {q: namespace_of(plan, q) for q in queues(plan)},
                  timeout=sum(j.duration_s for j in trace) + 300)
    figures = {n: {"sim evictions": sim[n], "real evictions": real[n].evictions,
                   "real admissions s": [round(a, 1) for a in real[n].admissions[:40]]} for n in sorted(sim)}
    (kueue.folder / "churn.json").write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures, indent=1))
    sim_churn = {n for n, e in sim.items() if e >= CHURNING}
    real_churn = {n for n, r in real.items() if r.evictions >= CHURNING}
    long_jobs = {"c0", "c1", "c2"}
    assert sim_churn == {f"c{i}" for i in range(3, 9)} and not long_jobs & real_churn, figures
    assert {"c3", "c6"} <= real_churn <= sim_churn and not {"c4", "c5"} & real_churn, figures


# ---- a priority per job: the preemptions of the simulator's stress traces, through both ------------------------

CLASSICAL = "azure-prod"  # two queues sharing H100s by classical preemption (reclaimWithinCohort Any, no fair sharing)
PER_JOB = 30


def per_job_priority_trace(plan: dict, pool: str) -> list[TraceJob]:
    """The shape of the simulator's random-integer stress case (bench_scenario's jobs, each with its own priority
    drawn as there), cut to a pool both queues share: gangs of 1 to 8 GPUs, one every 2 s, dealt alternately."""
    teams = [name for name, spec in queues(plan).items() if (quota(spec, pool) or {}).get("nominalQuota")]
    rng = random.Random(1)
    return [TraceJob(job_id=f"p{i:02d}", team=teams[i % len(teams)], submit_s=SPACING_S * i,
                     duration_s=float(rng.randint(10, 30)), units=rng.choice((1, 2, 4, 8)), pool=pool,
                     priority=rng.randint(0, 1_000_000)) for i in range(PER_JOB)]


def test_per_job_priorities_preempt_as_in_real_kueue(control_plane, helm):
    plan = plan_stack(CLASSICAL).to_json()
    pool = "h100-train"
    trace = per_job_priority_trace(plan, pool)
    assert len({j.team for j in trace}) == 2, f"{CLASSICAL}'s {pool} is shared by two queues"
    model = load_model(plan).with_nodes({pool: 4 * sum(j.units for j in trace)})  # quota alone, as in Kueue
    sim = {j.id: j for j in simulate(model, trace, KUEUE_CALIBRATED).jobs}
    real_kueue = start_kueue(control_plane, CLASSICAL, plan, helm)
    try:
        real = replay(real_kueue, plan, trace, {q: namespace_of(plan, q) for q in queues(plan)},
                      timeout=sum(j.duration_s for j in trace) + 300)
    finally:
        real_kueue.cluster.close()
    sim_first = {n: j.first_start for n, j in sim.items()}
    real_first = {n: r.admissions[0] for n, r in real.items()}
    figures = {
        "jobs": len(trace), "pair order agreement": round(concordance(real_first, sim_first), 3),
        "evictions real": sum(r.evictions for r in real.values()),
        "evictions simulated": sum(j.evictions for j in sim.values()),
        "admissions real": sum(len(r.admissions) for r in real.values()),
        "per job": {n: {"team": j.team, "units": j.units, "priority": j.priority,
                        "sim": round(sim_first[n], 1), "real": round(real_first[n], 1),
                        "sim evictions": sim[n].evictions, "real evictions": real[n].evictions}
                    for n, j in ((tj.job_id, tj) for tj in trace)},
    }
    (real_kueue.folder / "per-job-priorities.json").write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures, indent=1))
    # Measured (docs/simulator.md): real Kueue evicted 28 and 35 times in two runs, the simulator 32; pair order
    # 0.998 and 0.995. The churn a priority per job makes, which the stress benchmarks pay for, is Kueue's own.
    assert figures["pair order agreement"] >= 0.9, figures
    assert figures["evictions real"] >= PER_JOB // 2, figures
    assert 2 / 3 <= figures["evictions simulated"] / figures["evictions real"] <= 1.5, figures
