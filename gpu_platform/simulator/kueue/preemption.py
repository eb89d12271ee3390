"""Which admitted workloads to evict so that a preemptor fits.

Mirrors Kueue's `pkg/scheduler/preemption` (preemption.go, classical/hierarchical_preemption.go,
fairsharing/): the classical strategy takes candidates in the same queue by `withinClusterQueue`, and in
borrowing queues of the cohort by `reclaimWithinCohort` (and `borrowWithinCohort` with its priority threshold),
ordered other-queue first, lowest priority first, most recently admitted first; candidates are removed until the
preemptor fits, then added back where not needed (minimal set). With fair sharing, the
LessThanOrEqualToFinalShare then LessThanInitialShare rules pick targets by dominant resource share.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import NamedTuple

from gpu_platform.simulator.engine import EVICTING, Job, Simulation
from gpu_platform.simulator.kueue.quota import CQ, QuotaBook

# Preemption variants of a candidate in another ClusterQueue (Kueue's classical/hierarchical_preemption.go).
RECLAIM, RECLAIM_WITHOUT_BORROWING, RECLAIM_WHILE_BORROWING = 1, 2, 3
REASONS = {RECLAIM: "InCohortReclamation", RECLAIM_WITHOUT_BORROWING: "InCohortReclamation",
           RECLAIM_WHILE_BORROWING: "InCohortReclaimWhileBorrowing"}


class Target(NamedTuple):
    """A workload to evict, and the reason Kueue gives in its Evicted/Preempted condition."""

    job: Job
    reason: str


class Shortfall(NamedTuple):
    """The last preemption search's bound: `units` short for `job` on `fr` (0: it may succeed), with what it may
    evict in its own queue (`own`) and at most in others (`others`)."""

    job: Job | None
    fr: tuple[str, str] | None
    units: int
    own: int = 0
    others: int = 0


NO_SHORTFALL = Shortfall(None, None, 0)


class Ranked(NamedTuple):
    """A queue's admitted workloads on one flavor resource in candidate order (evicting ones aside), as of its
    `version` (CQ.changes), with their priorities."""

    version: int
    jobs: list[Job]
    priorities: list[int]


def _rank(w: Job) -> tuple:
    # Kueue's CandidatesOrdering within one queue: lower priority first, then most recently admitted.
    return w.priority, -w.admit_t, w.seq


def _other_order(w: Job) -> tuple:
    # CandidatesOrdering across other queues: already evicting first, then as _rank.
    return w.state != EVICTING, w.priority, -w.admit_t, w.seq


def _evicting_first(jobs: list[Job]) -> list[Job]:
    """Candidates of one queue in Kueue's order (already evicting first), from their _rank order."""
    evicting = [w for w in jobs if w.state == EVICTING]
    if not evicting:
        return jobs
    return evicting + [w for w in jobs if w.state != EVICTING]


