"""Discrete-event simulation: arrivals, scheduling cycles, pod packing on nodes, completions and evictions.

Events sit in one heap; nothing loops over all jobs per tick. A scheduler (Kueue or Volcano semantics, found by
name in scheduler.py's registry, never imported here) decides admission once per cycle; this module owns what
happens after: pods are bound to real nodes of the flavor's pool (so a gang needs room on whole nodes and
fragmentation shows), a job runs once all its pods are bound, and GPUs are accounted per team for the report.
"""
from __future__ import annotations

import heapq
import itertools
import math
from array import array
from bisect import insort
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from gpu_platform.simulator.errors import SimulationError
from gpu_platform.simulator.model import ANY_FLAVOR, GPU, Model
from gpu_platform.simulator.scheduler import Scheduler, scheduler_for

QUEUED, BACKOFF, ADMITTED, RUNNING, DONE, INACTIVE, EVICTING = range(7)
# Event kinds, in the order they are handled when they fall on the same instant.
FINISH, EVICTED, TIMEOUT, REQUEUE, ARRIVAL, CYCLE = range(6)
PROGRESS_EVERY = 8192  # events between progress reports: rare enough to cost nothing in the loop
# Livelock bounds (issue 27): a run stops, and says why, when one job has been evicted LIVELOCK_REPEATS times
# while no job completed (the same workloads evicted and readmitted without progress) and no running job outside
# that churn is left to complete (its end frees quota and nodes, which can end the churn), or when
# LIVELOCK_IDLE_CYCLES cycles in a row changed nothing (a scheduler that keeps asking for cycles in vain).
LIVELOCK_REPEATS = 10
LIVELOCK_IDLE_CYCLES = 10_000


@dataclass(frozen=True)
class Timing:
    """The cycle model: how often the scheduler runs, and how late a job's end is noticed.

    `cycle_s` is Kueue's scheduling cycle (one head per ClusterQueue per cycle) or Volcano's schedulePeriod.
    `finish_latency_s` is the delay between a job's work ending and the scheduler seeing it finished (job
    controller and API round trips): until then the workload stays admitted, holding its quota and its pods, and
    may still be preempted. It matters for second-long jobs only. `evict_latency_s` is how long an evicted job
    keeps its pods and quota (the pods' termination grace period, 30 s by default in Kubernetes) before it is
    requeued. The first two are calibrated on Kueue's performance test (docs/simulator.md).

    `api_qps` and `api_burst` are the scheduler's API client rate limit (client-go's token bucket; 0: unlimited):
    with Kueue every admission and every status patch of a head it did not admit is a write through it. A cycle
    waits for its synchronous writes (status patches, evictions), which queue behind every admission patch still
    waiting, so with hundreds of queues the writes set the admission rate, while admitted quota is held from the
    cycle until the admission patch lands and the job runs.
    """

    cycle_s: float = 1.0
    finish_latency_s: float = 0.0
    evict_latency_s: float = 30.0
    api_qps: float = 0.0
    api_burst: int = 0


class Job:
    """One workload during a simulation."""

    __slots__ = ("seq", "id", "team", "queue", "submit", "duration", "units", "resource", "pools", "priority",
                 "label", "state", "ts", "flavor", "group", "admit_t", "first_start", "start_t", "finish_t",
                 "evictions", "timeouts", "run", "bound", "waiting", "cand_groups", "bucket", "evict_reason",
                 "evict_from")

    def __init__(self, seq: int, id: str, team: int, queue: str, submit: float, duration: float, units: int,
                 resource: str, pools: tuple[str, ...] | None, priority: int, label: str = ""):
        self.seq, self.id, self.team, self.queue = seq, id, team, queue
        self.submit, self.duration, self.units, self.resource = submit, duration, units, resource
        self.pools, self.priority, self.label = pools, priority, label
        self.state = QUEUED
        self.ts = submit  # queue order timestamp: creation, or the last PodsReady eviction
        self.flavor: str | None = None
        self.group: NodeGroup | None = None
        self.admit_t = self.first_start = self.start_t = self.finish_t = None
        self.evictions = self.timeouts = self.run = self.waiting = 0
        self.bound: list[tuple[int, int]] = []
        self.cand_groups: tuple = ()
        self.bucket = None
        self.evict_reason = ""
        self.evict_from = QUEUED  # the state an eviction started from


