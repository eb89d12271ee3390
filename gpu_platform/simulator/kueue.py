"""Kueue's admission semantics (v0.19, `kueue.x-k8s.io/v1beta2`), for flat cohorts.

Per cycle: each ClusterQueue offers one head (priority, then FIFO by queue-order timestamp); BestEffortFIFO
skips heads that fit nowhere, StrictFIFO blocks behind them. A head is assigned the first flavor where it fits
(borrowing from the cohort up to `borrowingLimit`, from what others may lend up to their `lendingLimit`), or
else where preemption can make room. Entries are then processed in Kueue's order (not borrowing first, then
priority, then FIFO; with fair sharing, lowest dominant resource share first): a fit is admitted if it still
fits after this cycle's earlier entries; a preemption (unless its targets overlap an earlier one's) reserves the
preemptor's quota for the rest of the cycle and evicts its targets at the cycle's end, and the preemptor is
admitted in a later cycle, staying its queue's head meanwhile (BestEffortFIFO's sticky head, kueue#7157, so a
lower head cannot hand the freed quota back to the evicted workload: kueue#6947) and holding what its targets free
(kueue#13797). A head needing preemption without candidates holds back quota for the cycle unless its queue can
always reclaim (`reclaimWithinCohort: Any`). Heads that cannot be admitted are skipped within the cycle (Kueue
spends a cycle on each) and parked until the cohort frees quota, as Kueue requeues inadmissible workloads only
when a workload finishes or is evicted.

Preemption follows Kueue's classical strategy: candidates in the same queue by `withinClusterQueue`, and in
borrowing queues of the cohort by `reclaimWithinCohort` (and `borrowWithinCohort` with its priority threshold),
ordered other-queue first, lowest priority first, most recently admitted first; candidates are removed until the
preemptor fits, then added back where not needed (minimal set). With fair sharing, the
LessThanOrEqualToFinalShare then LessThanInitialShare rules pick targets by dominant resource share.
"""
from __future__ import annotations

import heapq
import math

from gpu_platform.simulator.engine import ADMITTED, DONE, EVICTING, QUEUED, RUNNING, Job, Simulation

FIT, PREEMPT = 1, 2
# Preemption variants of a candidate in another ClusterQueue (Kueue's classical/hierarchical_preemption.go).
RECLAIM, RECLAIM_WITHOUT_BORROWING, RECLAIM_WHILE_BORROWING = 1, 2, 3
REASONS = {RECLAIM: "InCohortReclamation", RECLAIM_WITHOUT_BORROWING: "InCohortReclamation",
           RECLAIM_WHILE_BORROWING: "InCohortReclaimWhileBorrowing"}


class Cohort:
    """Flat cohort totals: what members lend (SubtreeQuota) and what they use of it."""

    __slots__ = ("name", "members", "lendable", "usage", "version", "real", "lendable_by_resource", "released")

    def __init__(self, name: str, real: bool):
        self.name, self.real = name, real
        self.members: list[CQ] = []
        self.lendable: dict[tuple[str, str], int] = {}
        self.usage: dict[tuple[str, str], int] = {}
        self.lendable_by_resource: dict[str, int] = {}
        self.released: dict[tuple[str, str], int] = {}  # units freed so far, per flavor resource
        self.version = 0


class CQ:
    """A ClusterQueue's live state."""

    __slots__ = ("name", "spec", "idx", "group", "nominal", "bl", "guar", "usage", "prio_usage", "buckets", "fails",
                 "admitted", "strict", "weight", "frs", "sticky", "potential", "wake", "sizes")

    def __init__(self, name, spec, idx, group):
        self.name, self.spec, self.idx, self.group = name, spec, idx, group
        self.nominal = {fr: q.nominal for fr, q in spec.quotas.items()}
        self.bl = {fr: q.borrowing_limit for fr, q in spec.quotas.items()}
        self.guar = {fr: q.guaranteed for fr, q in spec.quotas.items()}
        self.usage = {fr: 0 for fr in spec.quotas}
        self.prio_usage: dict[tuple[str, str], dict[int, int]] = {fr: {} for fr in spec.quotas}
        self.buckets: dict[tuple, list] = {}
        self.fails: dict[tuple, tuple[int, int]] = {}
        self.admitted: dict[Job, None] = {}
        self.strict = spec.queueing_strategy == "StrictFIFO"
        self.weight = spec.weight
        self.frs: dict[tuple, list[tuple[str, str]]] = {}
        self.sticky: Job | None = None  # a head waiting for its preemption targets to go (kueue#7157)
        self.potential: dict[tuple[str, str], int] = {}
        self.wake: dict[tuple[str, str], int] | None = None  # see _wake
        self.sizes: dict[tuple[str, str], dict[int, int]] = {fr: {} for fr in spec.quotas}  # admitted job sizes


