"""Which admitted workloads to evict so that a preemptor fits.

Mirrors Kueue's `pkg/scheduler/preemption` (preemption.go, classical/hierarchical_preemption.go,
fairsharing/): the classical strategy takes candidates in the same queue by `withinClusterQueue`, and in
borrowing queues of the cohort by `reclaimWithinCohort` (and `borrowWithinCohort` with its priority threshold),
ordered other-queue first, lowest priority first, most recently admitted first; candidates are removed until the
preemptor fits, then added back where not needed (minimal set). With fair sharing, the
LessThanOrEqualToFinalShare then LessThanInitialShare rules pick targets by dominant resource share.
"""
from __future__ import annotations

from typing import NamedTuple

from gpu_platform.simulator.engine import DONE, EVICTING, Job, Simulation
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
    """The last preemption search that lacked units: `units` short for `job` on `fr` (0: it may succeed)."""

    job: Job | None
    fr: tuple[str, str] | None
    units: int


NO_SHORTFALL = Shortfall(None, None, 0)


class Preemptor(QuotaBook):
    """Preemption targets, computed on the quota book (usage is shifted and restored while searching)."""

    def __init__(self, sim: Simulation):
        super().__init__(sim)
        self._last_short = NO_SHORTFALL  # reused by the cycle when it parks the head that just failed

    def _within_allowed(self, cq: CQ, job: Job, other: Job) -> bool:
        policy = cq.spec.within_cluster_queue
        if policy == "LowerPriority":
            return other.priority < job.priority
        if policy == "LowerOrNewerEqualPriority":
            return other.priority < job.priority or (other.priority == job.priority and job.ts < other.ts)
        return False

    def _shortfall(self, cq: CQ, job: Job, fr: tuple[str, str], available: int | None = None) -> int:
        """How many units the preemption search lacks at best, mirroring its options (0: it may succeed).
        `available`: what the queue can take of `fr` now, when the caller has it.

        Freeing k units in the cohort lowers it by at most k; in classical preemption admissions never lower it.
        """
        if available is None:
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

    @staticmethod
    def _order(cq: CQ):
        # Kueue's CandidatesOrdering: already evicting first, then other queues, lower priority, most recently
        # admitted.
        return lambda w: (w.state != EVICTING, w.queue == cq.name, w.priority, -w.admit_t, w.seq)

    def _targets(self, cq: CQ, job: Job, fr: tuple[str, str], available: int | None = None) -> list[Target]:
        spec = cq.spec
        reclaim = spec.reclaim_within_cohort if cq.group.real else "Never"
        if spec.within_cluster_queue == "Never" and reclaim == "Never":
            return []
        short = self._shortfall(cq, job, fr, available)
        self._last_short = Shortfall(job, fr, short)
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

    def _minimal(self, cq, job, fr, candidates, variants, allow_borrowing) -> list[Target]:
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
        return [Target(w, "InClusterQueue" if w.queue == cq.name else REASONS[variants[w]]) for w in removed]

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

    def _fair_targets(self, cq: CQ, job: Job, fr, candidates: list[Job]) -> list[Target]:
        """Fair-sharing preemption: take from the queue with the highest share while the preemptor's share after
        admission stays at or below the target's share after the preemption (then below its share before)."""
        units = job.units
        per_queue: dict[str, list[Job]] = {}
        for w in candidates:
            per_queue.setdefault(w.queue, []).append(w)
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

