"""Simulator: Kueue semantics, each on a small scenario whose outcome is computed by hand in the comments.

Unless said otherwise: one pool of 8-GPU nodes, 1-second cycles at whole seconds, no finish or eviction latency.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from gpu_platform.simulator import load_model
from gpu_platform.simulator.engine import DONE, INACTIVE, RUNNING, Simulation, Timing, build_jobs
from gpu_platform.simulator.model import Flavor, Model, Queue, Quota, Team
from gpu_platform.simulator.report import summarize
from gpu_platform.simulator.traces import TraceJob

from support.simulator import FAST, cq, kueue_plan, run

POOL = {"p": (2, {"nvidia.com/gpu": 8}, 8)}


def model(queues, pools=POOL, **kw):
    return load_model(kueue_plan(pools, queues, **kw))


def starts(jobs, names):
    return [jobs[n].first_start for n in names]


def test_one_head_per_queue_per_cycle_in_priority_then_fifo_order():
    # Nominal 2. All three arrive at 0. Cycle 0 admits the highest priority (b, 5); cycle 1 the next in FIFO
    # order among equals (c); a (priority 0) waits for quota: b ends at 100.
    m = model({"q": cq({"p": 2}, cohort=None)})
    _, jobs = run(m, [("a", "q", 0, 100, 1, None, 0), ("b", "q", 0, 100, 1, None, 5), ("c", "q", 0, 100, 1, None, 5)])
    assert starts(jobs, "bca") == [0, 1, 100]


def test_cycle_length_is_a_parameter():
    m = model({"q": cq({"p": 4}, cohort=None)})
    _, jobs = run(m, [(f"j{i}", "q", 0, 100, 1) for i in range(3)], timing=replace(FAST, cycle_s=5.0))
    assert starts(jobs, ["j0", "j1", "j2"]) == [0, 5, 10]


@pytest.mark.parametrize("a_quota, b_quota, expected", [
    # a: nominal 4, borrowingLimit 2 -> 6 run at once, one admitted per cycle; the 7th when the first ends.
    ((4, 2, None), 4, [0, 1, 2, 3, 4, 5, 1000, 1001]),
    # no borrowing limit: all 8 (b lends its whole nominal quota).
    ((4, None, None), 4, [0, 1, 2, 3, 4, 5, 6, 7]),
    # b lends at most 1 (lendingLimit): 5 at once.
    ((4, None, None), (4, None, 1), [0, 1, 2, 3, 4, 1000, 1001, 1002]),
])
def test_borrowing_unused_cohort_quota_within_limits(a_quota, b_quota, expected):
    m = model({"a": cq({"p": a_quota}), "b": cq({"p": b_quota})})
    _, jobs = run(m, [(f"a{i}", "a", 0, 1000, 1) for i in range(8)])
    assert sorted(j.first_start for j in jobs.values()) == expected


@pytest.mark.parametrize("policy, a_priority, b_priority, expected", [
    # a borrowed b's 4 GPUs (admitted at 4..7). b's first job (cycle 10) reclaims the most recently admitted
    # borrower (a7), is admitted in cycle 11; its second job reclaims a6 in cycle 12, admitted in cycle 13.
    ("Any", 10, 0, [11, 13]),
    ("LowerPriority", 0, 10, [11, 13]),
    # a's jobs have the higher priority: LowerPriority may not touch them, Never touches nothing; b waits for
    # a's first jobs to end at 1000 and 1001.
    ("LowerPriority", 10, 0, [1000, 1001]),
    ("Never", 0, 10, [1000, 1001]),
])
def test_reclaim_within_cohort_policies(policy, a_priority, b_priority, expected):
    m = model({"a": cq({"p": 4}), "b": cq({"p": 4}, reclaim=policy)})
    result, jobs = run(m, [*((f"a{i}", "a", 0, 1000, 1, None, a_priority) for i in range(8)),
                           ("b0", "b", 10, 100, 1, None, b_priority), ("b1", "b", 10, 100, 1, None, b_priority)])
    assert starts(jobs, ["b0", "b1"]) == expected
    if expected[0] < 1000:
        assert [(p.job, p.reason, p.time) for p in result.preemptions] == [
            ("a7", "InCohortReclamation", 10), ("a6", "InCohortReclamation", 12)]
    else:
        assert result.preemptions == []


def test_nominal_quota_is_reachable_after_lending_it():
    # b lends its 8 to a. a is admitted one job per cycle (a0..a9 by t=9; FIFO ties go by job id, so a10..a15
    # come before a2); b's jobs arrive at 10 and take the free quota in cycles 10-12 (a gets 13). From then on
    # each b head reclaims a's most recently admitted job, waits the 30 s pod termination as its queue's
    # sticky head, and is admitted: every 31 s until b holds its nominal 8.
    m = model({"a": cq({"p": 8}), "b": cq({"p": 8}, reclaim="Any")})
    timing = replace(FAST, evict_latency_s=30.0)
    result, jobs = run(m, [*((f"a{i}", "a", 0, 5000, 1) for i in range(16)),
                           *((f"b{i}", "b", 10, 5000, 1) for i in range(8))], timing=timing, horizon=200)
    assert [jobs[f"b{i}"].first_start for i in range(8)] == [10, 11, 12, 43, 74, 105, 136, 167]
    assert [(p.job, p.time) for p in result.preemptions] == [("a6", 43), ("a5", 74), ("a4", 105), ("a3", 136),
                                                             ("a2", 167)]
    assert sum(1 for j in jobs.values() if j.queue == "b" and j.state == RUNNING) == 8


@pytest.mark.parametrize("policy, expected_high, expected_evicted", [
    # Nominal 2 held by two low-priority jobs (started 0 and 1). The high one (t=5) evicts the most recently
    # admitted (low1) and starts in cycle 6; low1 runs again when high ends (106).
    ("LowerPriority", 6, ("low1", 106)),
    ("Never", 1000, None),
])
def test_preemption_inside_a_queue_by_priority(policy, expected_high, expected_evicted):
    m = model({"q": cq({"p": 2}, cohort=None, within=policy)})
    result, jobs = run(m, [("low0", "q", 0, 1000, 1, None, 0), ("low1", "q", 0, 1000, 1, None, 0),
                           ("high", "q", 5, 100, 1, None, 10)])
    assert jobs["high"].first_start == expected_high
    if expected_evicted:
        name, restart = expected_evicted
        assert [(p.job, p.reason) for p in result.preemptions] == [(name, "InClusterQueue")]
        assert jobs[name].start_t == restart and jobs[name].evictions == 1
    else:
        assert result.preemptions == []


@pytest.mark.parametrize("strategy, expected", [
    # a (2 of 4) runs; b (4) does not fit. BestEffortFIFO lets c (1) past b; b then waits for a and c (102).
    ("BestEffortFIFO", {"a": 0, "b": 102, "c": 2}),
    # StrictFIFO: c waits behind b; b starts when a ends, c when b ends.
    ("StrictFIFO", {"a": 0, "b": 100, "c": 200}),
])
def test_queueing_strategy(strategy, expected):
    m = model({"q": cq({"p": 4}, cohort=None, strategy=strategy)})
    _, jobs = run(m, [("a", "q", 0, 100, 2), ("b", "q", 1, 100, 4), ("c", "q", 2, 100, 1)])
    assert {n: j.first_start for n, j in jobs.items()} == expected


GANG_POOL = {"train": (4, {"nvidia.com/gpu": 8}, 8)}
GANG_JOBS = [("A", "a", 0, 100, 16), ("B", "b", 0, 100, 16)]


def gang_model(**pods_ready):
    # Quotas fit the planned 4 nodes; only 2 are up (`--nodes train=2`, the autoscaler not yet scaled out).
    return model({"a": cq({"train": 16}, cohort=None), "b": cq({"train": 16}, cohort=None)}, pools=GANG_POOL,
                 pods_ready=pods_ready or None).with_nodes({"train": 2})


def test_without_gang_partial_starts_hold_gpus_and_deadlock():
    # Both 2x8-GPU jobs are admitted in cycle 0 (quota allows it); their pods are created together, so the
    # scheduler binds A0 and B0 (one node each) and neither A1 nor B1 ever fits: 16 GPUs held, nothing runs.
    result, jobs = run(gang_model(), GANG_JOBS)
    assert [len(j.bound) for j in jobs.values()] == [1, 1]
    assert all(j.first_start is None for j in jobs.values())
    assert result.stalled == 2 and result.group_peaks["train/nvidia.com/gpu"] == (16, 16)


def test_wait_for_pods_ready_times_out_and_requeues_with_backoff():
    # Same collision with waitForPodsReady (timeout 600 s, backoff 60 s doubling, limit 2) and 30 s pod
    # termination: both time out at 600, their pods are gone at 630, both are requeued at 690 and collide again
    # (timeout 1290, gone 1320, requeued 1320+120), again (gone 2070), and are then deactivated.
    m = gang_model(timeout="10m", requeuingStrategy={"backoffBaseSeconds": 60, "backoffLimitCount": 2})
    result, jobs = run(m, GANG_JOBS, timing=replace(FAST, evict_latency_s=30.0))
    assert sorted(p.time for p in result.preemptions) == [630, 630, 1320, 1320, 2070, 2070]
    assert {p.reason for p in result.preemptions} == {"PodsReadyTimeout"}
    assert [j.admit_t for j in jobs.values()] == [1440, 1440]
    assert all(j.state == INACTIVE and j.timeouts == 3 for j in jobs.values())
    assert summarize(result)["overall"]["jobs_deactivated"] == 2
    # With instant pod termination the first timeout frees A's node before B's timeout is handled: B starts
    # at 600, A is requeued at 660 and starts when B ends.
    result, jobs = run(m, GANG_JOBS)
    assert [(p.job, p.time) for p in result.preemptions] == [("A", 600)]
    assert starts(jobs, "BA") == [600, 700] and result.end == 800


def test_gang_with_block_admission_runs_all_or_nothing():
    # blockAdmission: A is admitted alone, binds both nodes and runs; B is admitted once A is ready and starts
    # when A ends. No GPU is ever held by a partial gang.
    result, jobs = run(gang_model(timeout="10m", blockAdmission=True), GANG_JOBS)
    assert starts(jobs, "AB") == [0, 100]
    assert all(j.state == DONE for j in jobs.values()) and result.preemptions == []


def test_block_admission_admits_the_entry_in_hand_once_ready():
    # One 8-GPU node, quota 24. x runs 0-100; a is admitted at 1 but its pod waits for x's node, so a is not ready.
    # Kueue's cycle at 2 nominates b, which fits, and waits on it (waitForPodsReadyIfNeeded) until a is ready at
    # 100, then admits b: c (priority 10, arrived at 50 while the scheduler waited) comes after b, though it would
    # head the queue if the cycle were run again. b runs after a (200), c after b (300).
    m = model({"q": cq({"p": 24}, cohort=None)}, pools={"p": (1, {"nvidia.com/gpu": 8}, 8)},
              pods_ready={"timeout": "10m", "blockAdmission": True})
    _, jobs = run(m, [("x", "q", 0, 100, 8), ("a", "q", 1, 100, 8), ("b", "q", 2, 100, 8),
                      ("c", "q", 50, 100, 8, None, 10)])
    assert [jobs[n].admit_t for n in "xabc"] == [0, 1, 100, 200]
    assert starts(jobs, "xabc") == [0, 100, 200, 300]


def test_equal_entries_of_two_queues_go_in_submission_order():
    # Kueue's classical iterator: not borrowing first, then priority, then the queue-order timestamp; equal
    # timestamps are left in no defined order (an unstable sort), which the simulator fixes as submission order.
    # a and b arrive together, each within its nominal quota: a (first in the trace) takes the shared node first.
    m = model({"a": cq({"p": 8}), "b": cq({"p": 8})}, pools={"p": (1, {"nvidia.com/gpu": 8}, 8)})
    _, jobs = run(m, [("ja", "a", 0, 100, 8), ("jb", "b", 0, 100, 8)])
    assert starts(jobs, ["ja", "jb"]) == [0, 100]


def test_mig_slices_and_shared_replicas_are_their_own_resources():
    # One A100 node in a mixed MIG layout (32 x 1g, 8 x 3g) and one L4 node time-sliced 4 ways (16 replicas).
    pools = {"a100": (1, {"nvidia.com/mig-1g.10gb": 32, "nvidia.com/mig-3g.40gb": 8}, 8),
             "l4": (1, {"nvidia.com/gpu": 16}, 4)}
    queues = {"q": cq({("a100", "nvidia.com/mig-1g.10gb"): 40, ("a100", "nvidia.com/mig-3g.40gb"): 8,
                       ("l4", "nvidia.com/gpu"): 16}, cohort=None)}
    m = model(queues, pools=pools)
    jobs = [*((f"s{i}", "q", 0, 100, 1, "a100/mig-1g.10gb") for i in range(34)),
            ("big", "q", 0, 100, 8, "a100/mig-3g.40gb"), ("nb", "q", 0, 100, 16, "l4")]
    result, sim_jobs = run(m, jobs, timing=replace(FAST, cycle_s=0.01))
    # Quota admits 34 one-slice jobs, but a node has 32 slices: two wait for pods; the 3g job and the 16
    # replicas do not compete with them.
    assert sum(1 for j in sim_jobs.values() if j.first_start >= 100) == 2
    assert sim_jobs["big"].first_start < 1 and sim_jobs["nb"].first_start < 1
    assert result.group_peaks["a100/nvidia.com/mig-1g.10gb"] == (32, 32)
    # In GPUs: 32 x 1/7 + 8 x 3/7 on the A100 node, 16 x 1/4 on the L4 node, for 100 s.
    assert sum(result.alloc_area) == pytest.approx((32 / 7 + 24 / 7 + 4) * 100 + 2 / 7 * 100, rel=1e-3)


def test_fair_sharing_preempts_down_to_weighted_shares():
    # c lends 8 and runs nothing; a (weight 1) borrowed all 8 first. b (weight 3) arrives: with fair sharing
    # b preempts while its share after admission (n+1)/3 stays <= a's after the preemption (7-n): n <= 5,
    # so b ends with 6 GPUs and a with 2. Classic preemption lets b take nothing (it would borrow).
    queues = {"a": cq({"p": 0}, reclaim="Any", weight=1), "b": cq({"p": 0}, reclaim="Any", weight=3),
              "c": cq({"p": 8}, reclaim="Any", weight=1)}
    jobs = [*((f"a{i}", "a", 0, 1000, 1) for i in range(8)), *((f"b{i}", "b", 10, 1000, 1) for i in range(8))]
    for fair, expected in ((True, {"a": 2, "b": 6}), (False, {"a": 8, "b": 0})):
        _, sim_jobs = run(model(queues, fair=fair), jobs, horizon=200)
        running = {t: sum(1 for j in sim_jobs.values() if j.queue == t and j.state == RUNNING) for t in "ab"}
        assert running == expected, fair


def test_finish_latency_keeps_quota_admitted():
    # A job's end is noticed 0.5 s late: the next job of a full queue starts at 10.5 -> cycle 11.
    m = model({"q": cq({"p": 1}, cohort=None)})
    _, jobs = run(m, [("a", "q", 0, 10, 1), ("b", "q", 0, 10, 1)], timing=Timing(1.0, 0.5, 0.0))
    assert starts(jobs, "ab") == [0, 11]


def test_a_livelock_is_detected_and_stops_the_run():
    # The collision above without backoffLimitCount (Kueue's default: retry forever) and with the backoff capped
    # at 60 s: A and B time out together, are requeued together and collide again, forever. The run stops once
    # one of them has been evicted LIVELOCK_REPEATS (10) times with no job completed, and names both and their
    # queues. (Before: no end, until 2 ** timeouts overflowed a float.)
    m = gang_model(timeout="5m", requeuingStrategy={"backoffBaseSeconds": 60, "backoffMaxSeconds": 60})
    result, jobs = run(m, GANG_JOBS, timing=replace(FAST, evict_latency_s=30.0))
    livelock = result.livelock
    assert livelock is not None and livelock.kind == "evictions"
    assert livelock.jobs == {"A": 10, "B": 9} and livelock.queues == ["a", "b"]
    assert livelock.reasons == {"PodsReadyTimeout": 19} and livelock.since == 0
    # Each round: timeout 300 s, 30 s termination, 60 s backoff, so A's tenth eviction is at 10 x 390 - 60.
    assert result.end == 3840 and all(j.first_start is None for j in jobs.values())
    report = summarize(result)
    assert report["livelock"]["jobs"] == {"A": 10, "B": 9} and "livelock: stopped at 3840 s" in \
        report["livelock"]["message"]


def test_a_churn_beside_a_running_job_is_not_a_livelock():
    # The same collision with a third node, taken by C (queue c) until 5000 s. A and B collide on the two others
    # and A is evicted for the tenth time at 3840 s, but C is still due to end, and its end can break the collision
    # (it did on the docs' 2,000-job aws-prod trace). So the run goes on: at 5000 s a whole node frees, A binds both
    # of its pods on the next round and runs, B times out again and runs after it. (Before: stopped at 3840 s.)
    m = model({"a": cq({"train": 16}, cohort=None), "b": cq({"train": 16}, cohort=None),
               "c": cq({"train": 8}, cohort=None)}, pools=GANG_POOL,
              pods_ready={"timeout": "5m", "requeuingStrategy": {"backoffBaseSeconds": 60, "backoffMaxSeconds": 60}})
    result, jobs = run(m.with_nodes({"train": 3}), [("C", "c", 0, 5000, 8), *GANG_JOBS],
                       timing=replace(FAST, evict_latency_s=30.0))
    assert result.livelock is None
    assert all(j.state == DONE for j in jobs.values()) and jobs["A"].evictions >= 10
    assert 5000 <= jobs["A"].first_start < jobs["B"].first_start


def test_fair_sharing_orders_non_borrowing_entries_first():
    # Kueue's fair sharing tournament (fair_sharing_iterator.go, FairSharingPrioritizeNonBorrowing, on by default
    # since v0.17) puts an entry that does not borrow on the flavors it asks for before one that does, and only
    # then compares dominant resource shares. b borrows 4 of c's 8 H100s (share 4/8 = 500 per mille); at 10, a
    # asks 4 A100s on nominal 2 (borrows 2 of the 8 lendable: share 250) and b 6 A100s within its nominal 6.
    # b goes first: a's 4 no longer fit in the 8 and wait for b's to end. (Before: lowest share first, a at 10
    # and b at 1010.)
    pools = {"h100": (1, {"nvidia.com/gpu": 8}, 8), "a100": (1, {"nvidia.com/gpu": 8}, 8)}
    queues = {"a": cq({"h100": 0, "a100": 2}), "b": cq({"h100": 0, "a100": 6}), "c": cq({"h100": 8, "a100": 0})}
    jobs = [*((f"bh{i}", "b", 0, 5000, 1, "h100") for i in range(4)),
            ("a", "a", 10, 1000, 4, "a100"), ("b", "b", 10, 1000, 6, "a100")]
    _, sim_jobs = run(model(queues, pools=pools, fair=True), jobs)
    assert starts(sim_jobs, ["b", "a"]) == [10, 1010]


def test_no_preemption_for_a_request_above_nominal_without_borrow_within_cohort():
    # Kueue's fitsResourceQuota (flavorassigner.go) looks for preemption targets only if the request is within
    # nominal quota, or the queue may preempt while borrowing (borrowWithinCohort, or fair sharing with
    # reclaimWithinCohort). a (nominal 8) runs 12 low-priority GPUs (4 borrowed from b); at 20 a high-priority
    # 12-GPU job arrives: above nominal, so NoFit, and it waits for quota: a's jobs (admitted one per cycle at
    # 0..11) and b's (0..3) end at 1000 + their admission, 12 GPUs are free at 1007. (Before: it preempted a's
    # jobs, which came back, and started at 4001.) With borrowWithinCohort it preempts all 12 and is admitted
    # in the next cycle (its pods then wait for room: b's 4 GPUs sit on the node a 6-GPU pod needs).
    jobs = [*((f"low{i}", "a", 0, 1000, 1, None, 0) for i in range(12)),
            *((f"b{i}", "b", 0, 1000, 1) for i in range(4)), ("high", "a", 20, 100, 12, None, 10)]
    queues = {"a": cq({"p": 8}, within="LowerPriority"), "b": cq({"p": 8})}
    result, sim_jobs = run(model(queues), jobs)
    assert sim_jobs["high"].first_start == 1007 and result.preemptions == []
    queues["a"] = cq({"p": 8}, within="LowerPriority", borrow_within={"policy": "LowerPriority"})
    result, sim_jobs = run(model(queues), jobs)
    assert sim_jobs["high"].admit_t == 21 and len(result.preemptions) == 12


def test_flavor_choice_prefers_reclaim_over_preemption_in_its_own_queue():
    # Default flavorFungibility (whenCanPreempt: TryNextFlavor): Kueue tries every flavor and keeps the best
    # preemption (flavorassigner.go isPreferred): reclaim (targets only in other queues) beats preempt (targets
    # in its own queue). a fills its 8 p1 GPUs with low-priority jobs; b borrows a's 4 p2 GPUs. a's high job
    # (4 GPUs, any flavor) could preempt 4 of its own on p1, or reclaim 4 of b's on p2: it reclaims on p2.
    # (Before: the first flavor with targets, p1, evicting 4 of a's own jobs.)
    pools = {"p1": (1, {"nvidia.com/gpu": 8}, 8), "p2": (1, {"nvidia.com/gpu": 8}, 8)}
    queues = {"a": cq({"p1": 8, "p2": 4}, within="LowerPriority", reclaim="Any"), "b": cq({"p1": 0, "p2": 4})}
    jobs = [*((f"low{i}", "a", 0, 1000, 1, "p1", 0) for i in range(8)),
            *((f"b{i}", "b", 0, 1000, 1, "p2") for i in range(8)), ("high", "a", 20, 100, 4, None, 10)]
    result, sim_jobs = run(model(queues, pools=pools), jobs)
    assert {(p.team, p.reason) for p in result.preemptions} == {("b", "InCohortReclamation")}
    assert len(result.preemptions) == 4 and sim_jobs["high"].flavor == "p2"


def test_a_cycle_does_not_wait_for_its_admission_patches():
    # Kueue sends the admission patch from a goroutine (scheduler.go admit) and goes on with the next cycle; only
    # synchronous writes (status patches, evictions) make a cycle wait. A client at 1 QPS with one token, one queue
    # with room for all, a flavor without nodes (a job starts when its patch lands): the cycles at 0, 0.25, 0.5 and
    # 0.75 assume s1..s4, whose patches land at 0, 1, 2 and 3. b (priority 10) arrives at 0.8, after s4 was
    # assumed, so its patch lands last, at 4. When a cycle waited for its admissions, the cycle after s2's came at
    # 1, where b was the head: b landed at 2, before s3 and s4.
    tiny = Model(scheduler="kueue", pools={}, flavors={"rf": Flavor("rf", None)},
                 queues={"q": Queue(name="q", cohort=None, quotas={("rf", "cpu"): Quota(10, None)})},
                 teams={"q": Team("q", "q")}, source="tiny")
    trace = [TraceJob(f"s{i}", "q", 0.0, 100.0, 1, resource="cpu", priority=0) for i in (1, 2, 3, 4)]
    trace.append(TraceJob("b", "q", 0.8, 100.0, 1, resource="cpu", priority=10))
    jobs = build_jobs(tiny, trace)
    Simulation(tiny, jobs, Timing(cycle_s=0.25, api_qps=1.0, api_burst=1)).run()
    assert sorted((j.admit_t, j.id) for j in jobs) == [(0.0, "s1"), (1.0, "s2"), (2.0, "s3"), (3.0, "s4"),
                                                        (4.0, "b")]