class Preemptor(QuotaBook):
    """Preemption targets, computed on the quota book (usage is shifted and restored while searching)."""

    def __init__(self, sim: Simulation):
        super().__init__(sim)
        self._last_short = NO_SHORTFALL  # reused by the cycle when it parks the head that just failed
        self._ranks: dict[tuple[int, tuple[str, str]], Ranked] = {}

    def _shortfall(self, cq: CQ, job: Job, fr: tuple[str, str], available: int | None = None) -> Shortfall:
        """How many units the preemption search lacks at best, mirroring its options (0: it may succeed).
        `available`: what the queue can take of `fr` now, when the caller has it.

        Freeing k units in the cohort lowers it by at most k; in classical preemption admissions never lower it.
        """
        if available is None:
            available = self.available(cq, fr)
        own, others = self._evictable(cq, job, fr)
        return Shortfall(job, fr, self._lacking(cq, job.units, fr, available, own, others), own, others)

    def _lacking(self, cq: CQ, units: int, fr: tuple[str, str], available: int, own: int, others: int) -> int:
        """The shortfall of a search for `units` from what the queue can take and may evict (own, others)."""
        overall = units - (available + own + others)
        if not self._borrowing_bound(cq, fr, units):
            short = overall
        else:
            # Would borrow and may not borrow while preempting: either take from its own queue only (borrowing),
            # or evict enough of its own to end within nominal, and enough overall to fit.
            short = min(units - (available + own), max(cq.usage[fr] - own + units - cq.nominal[fr], overall))
        return short if short > 0 else 0

    def _borrowing_bound(self, cq: CQ, fr: tuple[str, str], units: int) -> bool:
        """Whether the job would borrow and its queue may not borrow while preempting (classical preemption)."""
        return not self.fair and cq.usage[fr] + units > cq.nominal[fr] and cq.spec.borrow_within_cohort in (
            None, "Never")

    @staticmethod
    def _own_evictable(cq: CQ, job: Job, fr: tuple[str, str]) -> int:
        """Usage of its own queue the job's withinClusterQueue policy allows it to evict (at most)."""
        policy = cq.spec.within_cluster_queue
        priority = job.priority
        own = 0
        if policy == "LowerPriority":
            for p, u in cq.prio_usage[fr].items():
                if p < priority:
                    own += u
        elif policy == "LowerOrNewerEqualPriority":
            for p, u in cq.prio_usage[fr].items():
                if p <= priority:
                    own += u
        return own

    def _evictable(self, cq: CQ, job: Job, fr: tuple[str, str]) -> tuple[int, int]:
        """Usage the job's preemption policies allow it to evict: in its own queue, and borrowed by others."""
        own = self._own_evictable(cq, job, fr)
        spec = cq.spec
        priority = job.priority
        others = 0
        group = cq.group
        reclaim = spec.reclaim_within_cohort if group.real else "Never"
        if reclaim != "Never":
            for m in group.members:
                if m is cq:
                    continue
                borrowed = m.usage.get(fr, 0) - m.nominal.get(fr, 0)
                if borrowed <= 0:
                    continue
                # Evicting stops once a queue is back within nominal, but its last victim may take it below.
                sizes = m.sizes[fr]
                most = borrowed + (max(sizes) if sizes else 1) - 1
                if reclaim == "LowerPriority":
                    most = min(most, sum(u for p, u in m.prio_usage[fr].items() if p < priority))
                others += most
        return own, others

    def _ranked(self, cq: CQ, fr: tuple[str, str]) -> Ranked:
        """`cq`'s admitted workloads on `fr` in candidate order, sorted again only after an admission or release on
        `fr` (CQ.changes): a search asks for them far more often than they change."""
        version = cq.changes[fr]
        key = (cq.idx, fr)
        ranked = self._ranks.get(key)
        if ranked is None or ranked.version != version:
            flavor, resource = fr
            jobs = sorted((w for w in cq.admitted if w.flavor == flavor and w.resource == resource), key=_rank)
            ranked = self._ranks[key] = Ranked(version, jobs, [w.priority for w in jobs])
        return ranked

    def _targets(self, cq: CQ, job: Job, fr: tuple[str, str], available: int | None = None) -> list[Target]:
        spec = cq.spec
        reclaim = spec.reclaim_within_cohort if cq.group.real else "Never"
        if spec.within_cluster_queue == "Never" and reclaim == "Never":
            return []
        self._last_short = self._shortfall(cq, job, fr, available)
        if self._last_short.units:
            return []
        priority = job.priority
        borrowers: list[list[Job]] = []  # each borrowing queue's candidates, in _rank order
        if reclaim != "Never":
            for member in cq.group.members:
                if member is cq or member.usage.get(fr, 0) <= member.nominal.get(fr, 0):
                    continue
                ranked = self._ranked(member, fr)
                jobs = ranked.jobs if reclaim == "Any" else ranked.jobs[:bisect_left(ranked.priorities, priority)]
                if jobs:
                    borrowers.append(jobs)
        if self.fair:
            # Fair sharing takes candidates queue by queue: only the order within each queue matters.
            per_queue = [_evicting_first(jobs) for jobs in borrowers]
            same = self._same(cq, job, fr)
            if same:
                per_queue.append(same)
            return self._fair_targets(cq, job, fr, per_queue) if per_queue else []
        # Kueue's candidate variants: with the preemptor within nominal quota after admission all are hierarchical
        # reclaims (RECLAIM); else each is reclaimed without or while borrowing, ordered the same way.
        advantage = cq.usage[fr] + job.units <= cq.nominal[fr]
        borrow_forbidden = spec.borrow_within_cohort in (None, "Never")
        threshold = spec.borrow_max_priority

        def variant(w: Job) -> int:
            if advantage:
                return RECLAIM
            if borrow_forbidden or w.priority >= priority or (threshold is not None and w.priority > threshold):
                return RECLAIM_WITHOUT_BORROWING
            return RECLAIM_WHILE_BORROWING

        under_nominal = cq.usage[fr] < cq.nominal[fr]
        if not borrowers or (borrow_forbidden and not under_nominal):
            options = (True,)
        elif borrow_forbidden and not advantage:
            options = (False, True)
        else:
            options = (True, False)
        if borrowers:
            targets = self._among_evicting(cq, job, fr, borrowers, variant, options[0])
            if targets:
                return targets
            if len(borrowers) > 1:
                others = sorted((w for jobs in borrowers for w in jobs), key=_other_order)
            else:
                others = _evicting_first(borrowers[0])
            candidates = others + self._same(cq, job, fr)
        else:
            candidates = self._same(cq, job, fr)
            if not candidates:
                return []
        for allow_borrowing in options:
            targets = self._minimal(cq, job, fr, candidates, variant, allow_borrowing)
            if targets:
                return targets
        return []

    def _among_evicting(self, cq: CQ, job: Job, fr: tuple[str, str], borrowers: list[list[Job]], variant,
                        allow_borrowing: bool) -> list[Target]:
        """The search's targets when it ends among the candidates it takes first, those of other queues already
        evicting; else []. A preemptor waiting for its targets' pods to go (about half of all searches with a
        priority per job) mostly fits there, and then the rest need not be ordered."""
        evicting = [w for jobs in borrowers for w in jobs if w.state == EVICTING]
        if not evicting:
            return []
        if len(borrowers) > 1:
            evicting.sort(key=_rank)
        return self._minimal(cq, job, fr, evicting, variant, allow_borrowing)

    def _same(self, cq: CQ, job: Job, fr: tuple[str, str]) -> list[Job]:
        """The candidates in the job's own queue its withinClusterQueue policy allows, in Kueue's order."""
        policy = cq.spec.within_cluster_queue
        if policy == "Never":
            return []
        priority = job.priority
        ranked = self._ranked(cq, fr)
        lower = bisect_left(ranked.priorities, priority)
        same = ranked.jobs[:lower]
        if policy == "LowerOrNewerEqualPriority":
            ts = job.ts
            same += [w for w in ranked.jobs[lower:bisect_right(ranked.priorities, priority, lower)] if ts < w.ts]
        return _evicting_first(same)

    def _remove(self, w: Job, fr, sign: int) -> None:
        self._shift(self.cqs[w.queue], fr, -sign * w.units)

    def _minimal(self, cq, job, fr, candidates, variant, allow_borrowing) -> list[Target]:
        """Remove candidates in order until the job fits, then add back those not needed."""
        # The search's inner loop, run for most candidates of most searches: _remove spelled out.
        shift, fits_quota, cqs, units = self._shift, self._fits, self.cqs, job.units
        removed: list[Job] = []
        fits = False
        for w in candidates:
            owner = cqs[w.queue]
            if owner is not cq:
                if allow_borrowing and variant(w) == RECLAIM_WITHOUT_BORROWING:
                    continue
                if owner.usage[fr] <= owner.nominal[fr]:
                    continue  # that queue no longer borrows: nothing left to reclaim from it
            shift(owner, fr, -w.units)
            removed.append(w)
            if fits_quota(cq, fr, units, allow_borrowing):
                fits = True
                break
        if fits:
            removed = self._fill_back(cq, job, fr, removed, allow_borrowing)
        for w in removed:
            shift(cqs[w.queue], fr, w.units)
        if not fits:
            return []
        return [Target(w, "InClusterQueue" if w.queue == cq.name else REASONS[variant(w)]) for w in removed]

    def _fill_back(self, cq, job, fr, removed: list[Job], allow_borrowing: bool) -> list[Job]:
        """Kueue's fillBackWorkloads; returns the still-removed targets (the caller restores them)."""
        shift, fits_quota, cqs, units = self._shift, self._fits, self.cqs, job.units
        for i in range(len(removed) - 2, -1, -1):
            w = removed[i]
            owner = cqs[w.queue]
            shift(owner, fr, w.units)
            if fits_quota(cq, fr, units, allow_borrowing):
                del removed[i]
            else:
                shift(owner, fr, -w.units)
        return removed

    def _fair_targets(self, cq: CQ, job: Job, fr, candidates: list[list[Job]]) -> list[Target]:
        """Fair-sharing preemption: take from the queue with the highest share while the preemptor's share after
        admission stays at or below the target's share after the preemption (then below its share before).
        `candidates`: each queue's, in order."""
        units = job.units
        per_queue = {jobs[0].queue: list(jobs) for jobs in candidates}
        removed: list[Target] = []
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
                    removed.append(Target(w, "InClusterQueue" if owner is cq else "InCohortReclamation"))
                    self._shift(cq, fr, -units)
                    done = fits()
                    self._shift(cq, fr, +units)
                else:
                    preemptor_share = self.drs(cq)
                    while queue:
                        w = queue.pop(0)
                        self._remove(w, fr, +1)
                        if preemptor_share <= self.drs(owner):
                            removed.append(Target(w, "InCohortFairSharing"))
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
                        removed.append(Target(w, "InCohortFairSharing"))
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
        return [Target(w, reasons[id(w)]) for w in kept]

