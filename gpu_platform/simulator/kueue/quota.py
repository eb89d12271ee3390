"""ClusterQueue and cohort quota state, and the arithmetic on it.

Mirrors Kueue's scheduler cache (`pkg/cache/scheduler`: the ClusterQueue and Cohort snapshots, and
resource_node.go's available/potentialAvailable for flat cohorts): a queue may use its unlent quota (the guaranteed
part: nominal minus `lendingLimit`), plus what its cohort's members lend and do not use, up to its own
`borrowingLimit`.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from gpu_platform.simulator.engine import EVICTING, Job, Simulation


class Pending(NamedTuple):
    """A queued workload in its bucket's heap: higher priority first, then queue-order timestamp, then arrival."""

    neg_priority: int
    ts: float
    seq: int
    job: Job


class Failure(NamedTuple):
    """Why a bucket's head was found inadmissible: the cohort version then, the head, and (single flavor only)
    the units released in the cohort by then and the units it lacked."""

    version: int
    seq: int
    fr: tuple[str, str] | None
    released: int
    deficit: int


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
                 "admitted", "strict", "weight", "frs", "sticky", "potential", "wake", "sizes", "heads")

    def __init__(self, name, spec, idx, group):
        self.name, self.spec, self.idx, self.group = name, spec, idx, group
        self.nominal = {fr: q.nominal for fr, q in spec.quotas.items()}
        self.bl = {fr: q.borrowing_limit for fr, q in spec.quotas.items()}
        self.guar = {fr: q.guaranteed for fr, q in spec.quotas.items()}
        self.usage = {fr: 0 for fr in spec.quotas}
        self.prio_usage: dict[tuple[str, str], dict[int, int]] = {fr: {} for fr in spec.quotas}
        self.buckets: dict[tuple, list[Pending]] = {}  # heaps of queued workloads, per (units, resource, pools)
        self.heads: list[Pending] | None = None  # the buckets' heads in order, until a submission or admission
        self.fails: dict[tuple, Failure] = {}
        self.admitted: dict[Job, None] = {}
        self.strict = spec.queueing_strategy == "StrictFIFO"
        self.weight = spec.weight
        self.frs: dict[tuple, list[tuple[str, str]]] = {}
        self.sticky: Job | None = None  # a head waiting for its preemption targets to go (kueue#7157)
        self.potential: dict[tuple[str, str], int] = {}
        self.wake: dict[tuple[str, str], int] | None = None  # see KueueScheduler._nominate
        self.sizes: dict[tuple[str, str], dict[int, int]] = {fr: {} for fr in spec.quotas}  # admitted job sizes


class QuotaBook:
    """Every ClusterQueue's usage, its cohort's totals, and the queues a release wakes up."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        model = sim.model
        self.fair = model.fair_sharing
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

    def available(self, cq: CQ, fr: tuple[str, str]) -> int:
        """What `cq` can still take of `fr`: its unlent quota, plus what the cohort has free within limits."""
        # The hottest function of a run: comparisons rather than max()/min() calls.
        usage = cq.usage[fr]
        group = cq.group
        if not group.real:
            return cq.nominal[fr] - usage
        guaranteed = cq.guar[fr]
        parent = group.lendable[fr] - group.usage[fr]
        limit = cq.bl[fr]
        if usage < guaranteed:
            local, reach = guaranteed - usage, cq.nominal[fr] - guaranteed
        else:
            local, reach = 0, cq.nominal[fr] - usage
        if limit is not None and reach + limit < parent:
            parent = reach + limit
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
            above, after = usage - cq.guar[fr], usage + delta - cq.guar[fr]
            group.usage[fr] += (after if after > 0 else 0) - (above if above > 0 else 0)
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