class Entry:
    __slots__ = ("cq", "job", "mode", "fr", "borrows", "targets", "key")

    def __init__(self, cq, job, mode, fr, borrows, targets=()):
        self.cq, self.job, self.mode, self.fr, self.borrows, self.targets = cq, job, mode, fr, borrows, targets


class KueueScheduler:
    """ClusterQueues, cohorts and the scheduling cycle."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        model = sim.model
        self.fair = model.fair_sharing
        self.block = model.gang.enabled and model.gang.block_admission
        self.unready = 0
        self.cqs: dict[str, CQ] = {}
        cohorts: dict[str, Cohort] = {}
        for idx, name in enumerate(sorted(model.queues)):
            spec = model.queues[name]
            group = cohorts.setdefault(spec.cohort, Cohort(spec.cohort, True)) if spec.cohort else Cohort(name, False)
            cq = CQ(name, spec, idx, group)
            group.members.append(cq)
            for fr, quota in spec.quotas.items():
                lend = quota.nominal - quota.guaranteed
                group.lendable[fr] = group.lendable.get(fr, 0) + lend
                group.usage.setdefault(fr, 0)
                group.lendable_by_resource[fr[1]] = group.lendable_by_resource.get(fr[1], 0) + lend
            self.cqs[name] = cq
        self.dirty: set[CQ] = set()
        self._frs_cache: dict[tuple, list] = {}
        # Preemptors waiting for their targets' pods to go, per queue: what those free is held for them
        # (kueue#13797), so a borrower cannot take it back between two targets' evictions.
        self.waiting: dict[CQ, tuple[Job, tuple[str, str]]] = {}
        self.held: dict[tuple[int, tuple[str, str]], int] = {}  # this cycle's holds per cohort and resource
        self._last_short: tuple = (None, None, 0)  # the last shortfall computed, reused when parking its head

    # ---- engine hooks -----------------------------------------------------------------------------------------
    def wants_cycle(self) -> bool:
        return bool(self.dirty) and not (self.block and self.unready)

    def submit(self, job: Job, t: float) -> None:
        cq = self.cqs[job.queue]
        if job.bucket is None:
            job.bucket = (job.units, job.resource, job.pools)
            key = (cq.name, job.resource, job.pools)
            if key not in self._frs_cache:
                self._frs_cache[key] = (self._flavors(cq, job), self.sim.candidate_groups(cq.spec, job.resource,
                                                                                           job.pools))
            cq.frs[job.bucket], job.cand_groups = self._frs_cache[key]
        heap = cq.buckets.get(job.bucket)
        if heap is None:
            heap = cq.buckets[job.bucket] = []
        cq.wake = None
        entry = (-job.priority, job.ts, job.seq, job)
        heapq.heappush(heap, entry)
        if heap[0] is entry:
            cq.fails.pop(job.bucket, None)
        self.dirty.add(cq)

    def started(self, job: Job, t: float) -> None:
        if self.block:
            self.unready -= 1

    def release(self, job: Job, t: float, evicted: bool = False, was_admitted: bool = False) -> None:
        cq = self.cqs[job.queue]
        cq.admitted.pop(job, None)
        fr = (job.flavor, job.resource)
        sizes = cq.sizes[fr]
        if sizes[job.units] == 1:
            del sizes[job.units]
        else:
            sizes[job.units] -= 1
        self._use(cq, fr, -job.units, job.priority)
        if self.block and was_admitted:
            self.unready -= 1

    # ---- quota arithmetic (Kueue's resource_node.go) ----------------------------------------------------------
    def available(self, cq: CQ, fr: tuple[str, str]) -> int:
        """What `cq` can still take of `fr`: its unlent quota, plus what the cohort has free within limits."""
        usage = cq.usage[fr]
        group = cq.group
        if not group.real:
            return cq.nominal[fr] - usage
        guaranteed = cq.guar[fr]
        local = max(0, guaranteed - usage)
        parent = group.lendable[fr] - group.usage[fr]
        limit = cq.bl[fr]
        if limit is not None:
            parent = min(cq.nominal[fr] - guaranteed - max(0, usage - guaranteed) + limit, parent)
        return local + parent

    def potential(self, cq: CQ, fr: tuple[str, str]) -> int:
        """The most `cq` could ever hold of `fr` (with everyone else preempted); fixed for a run."""
        most = cq.potential.get(fr)
        if most is None:
            most = cq.potential[fr] = self._potential(cq, fr)
        return most

    def _potential(self, cq: CQ, fr: tuple[str, str]) -> int:
        if not cq.group.real:
            return cq.nominal[fr]
        most = cq.guar[fr] + cq.group.lendable[fr]
        if cq.bl[fr] is not None:
            most = min(most, cq.nominal[fr] + cq.bl[fr])
        return most

    def _shift(self, cq: CQ, fr: tuple[str, str], delta: int) -> None:
        usage = cq.usage[fr]
        group = cq.group
        if group.real:
            guaranteed = cq.guar[fr]
            group.usage[fr] += max(0, usage + delta - guaranteed) - max(0, usage - guaranteed)
        cq.usage[fr] = usage + delta

    def _use(self, cq: CQ, fr: tuple[str, str], delta: int, priority: int) -> None:
        self._shift(cq, fr, delta)
        by_prio = cq.prio_usage[fr]
        left = by_prio.get(priority, 0) + delta
        if left:
            by_prio[priority] = left
        else:
            by_prio.pop(priority, None)
        if delta < 0:
            # Freed quota requeues the cohort's parked workloads (Kueue does this on finish and eviction, not on
            # admission, which can only take quota away).
            group = cq.group
            group.version += 1
            group.released[fr] = group.released.get(fr, 0) - delta
            released = group.released[fr]
            for member in group.members:
                if member.buckets and (member.wake is None or released >= member.wake.get(fr, released + 1)):
                    self.dirty.add(member)

    def _fits(self, cq: CQ, fr: tuple[str, str], units: int, allow_borrowing: bool) -> bool:
        if not allow_borrowing and cq.usage[fr] + units > cq.nominal[fr]:
            return False
        return units <= self.available(cq, fr)

    def drs(self, cq: CQ, fr: tuple[str, str] | None = None, extra: int = 0) -> float:
        """Dominant resource share: the most borrowed of any resource, over what the cohort lends, per weight."""
        if not cq.group.real:
            return 0.0
        borrowed: dict[str, int] = {}
        for key, nominal in cq.nominal.items():
            amount = cq.usage[key] + (extra if key == fr else 0) - nominal
            if amount > 0:
                borrowed[key[1]] = borrowed.get(key[1], 0) + amount
        if not borrowed:
            return 0.0
        if cq.weight <= 0:
            return math.inf
        share = max((b * 1000 / cq.group.lendable_by_resource[r] for r, b in borrowed.items()
                     if cq.group.lendable_by_resource.get(r)), default=0.0)
        return share / cq.weight

    # ---- the cycle --------------------------------------------------------------------------------------------
    def cycle(self, t: float) -> None:
        if self.block and self.unready:
            return
        # What evictions in flight free is held for the preemptor waiting on them (kueue#13797), so a borrower
        # cannot take it back between two targets' evictions; a queue's own hold is its head's to use.
        holds: dict[CQ, tuple[tuple[str, str], int]] = {}
        self.held.clear()
        for cq, (job, fr) in list(self.waiting.items()):
            if job.state != QUEUED:
                del self.waiting[cq]
            else:
                holds[cq] = (fr, max(0, min(job.units, self.available(cq, fr))))
                self._shift(cq, fr, holds[cq][1])
                key = (id(cq.group), fr)
                self.held[key] = self.held.get(key, 0) + holds[cq][1]
        entries = []
        for cq in sorted(self.dirty, key=lambda c: c.idx):
            hold = holds.get(cq)
            if hold:
                self._shift(cq, hold[0], -hold[1])
            entry = self._nominate(cq)
            if hold:
                if entry is not None and entry.job is self.waiting[cq][0]:
                    self._shift(cq, hold[0], hold[1])
                else:  # the waiting head became inadmissible: it stops holding
                    del holds[cq], self.waiting[cq]
            if entry is None:
                self.dirty.discard(cq)
            else:
                entries.append(entry)
        reserved: list[tuple[CQ, tuple[str, str], int]] = [(cq, fr, amount) for cq, (fr, amount) in holds.items()]
        if entries:
            self._process(entries, holds, reserved, t)
        for cq, fr, amount in reserved:
            self._shift(cq, fr, -amount)

    def _process(self, entries: list[Entry], holds: dict, reserved: list, t: float) -> None:
        for e in entries:
            job = e.job
            if self.fair:
                e.key = (self.drs(e.cq, e.fr, job.units), -job.priority, job.ts, job.seq)
            else:
                e.key = (e.borrows, -job.priority, job.ts, job.seq)
        entries.sort(key=lambda e: e.key)
        preempted: dict[int, Job] = {}  # this cycle's eviction targets: their quota is freed at the cycle's end
        evictions: list[tuple[Job, str]] = []
        for e in entries:
            cq, job, fr = e.cq, e.job, e.fr
            waiting = self.waiting.get(cq, (None,))[0] is job
            if waiting and cq in holds:  # the held quota is this entry's to use now
                held_fr, amount = holds.pop(cq)
                self._shift(cq, held_fr, -amount)
                reserved.remove((cq, held_fr, amount))
            if e.mode == PREEMPT and not e.targets:
                if waiting:
                    del self.waiting[cq]
                # No candidates: unless the queue can always reclaim (reclaimWithinCohort: Any), hold back what
                # it may still take so a lower-priority entry of the cohort cannot take it first this cycle.
                if cq.spec.reclaim_within_cohort != "Any":
                    self._reserve(cq, fr, self._to_reserve(e), reserved)
                continue
            targets = [w for w, _ in e.targets]
            if e.mode == PREEMPT and all(w.state == EVICTING for w in targets):
                # Still waiting for the targets' pods to go: nothing to do until the cohort's usage changes.
                if not cq.strict:
                    cq.sticky = job
                self.waiting[cq] = (job, fr)
                self._reserve(cq, fr, max(0, min(job.units, self.available(cq, fr))), reserved)
                self.dirty.discard(cq)
                continue
            if any(id(w) in preempted for w in targets):
                continue  # overlapping targets with an earlier entry of this cycle
            if not self._fits_without(cq, fr, job.units, [*preempted.values(), *targets]):
                continue  # no longer fits after this cycle's earlier entries; stays at the head
            if e.mode == FIT:
                if self.block and self.unready:
                    break  # blockAdmission: nothing more until the admitted workloads' pods are ready
                if waiting:
                    del self.waiting[cq]
                self._admit(cq, job, fr, t)
            else:
                preempted.update((id(w), w) for w in targets)
                self._reserve(cq, fr, job.units, reserved)
                self.waiting[cq] = (job, fr)
                if not cq.strict:
                    cq.sticky = job
                evictions.extend(e.targets)
        for job, reason in evictions:
            if job.state in (ADMITTED, RUNNING):
                self.sim.evict(job, reason, t)

    def _reserve(self, cq: CQ, fr, amount: int, reserved: list) -> None:
        if amount > 0:
            self._shift(cq, fr, amount)
            reserved.append((cq, fr, amount))

    def _to_reserve(self, e: Entry) -> int:
        """Kueue's quotaResourcesToReserve for a preempting entry without targets."""
        cq, fr, units = e.cq, e.fr, e.job.units
        if e.borrows:
            limit = cq.bl[fr]
            return units if limit is None else min(units, cq.nominal[fr] + limit - cq.usage[fr])
        return max(0, min(units, cq.nominal[fr] - cq.usage[fr]))

    def _fits_without(self, cq: CQ, fr, units: int, removed: list[Job]) -> bool:
        for w in removed:
            self._shift(self.cqs[w.queue], (w.flavor, w.resource), -w.units)
        try:
            return units <= self.available(cq, fr)
        finally:
            for w in removed:
                self._shift(self.cqs[w.queue], (w.flavor, w.resource), w.units)

    def _nominate(self, cq: CQ) -> Entry | None:
        cq.wake = None
        if not cq.buckets:
            return None
        sticky = cq.sticky
        if sticky is not None:
            cq.sticky = None
            if sticky.state == QUEUED:
                entry = self._evaluate(cq, sticky)
                if entry is not None and (entry.mode == FIT or entry.targets):
                    return entry
        version = cq.group.version
        failed: list[Job] = []
        for head in sorted(heap[0] for heap in cq.buckets.values()):
            job = head[3]
            if self._parked(cq, job, version):
                pass
            else:
                dominant = next((f for f in failed if f.resource == job.resource and f.pools == job.pools
                                 and f.units <= job.units and f.priority >= job.priority), None)
                if dominant is not None:
                    # No easier than a head that just failed (more units, no higher priority): parked as long.
                    cq.fails[job.bucket] = (*cq.fails[dominant.bucket][:1], job.seq, *cq.fails[dominant.bucket][2:])
                else:
                    entry = self._evaluate(cq, job)
                    if entry is not None and (entry.mode == FIT or entry.targets):
                        return entry
                    # Not admissible now: parked until the cohort frees quota (at least what it lacks, if known).
                    cq.fails[job.bucket] = (version, job.seq, *self._deficit(cq, job))
                    failed.append(job)
                    if entry is not None and cq.spec.reclaim_within_cohort != "Any":
                        return entry  # preempting without candidates: it still holds quota back this cycle
            if cq.strict:
                break
        cq.wake = self._wake(cq)
        return None

    def _wake(self, cq: CQ) -> dict[tuple[str, str], int] | None:
        """When every head is parked: per flavor resource, how much must have been released in the cohort before
        any head could be admitted (None: on any release)."""
        heads = sorted(heap[0] for heap in cq.buckets.values())
        wake: dict[tuple[str, str], int] = {}
        for head in heads[:1] if cq.strict else heads:
            job = head[3]
            fail = cq.fails.get(job.bucket)
            if fail is None or fail[1] != job.seq or fail[2] is None or fail[4] <= 0:
                return None
            fr, at = fail[2], fail[3] + fail[4]
            if at < wake.get(fr, at + 1):
                wake[fr] = at
        return wake

    def _parked(self, cq: CQ, job: Job, version: int) -> bool:
        """Whether a head that failed before still cannot be admitted: nothing was freed since, or less than it
        lacked (freeing k units raises what it could get by at most k; admissions never raise it)."""
        fail = cq.fails.get(job.bucket)
        if fail is None or fail[1] != job.seq:
            return False
        if fail[0] == version:
            return True
        _, _, fr, released, deficit = fail
        return fr is not None and cq.group.released.get(fr, 0) - released < deficit

    def _deficit(self, cq: CQ, job: Job) -> tuple[tuple[str, str] | None, int, int]:
        """(flavor resource, units released so far, units lacking) for a single-flavor head that failed."""
        frs = cq.frs[job.bucket]
        if len(frs) != 1 or self.fair:
            # With fair sharing an admission can raise another queue's share and so make room: no shortcut.
            return None, 0, 0
        fr = frs[0]
        if job.units > self.potential(cq, fr):
            return fr, 0, 1 << 62
        # Holds can vanish without a release (their preemptor admitted or given up): credit them up front.
        held = self.held.get((id(cq.group), fr), 0)
        last = self._last_short
        short = last[2] if last[0] is job and last[1] == fr else self._shortfall(cq, job, fr)
        return fr, cq.group.released.get(fr, 0), max(0, short - held)

    def _flavors(self, cq: CQ, job: Job) -> list[tuple[str, str]]:
        frs = []
        for flavor in cq.spec.flavors_for(job.resource):
            pool = self.sim.flavor_pool(flavor)
            if job.pools is None or pool in job.pools or flavor in job.pools:
                frs.append((flavor, job.resource))
        return frs

    def _evaluate(self, cq: CQ, job: Job) -> Entry | None:
        """Flavor assignment: the first flavor where the job fits, else the first where preemption makes room."""
        self._last_short = (None, None, 0)
        units = job.units
        preemptible = []
        for fr in cq.frs[job.bucket]:
            if units > self.potential(cq, fr):
                continue
            if units <= self.available(cq, fr):
                return Entry(cq, job, FIT, fr, cq.usage[fr] + units > cq.nominal[fr])
            preemptible.append(fr)
        for fr in preemptible:
            targets = self._targets(cq, job, fr)
            if targets:
                return Entry(cq, job, PREEMPT, fr, cq.usage[fr] + units > cq.nominal[fr], targets)
        if preemptible:
            fr = preemptible[0]
            return Entry(cq, job, PREEMPT, fr, cq.usage[fr] + units > cq.nominal[fr])
        return None

    def _admit(self, cq: CQ, job: Job, fr: tuple[str, str], t: float) -> None:
        heap = cq.buckets[job.bucket]
        if heap[0][3] is job:
            heapq.heappop(heap)
        else:  # a sticky head that is no longer first in its bucket
            heap[:] = [e for e in heap if e[3] is not job]
            heapq.heapify(heap)
        cq.fails.pop(job.bucket, None)
        if not heap:
            del cq.buckets[job.bucket]
        cq.admitted[job] = None
        sizes = cq.sizes[fr]
        sizes[job.units] = sizes.get(job.units, 0) + 1
        job.flavor = fr[0]
        self._use(cq, fr, job.units, job.priority)
        if self.block:
            self.unready += 1
        self.sim.admit(job, fr[0], self.sim.groups.get((self.sim.flavor_pool(fr[0]), fr[1])), t)

    # ---- preemption -------------------------------------------------------------------------------------------
    def _within_allowed(self, cq: CQ, job: Job, other: Job) -> bool:
        policy = cq.spec.within_cluster_queue
        if policy == "LowerPriority":
            return other.priority < job.priority
        if policy == "LowerOrNewerEqualPriority":
            return other.priority < job.priority or (other.priority == job.priority and job.ts < other.ts)
        return False

    def _shortfall(self, cq: CQ, job: Job, fr: tuple[str, str]) -> int:
        """How many units the preemption search lacks at best, mirroring its options (0: it may succeed).

        Freeing k units in the cohort lowers it by at most k; in classical preemption admissions never lower it.
        """
        available = self.available(cq, fr)
        own, others = self._evictable(cq, job, fr)
        spec = cq.spec
        units, usage, nominal = job.units, cq.usage[fr], cq.nominal[fr]
        overall = units - (available + own + others)
        if self.fair or usage + units <= nominal or spec.borrow_within_cohort not in (None, "Never"):
            return max(0, overall)
        # Would borrow and may not borrow while preempting: either take from its own queue only (borrowing),
        # or evict enough of its own to end within nominal, and enough overall to fit.
        return max(0, min(units - (available + own), max(usage - own + units - nominal, overall)))

    def _evictable(self, cq: CQ, job: Job, fr: tuple[str, str]) -> tuple[int, int]:
        """Usage the job's preemption policies allow it to evict: in its own queue, and borrowed by others."""
        spec = cq.spec
        policy = spec.within_cluster_queue
        own = 0
        if policy != "Never":
            own = sum(u for p, u in cq.prio_usage[fr].items()
                      if p < job.priority or (p == job.priority and policy == "LowerOrNewerEqualPriority"))
        others = 0
        reclaim = spec.reclaim_within_cohort if cq.group.real else "Never"
        if reclaim != "Never":
            for m in cq.group.members:
                borrowed = m.usage.get(fr, 0) - m.nominal.get(fr, 0)
                if m is cq or borrowed <= 0:
                    continue
                # Evicting stops once a queue is back within nominal, but its last victim may take it below.
                most = borrowed + max(m.sizes[fr], default=1) - 1
                if reclaim == "LowerPriority":
                    most = min(most, sum(u for p, u in m.prio_usage[fr].items() if p < job.priority))
                others += most
        return own, others

    @staticmethod
    def _order(cq: CQ):
        # Kueue's CandidatesOrdering: already evicting first, then other queues, lower priority, most recently
        # admitted.
        return lambda w: (w.state != EVICTING, w.queue == cq.name, w.priority, -w.admit_t, w.seq)

    def _targets(self, cq: CQ, job: Job, fr: tuple[str, str]) -> list[tuple[Job, str]]:
        spec = cq.spec
        reclaim = spec.reclaim_within_cohort if cq.group.real else "Never"
        if spec.within_cluster_queue == "Never" and reclaim == "Never":
            return []
        short = self._shortfall(cq, job, fr)
        self._last_short = (job, fr, short)
        if short:
            return []
        same = [w for w in cq.admitted if w.flavor == fr[0] and w.resource == fr[1] and w.state != DONE
                and self._within_allowed(cq, job, w)]
        others: list[Job] = []
        if reclaim != "Never":
            for member in cq.group.members:
                if member is cq or member.usage.get(fr, 0) <= member.nominal.get(fr, 0):
                    continue
                others.extend(w for w in member.admitted
                              if w.flavor == fr[0] and w.resource == fr[1] and w.state != DONE
                              and (reclaim == "Any" or w.priority < job.priority))
        if not same and not others:
            return []
        order = self._order(cq)
        if self.fair:
            return self._fair_targets(cq, job, fr, sorted(same + others, key=order))
        advantage = cq.usage[fr] + job.units <= cq.nominal[fr]
        borrow_forbidden = spec.borrow_within_cohort in (None, "Never")
        threshold = spec.borrow_max_priority
        variants: dict[Job, int] = {}
        for w in others:
            if advantage:
                variants[w] = RECLAIM
            elif borrow_forbidden or w.priority >= job.priority or (threshold is not None and w.priority > threshold):
                variants[w] = RECLAIM_WITHOUT_BORROWING
            else:
                variants[w] = RECLAIM_WHILE_BORROWING
        hierarchy = sorted((w for w in others if variants[w] == RECLAIM), key=order)
        by_priority = sorted((w for w in others if variants[w] != RECLAIM), key=order)
        candidates = hierarchy + by_priority + sorted(same, key=order)
        under_nominal = cq.usage[fr] < cq.nominal[fr]
        if not others or (borrow_forbidden and not under_nominal):
            options = (True,)
        elif borrow_forbidden and not hierarchy:
            options = (False, True)
        else:
            options = (True, False)
        for allow_borrowing in options:
            targets = self._minimal(cq, job, fr, candidates, variants, allow_borrowing)
            if targets:
                return targets
        return []

    def _remove(self, w: Job, fr, sign: int) -> None:
        self._shift(self.cqs[w.queue], fr, -sign * w.units)

    def _minimal(self, cq, job, fr, candidates, variants, allow_borrowing) -> list[tuple[Job, str]]:
        """Remove candidates in order until the job fits, then add back those not needed."""
        removed: list[Job] = []
        fits = False
        for w in candidates:
            if w.queue != cq.name:
                if allow_borrowing and variants[w] == RECLAIM_WITHOUT_BORROWING:
                    continue
                owner = self.cqs[w.queue]
                if owner.usage[fr] <= owner.nominal[fr]:
                    continue  # that queue no longer borrows: nothing left to reclaim from it
            self._remove(w, fr, +1)
            removed.append(w)
            if self._fits(cq, fr, job.units, allow_borrowing):
                fits = True
                break
        if fits:
            removed = self._fill_back(cq, job, fr, removed, allow_borrowing)
        for w in removed:
            self._remove(w, fr, -1)
        if not fits:
            return []
        return [(w, "InClusterQueue" if w.queue == cq.name else REASONS[variants[w]]) for w in removed]

    def _fill_back(self, cq, job, fr, removed: list[Job], allow_borrowing: bool) -> list[Job]:
        """Kueue's fillBackWorkloads; returns the still-removed targets (the caller restores them)."""
        for i in range(len(removed) - 2, -1, -1):
            w = removed[i]
            self._remove(w, fr, -1)
            if self._fits(cq, fr, job.units, allow_borrowing):
                del removed[i]
            else:
                self._remove(w, fr, +1)
        return removed

    def _fair_targets(self, cq: CQ, job: Job, fr, candidates: list[Job]) -> list[tuple[Job, str]]:
        """Fair-sharing preemption: take from the queue with the highest share while the preemptor's share after
        admission stays at or below the target's share after the preemption (then below its share before)."""
        units = job.units
        per_queue: dict[str, list[Job]] = {}
        for w in candidates:
            per_queue.setdefault(w.queue, []).append(w)
        removed: list[tuple[Job, str]] = []
        retry: dict[str, list[Job]] = {}

        def fits() -> bool:
            return self._fits(cq, fr, units, True)

        self._shift(cq, fr, +units)  # the preemptor's usage counts while shares are compared
        within_nominal = cq.usage[fr] <= cq.nominal[fr]
        done = False
        try:
            while per_queue and not done:
                name = max(per_queue, key=lambda q: (self.drs(self.cqs[q]), q))
                owner = self.cqs[name]
                queue = per_queue[name]
                if owner is cq or within_nominal:
                    w = queue.pop(0)
                    self._remove(w, fr, +1)
                    removed.append((w, "InClusterQueue" if owner is cq else "InCohortReclamation"))
                    self._shift(cq, fr, -units)
                    done = fits()
                    self._shift(cq, fr, +units)
                else:
                    preemptor_share = self.drs(cq)
                    while queue:
                        w = queue.pop(0)
                        self._remove(w, fr, +1)
                        if preemptor_share <= self.drs(owner):
                            removed.append((w, "InCohortFairSharing"))
                            self._shift(cq, fr, -units)
                            done = fits()
                            self._shift(cq, fr, +units)
                            break
                        self._remove(w, fr, -1)
                        retry.setdefault(name, []).append(w)
                if not queue or owner.usage[fr] <= owner.nominal[fr] and owner is not cq:
                    per_queue.pop(name, None)
            if not done:
                preemptor_share = self.drs(cq)
                for name in sorted(retry, key=lambda q: (-self.drs(self.cqs[q]), q)):
                    owner = self.cqs[name]
                    if preemptor_share < self.drs(owner):
                        w = retry[name][0]
                        self._remove(w, fr, +1)
                        removed.append((w, "InCohortFairSharing"))
                        self._shift(cq, fr, -units)
                        done = fits()
                        self._shift(cq, fr, +units)
                        if done:
                            break
        finally:
            self._shift(cq, fr, -units)
        if not done:
            for w, _ in removed:
                self._remove(w, fr, -1)
            return []
        reasons = {id(w): r for w, r in removed}
        kept = self._fill_back(cq, job, fr, [w for w, _ in removed], True)
        for w in kept:
            self._remove(w, fr, -1)
        return [(w, reasons[id(w)]) for w in kept]

    # ---- invariants -------------------------------------------------------------------------------------------
    def check(self) -> None:
        """Quota invariants. Kueue's fit check treats the targets of a cycle's preemptions as gone, so quota may
        exceed a limit by what is still being evicted, never by more."""
        evicting: dict[tuple[str, tuple[str, str]], int] = {}
        for cq in self.cqs.values():
            for w in cq.admitted:
                if w.state == EVICTING:
                    key = (cq.name, (w.flavor, w.resource))
                    evicting[key] = evicting.get(key, 0) + w.units
        cohort_evicting: dict[tuple[int, tuple[str, str]], int] = {}
        for cq in self.cqs.values():
            for fr, usage in cq.usage.items():
                settled = usage - evicting.get((cq.name, fr), 0)
                key = (id(cq.group), fr)
                cohort_evicting[key] = cohort_evicting.get(key, 0) + evicting.get((cq.name, fr), 0)
                if usage < 0:
                    raise AssertionError(f"{cq.name} {fr}: negative usage")
                if not cq.group.real and settled > cq.nominal[fr]:
                    raise AssertionError(f"{cq.name} {fr}: {usage} above nominal {cq.nominal[fr]}")
                limit = cq.bl[fr]
                if cq.group.real and limit is not None and settled > cq.nominal[fr] + limit:
                    raise AssertionError(f"{cq.name} {fr}: {usage} above nominal + borrowingLimit")
                if sum(cq.prio_usage[fr].values()) != usage:
                    raise AssertionError(f"{cq.name} {fr}: usage by priority does not add up")
        for cq in self.cqs.values():
            group = cq.group
            if group.real:
                for fr, used in group.usage.items():
                    if used - cohort_evicting.get((id(group), fr), 0) > group.lendable[fr]:
                        raise AssertionError(f"cohort {group.name} {fr}: {used} above what members lend")
