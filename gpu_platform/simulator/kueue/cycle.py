"""Kueue's scheduling cycle (v0.19, `kueue.x-k8s.io/v1beta2`), for flat cohorts: the engine's Scheduler.

Mirrors Kueue's `pkg/scheduler` (scheduler.go's schedule loop) and its queue manager (`pkg/queue`: heads,
BestEffortFIFO/StrictFIFO, inadmissible workloads). Per cycle: each ClusterQueue offers one head (priority,
then FIFO by queue-order timestamp); BestEffortFIFO skips heads that fit nowhere, StrictFIFO blocks behind them.
A head is assigned a flavor (flavors.py). Entries are then processed in Kueue's order (not borrowing first, then
priority, then FIFO; with fair sharing, not borrowing first, then lowest dominant resource share): a fit is admitted if it still
fits after this cycle's earlier entries; a preemption (unless its targets overlap an earlier one's) reserves the
preemptor's quota for the rest of the cycle and evicts its targets at the cycle's end, and the preemptor is
admitted in a later cycle, staying its queue's head meanwhile (BestEffortFIFO's sticky head, kueue#7157, so a
lower head cannot hand the freed quota back to the evicted workload: kueue#6947) and holding what its targets free
(kueue#13797). A head needing preemption without candidates holds back quota for the cycle unless its queue can
always reclaim (`reclaimWithinCohort: Any`). Heads that cannot be admitted are skipped within the cycle (Kueue
spends a cycle on each) and parked until the cohort frees quota, as Kueue requeues inadmissible workloads only
when a workload finishes or is evicted.

With waitForPodsReady `blockAdmission`, Kueue's cycle goes on while admitted workloads are not ready (nominating,
preempting) until it reaches an entry that fits: it then waits in processEntry (waitForPodsReadyIfNeeded) and
admits that entry in hand once they are ready, before any later arrival is looked at.

Cycles run back to back (pkg/util/wait's backoff between them is 1 to 10 ms), and each costs API writes through
the manager's rate-limited client (`Timing.api_qps`/`api_burst`, a token bucket as client-go's): an admission patch
per admitted entry, an eviction per preemption target and a status patch per head it did not admit
(requeueAndUpdate); heads parked as inadmissible cost nothing, as in Kueue's inadmissible list. The admission patch
is sent from a goroutine (scheduler.go `admit`), so a cycle does not wait for it; the evictions and status patches
are synchronous, and as the limiter serves its waiters in order, they wait for every admission patch queued before
them. The next cycle starts when the last synchronous write went through. Quota is held from the cycle (the
workload is assumed in the cache) until the admission patch lands, the job runs and its end is seen, so while the
client is congested, quota waits in its queue.
"""
from __future__ import annotations

import heapq
import math
from operator import attrgetter
from typing import NamedTuple

from gpu_platform.simulator.engine import ADMITTED, EVICTING, QUEUED, RUNNING, Job, Simulation
from gpu_platform.simulator.kueue.flavors import ANYWHERE, FIT, PREEMPT, Entry, FlavorAssigner
from gpu_platform.simulator.kueue.preemption import Target
from gpu_platform.simulator.kueue.quota import CQ, NEVER, Failure, Pending
from gpu_platform.simulator.ratelimit import TokenBucket
from gpu_platform.simulator.scheduler import Blocked, register


BY_INDEX = attrgetter("idx")  # Kueue's order of ClusterQueues in a cycle

# A Failure's fields after `version` and `seq` for a head any release may admit (no shortcut).
ANY_RELEASE = (None, 0, 0, 0, 0, 0)


class Waiting(NamedTuple):
    """A preemptor waiting for its targets' pods to go."""

    job: Job
    fr: tuple[str, str]


class Reservation(NamedTuple):
    """Quota reserved for the rest of a cycle (for an entry, or held for a waiting preemptor), given back when it
    ends."""

    cq: CQ
    fr: tuple[str, str]
    amount: int