def pods_for(units: int, per_node: int) -> list[int]:
    """Split a job into equal pods that each fit one node: the fewest pods whose size divides the job."""
    if units <= per_node:
        return [units]
    count = -(-units // per_node)
    while units % count:
        count += 1
    return [units // count] * count


class NodeGroup:
    """The nodes of one pool, counted in one advertised resource, with the pods waiting for room on them."""

    __slots__ = ("pool", "resource", "cap", "nodes", "capacity", "eq", "free", "by_free", "free_total", "pending",
                 "pending_sizes", "binpack", "demand", "contrib", "peak_used", "used_area", "used_since", "idle_area",
                 "since")

    def __init__(self, pool: str, resource: str, cap: int, nodes: int, eq: float, binpack: bool):
        self.pool, self.resource, self.cap, self.nodes, self.eq, self.binpack = pool, resource, cap, nodes, eq, binpack
        self.capacity = cap * nodes
        self.free = [cap] * nodes
        # The nodes with k units free, as a bit mask (bit i: node i): the lowest-numbered node of a level, which
        # find() returns, is then one bit operation instead of a scan over a set.
        self.by_free = [0] * (cap + 1)
        self.by_free[cap] = (1 << nodes) - 1
        self.free_total = cap * nodes
        self.pending: list[tuple] = []  # (-priority, created, pod index, job seq, size, job): kube-scheduler order
        self.pending_sizes: dict[int, int] = {}
        self.demand = 0  # units wanted by jobs not running that could use this group
        self.contrib = 0.0
        self.peak_used = 0
        self.used_area = 0.0  # unit-seconds bound to pods
        self.used_since = 0.0
        self.idle_area = 0.0  # unit-seconds idle while waiting jobs could use them
        self.since = 0.0

    def find(self, size: int) -> int:
        """A node with room for `size`: the fullest that fits (binpack) or the emptiest (spread); -1 if none."""
        by_free = self.by_free
        levels = range(size, self.cap + 1) if self.binpack else range(self.cap, size - 1, -1)
        for k in levels:
            nodes = by_free[k]
            if nodes:
                return (nodes & -nodes).bit_length() - 1
        return -1

    def max_free(self) -> int:
        by_free = self.by_free
        for k in range(self.cap, 0, -1):
            if by_free[k]:
                return k
        return 0

    def take(self, node: int, size: int) -> None:
        before = self.free[node]
        if size > before:
            raise AssertionError(f"{self.pool}: node {node} over capacity")
        bit = 1 << node
        self.by_free[before] &= ~bit
        self.by_free[before - size] |= bit
        self.free[node] = before - size
        self.free_total -= size
        used = self.capacity - self.free_total
        if used > self.peak_used:
            self.peak_used = used

    def give(self, node: int, size: int) -> None:
        before = self.free[node]
        bit = 1 << node
        self.by_free[before] &= ~bit
        self.by_free[before + size] |= bit
        self.free[node] = before + size
        self.free_total += size

    def fits_all(self, units: int) -> bool:
        """Whether every pod of a job can be bound at once (gang); pods are equal, so any order gives the same."""
        sizes = pods_for(units, self.cap)
        size = sizes[0]
        room = 0
        for k in range(size, self.cap + 1):
            room += self.by_free[k].bit_count() * (k // size)
            if room >= len(sizes):
                return True
        return False


@dataclass
class Preemption:
    """One eviction of a started or starting job."""

    time: float
    job: str
    team: str
    reason: str  # InClusterQueue, InCohortReclamation, InCohortFairSharing, PodsReadyTimeout, VolcanoPreempt, ...
    lost_gpu_s: float  # GPU time thrown away (running time since start, or time pods sat bound without starting)


@dataclass
class SimResult:
    """Everything the report needs, and the invariants tests check."""

    model: Model
    timing: Timing
    jobs: list[Job]
    teams: list[str]
    end: float
    capacity_gpus: float
    team_nominal_gpus: list[float]
    alloc_area: list[float]  # GPU-seconds bound to pods, per team
    usage_area: list[float]  # GPU-seconds of admitted quota, per team
    series_t: array
    series_team: array
    series_value: array
    idle_pending_gpu_s: float
    preemptions: list[Preemption]
    group_peaks: dict[str, tuple[int, int]]  # "pool/resource" -> (peak units bound, capacity)
    groups: dict[str, dict[str, float]]  # "pool/resource" -> capacity_gpus, used_gpu_s, idle_pending_gpu_s
    stalled: int  # admitted jobs whose pods never all started and that nothing will ever evict
    cycles: int
    checks: dict[str, int] = field(default_factory=dict)
    livelock: Livelock | None = None  # set when the run was stopped for making no progress
    never_admittable: list = field(default_factory=list)  # scheduler.Blocked, for jobs no admission can take


@dataclass
class Livelock:
    """Why a run was stopped early: the workloads evicted again and again since the last completion, and their
    queues."""

    time: float  # when the run was stopped
    since: float  # the last completion
    kind: str  # "evictions" (the same workloads evicted and readmitted) or "idle-cycles"
    evictions: int  # evictions since `since`
    jobs: dict[str, int]  # job id -> evictions since `since` (jobs evicted at least twice)
    queues: list[str]
    reasons: dict[str, int]  # eviction reason -> count since `since`

    def describe(self) -> str:
        if self.kind == "idle-cycles":
            return (f"stopped at {self.time:.0f} s: {LIVELOCK_IDLE_CYCLES} scheduling cycles in a row changed "
                    f"nothing (queues {', '.join(self.queues) or 'none'})")
        jobs = ", ".join(f"{j} x{n}" for j, n in list(self.jobs.items())[:10])
        more = f" and {len(self.jobs) - 10} more" if len(self.jobs) > 10 else ""
        reasons = ", ".join(f"{r} {n}" for r, n in sorted(self.reasons.items()))
        return (f"livelock: stopped at {self.time:.0f} s after {self.evictions} evictions ({reasons}) and no job "
                f"completed since {self.since:.0f} s; jobs evicted again and again: {jobs}{more}; "
                f"queues {', '.join(self.queues)}")


class Simulation:
    """Run jobs through a model; `check=True` verifies capacity and quota invariants after every event."""

    def __init__(self, model: Model, jobs: list[Job], timing: Timing = Timing(), horizon: float | None = None,
                 check: bool = False):
        if timing.cycle_s <= 0:
            raise SimulationError("the cycle length must be > 0 seconds")
        if timing.api_qps < 0 or timing.api_burst < 0:
            raise SimulationError("the API rate limit (qps, burst) must be >= 0")
        self.model, self.jobs, self.timing, self.horizon, self.check = model, jobs, timing, horizon, check
        self.teams = list(model.teams)
        binpack = model.placement == "binpack"
        self.groups: dict[tuple[str, str], NodeGroup] = {}
        for pool in model.pools.values():
            for resource, per_node in pool.per_node.items():
                self.groups[(pool.name, resource)] = NodeGroup(pool.name, resource, per_node, pool.nodes,
                                                               pool.gpu_equivalent(resource), binpack)
        self.events: list[tuple] = []
        self.touched: list[NodeGroup] = []  # groups with pods created this cycle, placed when it ends
        self.counter = itertools.count()
        self.pools_of = {name: f.pool for name, f in model.flavors.items() if name != ANY_FLAVOR}
        self.ready_timeout = model.gang.timeout_s if model.scheduler == "kueue" and model.gang.enabled else None
        self.now = 0.0
        self.cycles = 0
        n = len(self.teams)
        self.alloc = [0.0] * n
        self.alloc_since = [0.0] * n
        self.alloc_area = [0.0] * n
        self.usage = [0.0] * n
        self.usage_since = [0.0] * n
        self.usage_area = [0.0] * n
        self.series_t, self.series_team, self.series_value = array("d"), array("i"), array("d")
        self.idle_rate = 0.0
        self.idle_since = 0.0
        self.idle_area = 0.0
        self.preemptions: list[Preemption] = []
        self.checks = {"events": 0}
        # Livelock detection: evictions per job since the last completion, and idle cycles in a row.
        self.repeats = LIVELOCK_REPEATS
        self.since_progress: dict[Job, int] = {}
        self.progress_t = 0.0
        self.completion_due = -math.inf  # the next end of a running job that no eviction has touched since then
        self.evicted_since = 0
        self.reasons_since: dict[str, int] = {}
        self.changes = 0  # events other than cycles, admissions and evictions so far
        self.cycle_changes = 0
        self.idle_cycles = 0
        self.livelock: Livelock | None = None
        self.scheduler: Scheduler = scheduler_for(model.scheduler)(self)

    # ---- the loop ---------------------------------------------------------------------------------------------
    def push(self, t: float, kind: int, job: Job | None = None, run: int = 0) -> None:
        heapq.heappush(self.events, (t, kind, next(self.counter), job, run))

    def run(self, progress: Callable[[float], None] | None = None) -> SimResult:
        """Play every event; `progress`, if given, hears the simulated time every PROGRESS_EVERY events."""
        # Arrivals enter the heap one at a time, the next when one is played, so the heap holds only the events in
        # flight (every push and pop is cheaper) and plays them in the same order as if all were pushed up front:
        # no other event is an ARRIVAL, and the stable sort keeps the jobs' order among equal submit times.
        arrivals = iter(sorted(self.jobs, key=lambda j: j.submit))
        self._push_arrival(arrivals)
        events = self.events
        scheduler = self.scheduler
        horizon = math.inf if self.horizon is None else self.horizon
        check = self.check
        cycle_s = self.timing.cycle_s
        # The next cycle is kept out of the heap, which saves a push and a pop per cycle: there is at most one, and
        # it goes after every event of its instant, CYCLE being the last kind.
        cycle_at: float | None = None
        last_cycle = -math.inf
        every = PROGRESS_EVERY if progress is not None else 0
        countdown = every
        while True:
            if events and (cycle_at is None or events[0][0] <= cycle_at):
                t, kind, _, job, run = heapq.heappop(events)
            elif cycle_at is not None:
                t, kind, cycle_at = cycle_at, CYCLE, None
            else:
                break
            if every:
                countdown -= 1
                if not countdown:
                    countdown = every
                    progress(t)
            if t > horizon:
                self.now = horizon
                if kind == ARRIVAL:
                    self._push_arrival(arrivals)  # jobs still to arrive are events left: the run is not drained
                break
            if kind == CYCLE:
                self.now = t
                last_cycle = t
                self.cycles += 1
                scheduler.cycle(t)
                for group in self.touched:
                    self._place(group, t)
                self.touched.clear()
                if self.changes == self.cycle_changes:  # nothing happened since the last cycle, nor in this one
                    self.idle_cycles += 1
                    if self.idle_cycles >= LIVELOCK_IDLE_CYCLES:
                        self._stop("idle-cycles", t)
                        break
                else:
                    self.idle_cycles = 0
                    self.cycle_changes = self.changes
            elif kind == ARRIVAL:
                self.now = t
                self._push_arrival(arrivals)
                self._enqueue(job, t)
            elif job.run != run:
                continue  # an event of an earlier run of this job (it was evicted since)
            elif kind == FINISH and job.state in (RUNNING, EVICTING):
                self.now = t
                self._finish(job, t)
            elif kind == EVICTED and job.state == EVICTING:
                self.now = t
                self._evicted(job, t)
            elif kind == TIMEOUT and job.state == ADMITTED:
                self.now = t
                self.evict(job, "PodsReadyTimeout", t)
            elif kind == REQUEUE and job.state == BACKOFF:
                self.now = t
                self._demand(job, -1)
                job.state = QUEUED
                self._enqueue(job, t)
            else:
                continue
            if self.livelock is not None:
                break
            if kind != CYCLE:
                self.changes += 1
            if cycle_at is None and scheduler.wants_cycle():
                cycle_at = max(math.ceil(t / cycle_s - 1e-9) * cycle_s, last_cycle + cycle_s, scheduler.busy_until())
            if check:
                self._check()
        end = self.now if self.horizon is None or self.livelock is not None else max(self.now, self.horizon)
        return self._result(end, drained=not events and cycle_at is None)

    def _push_arrival(self, arrivals: Iterator[Job]) -> None:
        job = next(arrivals, None)
        if job is not None:
            self.push(job.submit, ARRIVAL, job)

    # ---- job lifecycle ----------------------------------------------------------------------------------------
    def _progress(self, t: float) -> None:
        """A job completed: the evictions before were not a livelock. (Arrivals do not count: they free no quota,
        and a livelock that goes on while jobs keep arriving would otherwise run for the whole trace.)"""
        self.progress_t = t
        self.completion_due = -math.inf
        if self.evicted_since:
            self.since_progress.clear()
            self.reasons_since.clear()
            self.evicted_since = 0

    def _completion_ahead(self, t: float) -> bool:
        """Whether a running job outside the churn (not evicted since the last completion) is still due to end.
        A churn beside such a job is not yet a livelock: on the docs' 2,000-job aws-prod trace, 6 jobs were evicted
        about every 90 s for 1,400 s while three long jobs ran; the first of them to end broke the churn and the run
        went on to complete 1,968 jobs, where the bound alone stopped it with 658."""
        if t < self.completion_due:
            return True
        due = [when for when, kind, _, job, run in self.events
               if kind == FINISH and job.run == run and job.state == RUNNING and job not in self.since_progress]
        self.completion_due = min(due, default=-math.inf)
        return bool(due)

    def _stop(self, kind: str, t: float) -> None:
        repeated = {j: n for j, n in sorted(self.since_progress.items(), key=lambda x: (-x[1], x[0].seq)) if n >= 2}
        if kind == "idle-cycles":
            queues = sorted({j.queue for j in self.jobs if j.state == QUEUED})
        else:
            queues = sorted({j.queue for j in repeated})
        self.livelock = Livelock(t, self.progress_t, kind, self.evicted_since, {j.id: n for j, n in repeated.items()},
                                 queues, dict(self.reasons_since))

    def _enqueue(self, job: Job, t: float) -> None:
        job.state = QUEUED
        self.scheduler.submit(job, t)
        self._demand(job, +1)

    def admit(self, job: Job, flavor: str, group: NodeGroup | None, t: float, place_now: bool = False,
              nodes: list[int] | None = None, landed: float | None = None) -> None:
        """Reserve quota and create the pods; called by the scheduler.

        `group` is where the pods go (None: a flavor without nodes, so the job starts at once). Pods are bound
        in kube-scheduler order as room appears: after the cycle, so the pods of workloads admitted together are
        created together and interleave (A0, B0, A1, B1), or at once with `place_now` (a scheduler that binds
        itself, after checking `fits_all` for a gang). `nodes` (one per pod) is a topology assignment made at
        admission (Kueue TAS): the pods carry those nodes in their selectors, so they bind there at once.
        `landed` is when the admission reaches the API server (the scheduler's rate-limited client), if later than
        `t`: a job without nodes is seen admitted and starts then; on nodes its pods are still created at `t`
        (a real stack's client, 300 QPS with a burst of 500, keeps that lag to a fraction of a second). With
        `place_now` it is when the binds went through: the nodes are taken at `t`, the job starts then.
        """
        self._demand(job, -1)
        self.changes += 1
        job.state = ADMITTED
        job.flavor = flavor
        job.admit_t = t
        job.group = group
        self._usage(job, +1, t)
        if group is None:
            if landed is not None:
                job.admit_t = max(t, landed)
            self._start(job, job.admit_t)
            return
        pods = pods_for(job.units, group.cap)
        job.waiting = len(pods)
        if nodes is not None:
            self._demand(job, +1)
            for node, size in zip(nodes, pods):
                self._bind(job, group, node, size, t)
                job.waiting -= 1
            self._start(job, t)
            return
        for index, size in enumerate(pods):
            insort(group.pending, (-job.priority, t, index, job.seq, size, job))
            group.pending_sizes[size] = group.pending_sizes.get(size, 0) + 1
        self._demand(job, +1)
        if self.ready_timeout is not None:
            self.push(t + self.ready_timeout, TIMEOUT, job, job.run)
        if place_now:
            self._place(group, t, landed)
        elif group not in self.touched:
            self.touched.append(group)

    def _place(self, group: NodeGroup, t: float, landed: float | None = None) -> None:
        """Bind waiting pods in queue order wherever they fit (unschedulable pods are skipped, as kube-scheduler
        does); jobs whose last pod is bound start."""
        pending = group.pending
        if not pending:
            return
        started = []
        i = 0
        # A pod fits somewhere exactly when it is no larger than the most units free on one node, and only a bind
        # changes that: it settles most pods without a search for a node.
        room = group.max_free()
        smallest = min(group.pending_sizes)
        while room >= smallest and i < len(pending):
            entry = pending[i]
            size = entry[4]
            if size > room:
                i += 1
                continue
            job = entry[5]
            del pending[i]
            self._unpend(group, size)
            self._bind(job, group, group.find(size), size, t)
            job.waiting -= 1
            if job.waiting == 0:
                started.append(job)
            if not pending:
                break
            room = group.max_free()
            smallest = min(group.pending_sizes)
        start = t if landed is None else max(t, landed)
        for job in started:
            self._start(job, start)

    def _unpend(self, group: NodeGroup, size: int) -> None:
        left = group.pending_sizes[size] - 1
        if left:
            group.pending_sizes[size] = left
        else:
            del group.pending_sizes[size]

    def _bind(self, job: Job, group: NodeGroup, node: int, size: int, t: float) -> None:
        self._group_used(group, t)
        group.take(node, size)
        self._refresh(group, t, -size)
        job.bound.append((node, size))
        self._alloc(job.team, size * group.eq, t)

    def _start(self, job: Job, t: float) -> None:
        self._demand(job, -1)
        job.state = RUNNING
        job.waiting = 0
        job.start_t = t
        if job.first_start is None:
            job.first_start = t
        self.push(t + job.duration + self.timing.finish_latency_s, FINISH, job, job.run)
        self.scheduler.started(job, t)

    def _unbind(self, job: Job, t: float) -> None:
        group = job.group
        if group is None:
            return
        self._group_used(group, t)
        for node, size in job.bound:
            group.give(node, size)
            self._alloc(job.team, -size * group.eq, t)
        if job.bound:
            self._refresh(group, t)
        job.bound = []
        if job.waiting:
            kept = [e for e in group.pending if e[5] is not job]
            for entry in group.pending:
                if entry[5] is job:
                    self._unpend(group, entry[4])
            group.pending[:] = kept

    def _finish(self, job: Job, t: float) -> None:
        self._progress(t)
        self._unbind(job, t)
        job.state = DONE
        job.finish_t = t
        self.scheduler.release(job, t)
        self._usage(job, -1, t)
        if job.group is not None:
            self._place(job.group, t)

    def evict(self, job: Job, reason: str, t: float) -> None:
        """Preempt or time out a job: its pods terminate (keeping GPUs and quota for `evict_latency_s`), then it
        is requeued (after a backoff on PodsReady timeouts)."""
        if job.state == EVICTING:
            return
        self.changes += 1
        job.evict_reason = reason
        job.evict_from = job.state
        group = job.group
        if job.waiting and group is not None:  # pods not yet bound are never created
            self._demand(job, -1)
            for entry in group.pending:
                if entry[5] is job:
                    self._unpend(group, entry[4])
            group.pending[:] = [e for e in group.pending if e[5] is not job]
            job.waiting = 0
        job.state = EVICTING
        if self.timing.evict_latency_s > 0:
            self.push(t + self.timing.evict_latency_s, EVICTED, job, job.run)
        else:
            self._evicted(job, t)

    def _evicted(self, job: Job, t: float) -> None:
        group = job.group
        scale = group.eq if group else 1.0
        if job.evict_from == RUNNING:
            lost = (t - job.start_t) * job.units * scale
        else:
            lost = (t - job.admit_t) * sum(size for _, size in job.bound) * scale
        reason = job.evict_reason
        self.preemptions.append(Preemption(t, job.id, self.teams[job.team], reason, lost))
        self.evicted_since += 1
        self.reasons_since[reason] = self.reasons_since.get(reason, 0) + 1
        count = self.since_progress[job] = self.since_progress.get(job, 0) + 1
        if count >= self.repeats and self.livelock is None and not self._completion_ahead(t):
            self._stop("evictions", t)
        self._unbind(job, t)
        job.run += 1
        job.evictions += 1
        self.scheduler.release(job, t, evicted=True, was_admitted=job.evict_from == ADMITTED)
        self._usage(job, -1, t)
        if reason == "PodsReadyTimeout":
            gang = self.model.gang
            job.timeouts += 1
            if gang.requeue_timestamp == "Eviction":
                job.ts = t
            if gang.backoff_limit is not None and job.timeouts > gang.backoff_limit:
                job.state = INACTIVE
            else:
                job.state = BACKOFF
                self._demand(job, +1)
                delay = min(gang.backoff_base_s * 2 ** min(job.timeouts - 1, 64), gang.backoff_max_s)
                self.push(t + delay, REQUEUE, job, job.run)
        else:
            self._enqueue(job, t)
        if group is not None:
            self._place(group, t)

    # ---- accounting -------------------------------------------------------------------------------------------
    def _alloc(self, team: int, delta: float, t: float) -> None:
        self.alloc_area[team] += self.alloc[team] * (t - self.alloc_since[team])
        self.alloc_since[team] = t
        self.alloc[team] += delta
        self.series_t.append(t)
        self.series_team.append(team)
        self.series_value.append(self.alloc[team])

    def _group_used(self, group: NodeGroup, t: float) -> None:
        """Accumulate bound unit-seconds up to t, before the group's free units change."""
        group.used_area += (group.capacity - group.free_total) * (t - group.used_since)
        group.used_since = t

    def _usage(self, job: Job, sign: int, t: float) -> None:
        team = job.team
        self.usage_area[team] += self.usage[team] * (t - self.usage_since[team])
        self.usage_since[team] = t
        group = self.groups.get((self.flavor_pool(job.flavor), job.resource))
        self.usage[team] += sign * job.units * (group.eq if group else 1.0)

    def flavor_pool(self, flavor: str | None) -> str | None:
        return self.pools_of.get(flavor)

    def _demand(self, job: Job, sign: int) -> None:
        """Add or remove what a waiting job could use: every candidate group while queued, its own group's
        unbound pods once admitted."""
        if job.state in (QUEUED, BACKOFF):
            for group in job.cand_groups:
                self._refresh(group, self.now, sign * job.units)
        elif job.state == ADMITTED and job.group is not None and job.waiting:
            size = pods_for(job.units, job.group.cap)[0]
            self._refresh(job.group, self.now, sign * size * job.waiting)

    def _refresh(self, group: NodeGroup, t: float, demand: int = 0) -> None:
        """Keep the integral over time of min(idle units, waiting demand), per group (in units) and overall (in
        GPUs), and each group's bound units over time. Called after every change of a group's free units."""
        # Most calls come at the instant of the last one (a cycle's admissions, a job's pods), where an area would
        # only grow by 0.0: skipping that leaves every sum bit for bit the same.
        if t != self.idle_since:
            self.idle_area += self.idle_rate * (t - self.idle_since)
            self.idle_since = t
        if t != group.since:
            group.idle_area += group.contrib / group.eq * (t - group.since)
            group.since = t
        group.demand += demand
        new = (group.free_total if group.free_total < group.demand else group.demand) * group.eq
        self.idle_rate += new - group.contrib
        group.contrib = new

    def candidate_groups(self, queue, resource: str, pools: tuple[str, ...] | None) -> tuple:
        """Node groups a waiting job could run on: pools its queue has quota for, filtered by the job's pools."""
        out = []
        for (pool, res), group in self.groups.items():
            if res != resource or (pools is not None and pool not in pools):
                continue
            if self.model.scheduler == "kueue" and not any(
                    self.flavor_pool(f) == pool for (f, r) in queue.quotas if r == resource):
                continue
            out.append(group)
        return tuple(out)

    def _check(self) -> None:
        self.checks["events"] += 1
        for group in self.groups.values():
            if not 0 <= group.free_total <= group.capacity or any(f < 0 or f > group.cap for f in group.free):
                raise AssertionError(f"{group.pool}/{group.resource}: bound beyond capacity")
        self.scheduler.check()

    def _result(self, end: float, drained: bool) -> SimResult:
        """`drained`: no event was left to play, so a job still admitted will never start."""
        for team in range(len(self.teams)):
            self.alloc_area[team] += self.alloc[team] * (end - self.alloc_since[team])
            self.usage_area[team] += self.usage[team] * (end - self.usage_since[team])
        groups = {}
        for group in self.groups.values():
            self._group_used(group, end)
            self._refresh(group, end)
            groups[f"{group.pool}/{group.resource}"] = {
                "capacity_gpus": group.capacity * group.eq, "used_gpu_s": group.used_area * group.eq,
                "idle_pending_gpu_s": group.idle_area * group.eq}
        stalled = sum(1 for j in self.jobs if j.state == ADMITTED) if drained else 0
        model = self.model
        nominal = []
        for name in self.teams:
            queue = model.queues[model.teams[name].queue]
            total = 0.0
            for (flavor, resource), quota in queue.quotas.items():
                group = self.groups.get((self.flavor_pool(flavor), resource))
                total += quota.nominal * (group.eq if group else 1.0)
            nominal.append(total)
        capacity = sum(g.capacity * g.eq for g in self.groups.values()) or sum(nominal)
        return SimResult(
            model=model, timing=self.timing, jobs=self.jobs, teams=self.teams, end=end, capacity_gpus=capacity,
            team_nominal_gpus=nominal, alloc_area=self.alloc_area, usage_area=self.usage_area,
            series_t=self.series_t, series_team=self.series_team, series_value=self.series_value,
            idle_pending_gpu_s=self.idle_area, preemptions=self.preemptions,
            group_peaks={f"{g.pool}/{g.resource}": (g.peak_used, g.capacity) for g in self.groups.values()},
            groups=groups,
            stalled=stalled, cycles=self.cycles, checks=self.checks, livelock=self.livelock,
            never_admittable=self.scheduler.never_admittable())


def build_jobs(model: Model, trace, default_pool: str | None = None) -> list[Job]:
    """Trace jobs (already mapped to stack teams) as simulation jobs, sorted by submit time."""
    teams = list(model.teams)
    index = {name: i for i, name in enumerate(teams)}
    jobs = []
    for seq, tj in enumerate(sorted(trace, key=lambda j: (j.submit_s, j.job_id))):
        team = model.team_for(tj.team)
        if team is None:
            raise SimulationError(f"job {tj.job_id}: team {tj.team!r} is not a stack team ({', '.join(teams)})")
        queue = model.queues[team.queue]
        pool = tj.pool or default_pool
        resource = tj.resource
        pools = None
        if pool:
            names = {f for (f, _) in queue.quotas} | set(model.pools)
            if pool not in names:
                raise SimulationError(f"job {tj.job_id}: pool {pool!r} is not a pool or flavor of queue "
                                      f"{queue.name} ({', '.join(sorted(names)) or 'none'})")
            flavor_pool = model.flavors[pool].pool if pool in model.flavors else pool
            pools = (flavor_pool or pool,)
            if resource is None and flavor_pool in model.pools:
                advertised = model.pools[flavor_pool].per_node
                resource = GPU if GPU in advertised else next(iter(advertised))
        if resource is None:
            resource = _default_resource(queue)
        _check_fits(model, tj, resource, pools)
        try:
            priority = model.resolve_priority(tj.priority, team.priority)
        except SimulationError as exc:
            raise SimulationError(f"job {tj.job_id}: {exc}") from None
        jobs.append(Job(seq, tj.job_id, index[team.name], queue.name, tj.submit_s, tj.duration_s, tj.units,
                        resource, pools, priority, tj.label))
    return jobs


def _check_fits(model: Model, tj, resource: str, pools: tuple[str, ...] | None) -> None:
    """A gang larger than every node the cluster can have would queue forever: refuse it, naming the job."""
    if not model.pools:
        return  # an adopted cluster's plan has quotas but no node pools to count
    offered = {name: p.per_node.get(resource, 0) * p.nodes for name, p in model.pools.items()
               if pools is None or name in pools}
    capacity = sum(offered.values())
    if tj.units > capacity:
        where = ", ".join(f"{name} {n}" for name, n in sorted(offered.items()) if n) or "no pool offers it"
        raise SimulationError(f"job {tj.job_id}: asks for {tj.units} {resource} but the cluster offers at most "
                              f"{capacity} ({where}); it could never run: lower its gpus or raise --nodes/maxNodes")


def _default_resource(queue) -> str:
    resources = [r for (_, r) in queue.quotas]
    if GPU in resources or not resources:
        return GPU
    return resources[0]