@register("kueue")
class KueueScheduler(FlavorAssigner):
    """ClusterQueues, cohorts and the scheduling cycle."""

    def __init__(self, sim: Simulation):
        super().__init__(sim)
        model = sim.model
        self.block = model.gang.enabled and model.gang.block_admission
        self.unready = 0
        self._frs_cache: dict[tuple, tuple] = {}
        # Preemptors waiting for their targets' pods to go, per queue: what those free is held for them
        # (kueue#13797), so a borrower cannot take it back between two targets' evictions.
        self.waiting: dict[CQ, Waiting] = {}
        self.held_before: dict[CQ, Reservation] = {}  # the last cycle's hold per waiting queue
        # Jobs no admission can ever take, reported up front; they still queue, as they would in Kueue.
        self.blocked: list[Blocked] = []
        self._limits_cache: dict[CQ, dict[tuple, tuple | None]] = {}
        self.in_hand: Entry | None = None  # blockAdmission: the fitting entry the cycle waits on for readiness
        self.writes = 0  # API writes of the cycle in progress, other than admissions
        self.patched: set[int] = set()  # queued jobs whose Pending condition is written
        self.client = TokenBucket(sim.timing.api_qps, sim.timing.api_burst)
        self.cycle_free = -math.inf  # when the last cycle's synchronous writes went through

    # ---- engine hooks -----------------------------------------------------------------------------------------
    def wants_cycle(self) -> bool:
        if self.in_hand is not None:
            return not self.unready
        return bool(self.dirty)

    def submit(self, job: Job, t: float) -> None:
        cq = self.cqs[job.queue]
        if job.bucket is None:
            job.bucket = (job.units, job.resource, job.pools)
            key = (cq.name, job.resource, job.pools)
            if key not in self._frs_cache:
                self._frs_cache[key] = (self._flavors(cq, job), self.sim.candidate_groups(cq.spec, job.resource,
                                                                                           job.pools))
            cq.frs[job.bucket], job.cand_groups = self._frs_cache[key]
            if job.bucket not in self._limits_cache.setdefault(cq, {}):
                self._limits_cache[cq][job.bucket] = self.limits(cq, job)
            limits = self._limits_cache[cq][job.bucket]
            if limits:
                self.blocked.append(Blocked(job, limits))
        heap = cq.buckets.get(job.bucket)
        if heap is None:
            heap = cq.buckets[job.bucket] = []
        cq.wake = None
        entry = Pending(-job.priority, job.ts, job.seq, job)
        heapq.heappush(heap, entry)
        cq.heads = None
        if heap[0] is entry:
            cq.fails.pop(job.bucket, None)
        self.dirty.add(cq)

    def never_admittable(self) -> list[Blocked]:
        return self.blocked

    def busy_until(self) -> float:
        return self.cycle_free

    def _status_patch(self, job: Job) -> None:
        """requeueAndUpdate's patch of a head not admitted: only when its QuotaReserved condition changes
        (PatchAdmissionStatus skips an unchanged one), taken as once per spell in the queue."""
        if job.seq not in self.patched:
            self.patched.add(job.seq)
            self.writes += 1

    def _charge_writes(self, t: float) -> None:
        """The cycle's status patches and evictions, issued after its admissions. Kueue waits for these (they
        are synchronous) but not for the admission patches, which go out in goroutines; client-go's limiter serves
        waiters in order, so a cycle with one synchronous write waits for every admission queued before it, and a
        cycle without one does not wait at all."""
        if self.writes:
            self.cycle_free = self.client.take(t, self.writes)
        self.writes = 0

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
        if self._tas(fr) is not None:
            # The nodes it freed can admit a head waiting for a topology domain in any queue with this flavor,
            # in any cohort, whose parking only watched its own cohort's quota.
            for other in self.cqs.values():
                if other.buckets and fr in other.nominal:
                    other.group.version += 1
                    other.wake = None
                    self.dirty.add(other)
        if self.block and was_admitted:
            self.unready -= 1

    # ---- the cycle --------------------------------------------------------------------------------------------
    def cycle(self, t: float) -> None:
        if self.in_hand is not None:
            if not self.unready:
                self._admit_in_hand(t)
                self._charge_writes(t)
            return
        # What evictions in flight free is held for the preemptor waiting on them (kueue#13797), so a borrower
        # cannot take it back between two targets' evictions; a queue's own hold is its head's to use.
        holds: dict[CQ, Reservation] = {}
        held_before = self.held_before
        self.holding = True
        for cq, (job, fr) in list(self.waiting.items()):
            if job.state != QUEUED:
                del self.waiting[cq]
                continue
            amount = self.available(cq, fr)
            if amount > job.units:
                amount = job.units
            elif amount < 0:
                amount = 0
            before = held_before.get(cq)
            if before is None:
                hold = Reservation(cq, fr, amount)
                growth = amount
            elif before.amount != amount or before.fr != fr:
                hold = Reservation(cq, fr, amount)
                growth = amount - before.amount
            else:  # most holds stay as they were from one cycle to the next: no new one
                hold = before
                growth = 0
            holds[cq] = hold
            if amount:
                self._shift(cq, fr, amount)
            if growth > 0:  # a hold raises its queue's usage as an admission does
                self._expose(cq, fr, growth)
        self.held_before = dict(holds)
        self._settle(holds)
        entries = []
        for cq in sorted(self.dirty, key=BY_INDEX):
            hold = holds.get(cq)
            if hold and hold.amount:
                self._shift(cq, hold.fr, -hold.amount)
            entry = self._nominate(cq)
            if hold:
                if entry is not None and entry.job is self.waiting[cq].job:
                    if hold.amount:
                        self._shift(cq, hold.fr, hold.amount)
                else:  # the waiting head became inadmissible: it stops holding
                    del holds[cq], self.waiting[cq]
            if entry is None:
                self.dirty.discard(cq)
            else:
                entries.append(entry)
        reserved = list(holds.values())
        if entries:
            self._process(entries, holds, reserved, t)
            for e in entries:
                if e.job.state == QUEUED:
                    self._status_patch(e.job)
        for cq, fr, amount in reserved:
            if amount:  # (a waiting preemptor's hold is often nothing: the cohort has no quota free)
                self._shift(cq, fr, -amount)
        self.holding = False
        self._charge_writes(t)

    def _holds_ahead(self, group) -> bool:
        for cq in self.waiting:  # (a loop: called on every release, and a generator showed in the profile)
            if cq.group is group:
                return True
        return False

    def _settle(self, holds: dict[CQ, Reservation]) -> None:
        """The queues left undecided after a release (_wake_parked) are nominated in this cycle if a parked head may
        be admissible in it; else all their parked heads are still short in it, as if evaluated again (Kueue retries
        inadmissible workloads after a release). The holds stay while a queue is nominated, except those of the
        queues nominated before it, which may end (their preemptor no longer waiting)."""
        for cq in self.undecided:
            if cq not in self.dirty and cq.buckets:
                ending: dict[tuple[int, tuple[str, str]], int] = {}
                for other, hold in holds.items():
                    if other.group is cq.group and other.idx < cq.idx:
                        key = (id(cq.group), hold.fr)
                        ending[key] = ending.get(key, 0) + hold.amount
                if cq.wake is None or self._may_wake(cq, ending):
                    self.dirty.add(cq)
                else:
                    cq.settled = cq.group.version
        self.undecided.clear()

    def _process(self, entries: list[Entry], holds: dict[CQ, Reservation], reserved: list[Reservation], t: float) -> None:
        for e in entries:
            job = e.job
            if self.fair:
                # fair_sharing_iterator.go's tournament: not borrowing on the requested flavor first
                # (FairSharingPrioritizeNonBorrowing, on by default), then lowest share after admission.
                e.key = (e.borrows, self.drs(e.cq, e.fr, job.units), -job.priority, job.ts, job.seq)
            else:
                e.key = (e.borrows, -job.priority, job.ts, job.seq)
        entries.sort(key=lambda e: e.key)
        preempted: dict[int, Job] = {}  # this cycle's eviction targets: their quota is freed at the cycle's end
        evictions: list[Target] = []
        for e in entries:
            cq, job, fr = e.cq, e.job, e.fr
            waiting = cq in self.waiting and self.waiting[cq].job is job
            if waiting and cq in holds:  # the held quota is this entry's to use now
                hold = holds.pop(cq)
                if hold.amount:
                    self._shift(cq, hold.fr, -hold.amount)
                reserved.remove(hold)
            if e.mode == PREEMPT and not e.targets:
                if waiting:
                    del self.waiting[cq]
                # No candidates: unless the queue can always reclaim (reclaimWithinCohort: Any), hold back what
                # it may still take so a lower-priority entry of the cohort cannot take it first this cycle.
                if cq.spec.reclaim_within_cohort != "Any":
                    self._reserve(cq, fr, self._to_reserve(e), reserved)
                continue
            targets = [w for w, _ in e.targets] if e.targets else ()
            if e.mode == PREEMPT and all(w.state == EVICTING for w in targets):
                # Still waiting for the targets' pods to go: nothing to do until the cohort's usage changes.
                if not cq.strict:
                    cq.sticky = job
                if not waiting or self.waiting[cq].fr != fr:
                    self.waiting[cq] = Waiting(job, fr)
                self._reserve(cq, fr, max(0, min(job.units, self.available(cq, fr))), reserved)
                self.dirty.discard(cq)
                continue
            if preempted and targets and any(id(w) in preempted for w in targets):
                continue  # overlapping targets with an earlier entry of this cycle
            if not self._fits_without(cq, fr, job.units, [*preempted.values(), *targets]):
                continue  # no longer fits after this cycle's earlier entries; stays at the head
            if e.mode == FIT:
                nodes = self._tas_nodes(fr, job)
                if nodes is None:
                    continue  # an earlier entry of this cycle took the topology domain it was assigned
                if self.block and self.unready:
                    # blockAdmission: Kueue waits on this entry until every admitted workload is ready, then
                    # admits it. The cycle's later entries are nominated again afterwards.
                    self.in_hand = e
                    break
                if waiting:
                    del self.waiting[cq]
                self._admit(cq, job, fr, t, nodes)
            else:
                preempted.update((id(w), w) for w in targets)
                self._reserve(cq, fr, job.units, reserved)
                self.waiting[cq] = Waiting(job, fr)
                if not cq.strict:
                    cq.sticky = job
                evictions.extend(e.targets)
        for job, reason in evictions:
            if job.state in (ADMITTED, RUNNING):
                self.writes += 1
                self.sim.evict(job, reason, t)

    def _admit_in_hand(self, t: float) -> None:
        """Admit the entry blockAdmission held once all admitted workloads are ready. Kueue admits it on the
        cycle's snapshot; here its quota and topology are checked again, which can only have freed up since, as
        nothing else was admitted meanwhile."""
        e, self.in_hand = self.in_hand, None
        cq, job, fr = e.cq, e.job, e.fr
        if job.state != QUEUED or job.units > self.available(cq, fr):
            return
        nodes = self._tas_nodes(fr, job)
        if nodes is None:
            return
        if cq in self.waiting and self.waiting[cq].job is job:
            del self.waiting[cq]
        self._admit(cq, job, fr, t, nodes)

    def _reserve(self, cq: CQ, fr, amount: int, reserved: list[Reservation]) -> None:
        if amount > 0:
            self._shift(cq, fr, amount)
            reserved.append(Reservation(cq, fr, amount))

    def _to_reserve(self, e: Entry) -> int:
        """Kueue's quotaResourcesToReserve for a preempting entry without targets."""
        cq, fr, units = e.cq, e.fr, e.job.units
        if e.borrows:
            limit = cq.bl[fr]
            return units if limit is None else min(units, cq.nominal[fr] + limit - cq.usage[fr])
        return max(0, min(units, cq.nominal[fr] - cq.usage[fr]))

    def _fits_without(self, cq: CQ, fr, units: int, removed: list[Job]) -> bool:
        if not removed:
            return units <= self.available(cq, fr)
        # Only workloads of `fr` in `cq`'s cohort change what it can take, and one shift by their sum per queue
        # moves the cohort's usage as a shift per workload does.
        group, flavor, resource = cq.group, fr[0], fr[1]
        freed: dict[CQ, int] = {}
        for w in removed:
            if w.resource == resource and w.flavor == flavor:
                other = self.cqs[w.queue]
                if other.group is group:
                    freed[other] = freed.get(other, 0) + w.units
        for other, amount in freed.items():
            self._shift(other, fr, -amount)
        try:
            return units <= self.available(cq, fr)
        finally:
            for other, amount in freed.items():
                self._shift(other, fr, amount)

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
        group = cq.group
        version = group.version
        lendable, used, exposed = group.lendable, group.usage, group.exposed
        changes = cq.changes
        may_hold = cq.spec.reclaim_within_cohort != "Any"  # (see _holds_back)
        fails = cq.fails
        failed: list[Job] = []
        wake: dict[tuple[str, str], tuple[int, int]] | None = {}  # CQ.wake, once every head ends parked
        heads = cq.heads
        if heads is None:  # a queue is nominated again after every release in its cohort: sort only after a change
            heads = cq.heads = sorted([heap[0] for heap in cq.buckets.values()])
        for head in heads:
            job = head.job
            fail = fails.get(job.bucket)
            if fail is None or fail.seq != job.seq:
                fail = self._first_look(cq, job, failed, version)
                if isinstance(fail, Entry):
                    return fail
            elif fail.version != version and cq.settled != version:
                # A release since it was last found inadmissible: Kueue tries it again. Still parked while its queue's
                # usage is as it was and the cohort has less free than it needs (Failure), or else when its queue's
                # quota now shows it still lacks units (_recheck).
                fr = fail.fr
                if fr is None:
                    refreshed = None
                elif fail.changes == changes[fr]:
                    free = lendable[fr] - used[fr]
                    if free < fail.need_free and free + exposed.get(fr, 0) < fail.need_exposed:
                        fail.version = version
                        refreshed = fail
                    else:
                        refreshed = None
                elif self._recheck(cq, job, fail):
                    refreshed = fail
                    failed.append(job)
                    self._status_patch(job)
                else:
                    refreshed = None
                if refreshed is None:
                    fail = self._first_look(cq, job, failed, version)
                    if isinstance(fail, Entry):
                        return fail
                elif may_hold and self._holds_back(cq, job, fr):
                    # Evaluated again, it would hold quota back again this cycle.
                    return Entry(cq, job, PREEMPT, fr, cq.usage[fr] + job.units > cq.nominal[fr])
            if wake is not None:
                fr = fail.fr
                if fr is None or fail.changes != changes[fr] or may_hold and self._holds_back(cq, job, fr):
                    # Any release may admit it, or its queue's usage changed since (its needs are out of date), or
                    # it holds quota back again after any release.
                    wake = None
                else:
                    at = wake.get(fr)
                    if at is None:
                        wake[fr] = (fail.need_free, fail.need_exposed)
                    elif fail.need_free < at[0] or fail.need_exposed < at[1]:
                        wake[fr] = (min(fail.need_free, at[0]), min(fail.need_exposed, at[1]))
            if cq.strict:
                break
        cq.wake = wake
        return None

    def _first_look(self, cq: CQ, job: Job, failed: list[Job], version: int) -> Entry | Failure:
        """Evaluate a head (unless it is no easier than one that just failed): its entry, or why it is parked."""
        fails = cq.fails
        dominant = None
        for f in failed:
            if f.resource == job.resource and f.pools == job.pools and f.units <= job.units \
                    and f.priority >= job.priority:
                # Not on TAS flavors: more units can mean smaller pods, which may fit where larger ones did not.
                # (The same queue, resource and pools: `f` has the job's flavors.)
                if not any(self._tas(fr) for fr in cq.frs[job.bucket]):
                    dominant = f
                break
        if dominant:
            # No easier than a head that just failed (more units, no higher priority): parked as long.
            fail = fails[job.bucket] = fails[dominant.bucket].for_head(job.seq)
            self._status_patch(job)  # (Kueue spends a cycle on it)
            return fail
        entry = self._evaluate(cq, job)
        if entry is not None and (entry.mode == FIT or entry.targets):
            return entry
        # Not admissible now: parked until the cohort frees quota (at least what it lacks, if known).
        fail = fails[job.bucket] = Failure(version, job.seq, *self._deficit(cq, job))
        failed.append(job)
        if entry is not None and cq.spec.reclaim_within_cohort != "Any":
            return entry  # preempting without candidates: it still holds quota back this cycle
        self._status_patch(job)
        return fail

    def _holds_back(self, cq: CQ, job: Job, fr: tuple[str, str]) -> bool:
        """Whether the single-flavor head, while it lacks units, is a Preempt without targets that holds quota back
        for the cycle (flavors.py `_evaluate`; the queue cannot always reclaim), rather than NoFit."""
        return cq.spec.reclaim_within_cohort != "Any" and job.units <= self.potential(cq, fr) and (
            job.units <= cq.nominal[fr] or self._may_preempt_while_borrowing(cq))

    def _deficit(self, cq: CQ, job: Job) -> tuple:
        """The Failure fields after `version` and `seq` of a head that just failed. ANY_RELEASE: no shortcut, any
        release may admit it."""
        frs = cq.frs[job.bucket]
        if len(frs) != 1 or self.fair:
            # With fair sharing an admission can raise another queue's share and so make room: no shortcut.
            return ANY_RELEASE
        fr = frs[0]
        most = self._tas_most(fr, job)
        if job.units > self.potential(cq, fr) or (most is not None and job.units > most):
            return fr, cq.changes[fr], NEVER, NEVER, 0, 0
        if self._tas_short:
            return ANY_RELEASE  # it waits for nodes in a domain, which any release may free
        last = self._last_short
        if last.job is not job or last.fr != fr:
            last = self._shortfall(cq, job, fr)
        return self._needs(cq, job, fr, last.own, last.others)

    def _needs(self, cq: CQ, job: Job, fr: tuple[str, str], own: int, others: int) -> tuple:
        """The Failure fields after `version` and `seq` of a head whose preemption search on `fr` lacks units, from
        what it may evict in its own queue (`own`) and at most in others (`others`).

        What the queue can take is min(local + free, capped): its unlent quota not in use (local), plus what the
        cohort has free, within its borrowingLimit (capped: nominal + limit - usage). The shortfall is then
        `overall` = units - (what it can take + own + others), or while it would borrow without being allowed to
        preempt while borrowing, min(units - (what it can take + own), max(its usage not evictable + units - nominal,
        `overall`)) (preemption.py `_lacking`). With its own queue as it is, only `free` (releases raise it) and
        `others` (admissions and holds raise it, by at most Cohort.exposed) move."""
        group = cq.group
        exposed = group.exposed.get(fr, 0)
        if not group.real:
            return fr, cq.changes[fr], NEVER, NEVER, others, exposed  # nothing outside its queue moves
        units, usage, nominal, limit = job.units, cq.usage[fr], cq.nominal[fr], cq.bl[fr]
        local = cq.guar[fr] - usage if usage < cq.guar[fr] else 0
        lacking = units - own - local  # the free quota the cohort must have for it to fit after evicting `own`
        need_exposed = lacking - others + exposed  # the free quota, plus exposed since, for `overall` to end
        if not self._borrowing_bound(cq, fr, units):
            return fr, cq.changes[fr], NEVER, need_exposed, others, exposed
        capped = NEVER if limit is None else nominal + limit - usage
        need_free = lacking if capped >= units - own else NEVER
        if usage - own + units - nominal > 0:
            need_exposed = NEVER
        return fr, cq.changes[fr], need_free, need_exposed, others, exposed

    def _recheck(self, cq: CQ, job: Job, fail: Failure) -> bool:
        """Bring a parked head's Failure up to date without its evaluation after its own queue's usage changed, when
        its quota now shows its preemption search still lacks units; else False (evaluate it). What it could reclaim
        from other queues is taken at most what it was plus what was exposed since."""
        fr, units = fail.fr, job.units
        available = self.available(cq, fr)
        if units <= available:
            return False
        others = fail.others + cq.group.exposed.get(fr, 0) - fail.exposed
        own = self._own_evictable(cq, job, fr)
        if not self._lacking(cq, units, fr, available, own, others):
            return False
        # Updated in place: about one recheck per admission, and a new Failure each time showed in the profile.
        fail.version = cq.group.version
        fail.fr, fail.changes, fail.need_free, fail.need_exposed, fail.others, fail.exposed = self._needs(
            cq, job, fr, own, others)
        return True

    def _admit(self, cq: CQ, job: Job, fr: tuple[str, str], t: float, nodes=ANYWHERE) -> None:
        heap = cq.buckets[job.bucket]
        cq.heads = None
        if heap[0].job is job:
            heapq.heappop(heap)
        else:  # a sticky head that is no longer first in its bucket
            heap[:] = [e for e in heap if e.job is not job]
            heapq.heapify(heap)
        cq.fails.pop(job.bucket, None)
        if not heap:
            del cq.buckets[job.bucket]
        cq.admitted[job] = None
        self.patched.discard(job.seq)
        sizes = cq.sizes[fr]
        sizes[job.units] = sizes.get(job.units, 0) + 1
        job.flavor = fr[0]
        self._use(cq, fr, job.units, job.priority)
        if self.block:
            self.unready += 1
        # Quota is taken now (Kueue assumes the workload in its cache); the admission patch lands when the rate
        # limiter lets it through.
        self.sim.admit(job, fr[0], self.sim.groups.get((self.sim.flavor_pool(fr[0]), fr[1])), t,
                       nodes=list(nodes) if nodes else None, landed=self.client.take(t))

