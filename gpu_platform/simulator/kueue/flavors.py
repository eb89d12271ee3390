"""Flavor assignment: which ResourceFlavor of its ClusterQueue a head workload gets, and how.

Mirrors Kueue's `pkg/scheduler/flavorassigner`: the queue's flavors for the job's resource are tried in order;
the first where the job fits within what the queue may take (borrowing included) is a Fit, else the best flavor
where the preemption oracle finds targets is a Preempt (with those targets: reclaim-only before preempting in
its own queue, then not borrowing afterwards, then flavor order), else the first the job could ever fit is
a Preempt without targets (it holds quota back for the cycle). As in fitsResourceQuota, preemption is only
considered for a request within the flavor's nominal quota, unless the queue may preempt while borrowing
(borrowWithinCohort, or fair sharing with reclaimWithinCohort); otherwise the flavor is NoFit. On a topology-aware
flavor a Fit also needs a TAS assignment (tas.py); without one the flavor is NoFit (Kueue would look for targets that
free a domain: not modelled), and preemption targets, chosen by quota, count only if their nodes then hold the gang.
"""
from __future__ import annotations

from gpu_platform.simulator.engine import Job, pods_for
from gpu_platform.simulator.kueue import tas
from gpu_platform.simulator.kueue.preemption import NO_SHORTFALL, Preemptor, Target
from gpu_platform.simulator.kueue.quota import CQ
from gpu_platform.simulator.scheduler import Limit

ANYWHERE = ()  # no topology assignment: the flavor is not topology-aware, kube-scheduler places the pods

FIT, PREEMPT = 1, 2  # Kueue's FlavorAssignmentMode (NoFit is None here)


class Entry:
    """A nominated head and its assignment: mode, flavor resource, whether it borrows, preemption targets."""

    __slots__ = ("cq", "job", "mode", "fr", "borrows", "targets", "key")

    def __init__(self, cq: CQ, job: Job, mode: int, fr: tuple[str, str], borrows: bool,
                 targets: list[Target] | tuple = ()):
        self.cq, self.job, self.mode, self.fr, self.borrows, self.targets = cq, job, mode, fr, borrows, targets


class FlavorAssigner(Preemptor):
    """Assigns flavors, asking the preemptor when a head fits nowhere as is."""

    def __init__(self, sim):
        super().__init__(sim)
        self._tas_cache: dict[tuple[str, str], tuple | None] = {}
        self._tas_short = False  # the last evaluation found quota but no topology domain on some flavor

    def _flavors(self, cq: CQ, job: Job) -> list[tuple[str, str]]:
        frs = []
        for flavor in cq.spec.flavors_for(job.resource):
            pool = self.sim.flavor_pool(flavor)
            if job.pools is None or pool in job.pools or flavor in job.pools:
                frs.append((flavor, job.resource))
        return frs

    def _tas(self, fr: tuple[str, str]) -> tuple | None:
        """(node group, TasRequest) of a topology-aware flavor resource, else None."""
        if fr not in self._tas_cache:
            found = self.sim.model.tas(fr[0])
            group = self.sim.groups.get((self.sim.flavor_pool(fr[0]), fr[1])) if found else None
            self._tas_cache[fr] = (group, found) if group is not None else None
        return self._tas_cache[fr]

    def _tas_nodes(self, fr: tuple[str, str], job: Job) -> list[int] | tuple | None:
        """The node of each pod as TAS assigns them now; ANYWHERE off TAS; None when no domain holds the gang."""
        found = self._tas(fr)
        if found is None:
            return ANYWHERE
        group, request = found
        pods = pods_for(job.units, group.cap)
        return tas.assign(group.free, pods[0], len(pods), request)

    def _tas_fits_without(self, fr: tuple[str, str], job: Job, targets: list[Target]) -> bool:
        """Whether TAS can place the job once the targets' pods are gone (always, off TAS)."""
        found = self._tas(fr)
        if found is None:
            return True
        group, request = found
        free = list(group.free)
        for w, _ in targets:
            if w.group is group:
                for node, size in w.bound:
                    free[node] += size
        pods = pods_for(job.units, group.cap)
        return tas.assign(free, pods[0], len(pods), request) is not None

    def _tas_most(self, fr: tuple[str, str], job: Job) -> int | None:
        """The most units one TAS admission of this job's pod size can ever get on fr (None off TAS)."""
        found = self._tas(fr)
        if found is None:
            return None
        group, request = found
        size = pods_for(job.units, group.cap)[0]
        return tas.largest_domain(group.nodes, group.cap // size, request) * size

    def limits(self, cq: CQ, job: Job) -> tuple[Limit, ...] | None:
        """What keeps the job off each flavor it may use for good, or None when some flavor could admit it."""
        frs = cq.frs[job.bucket]
        if not frs:
            where = f" on {', '.join(job.pools)}" if job.pools else ""
            return (Limit("", "flavor", None, f"no flavor of ClusterQueue {cq.name} offers {job.resource}{where}"),)
        limits = []
        for fr in frs:
            limit = self._limit(cq, job, fr)
            if limit is None:
                return None
            limits.append(limit)
        return tuple(limits)

    def _limit(self, cq: CQ, job: Job, fr: tuple[str, str]) -> Limit | None:
        """The first of quota, pool size and topology that keeps the job off `fr` whatever else runs."""
        (flavor, res), units = fr, job.units
        most = self.potential(cq, fr)
        if units > most:
            quota = cq.spec.quotas[fr]
            if cq.group.real:
                borrowing = "none" if quota.borrowing_limit is None else quota.borrowing_limit
                why = (f"nominalQuota {quota.nominal}, borrowingLimit {borrowing}, cohort {cq.group.name} shares "
                       f"{cq.group.lendable[fr]} in all")
            else:
                why = f"nominalQuota {quota.nominal}, no cohort"
            return Limit(flavor, "quota", most, f"{flavor}: ClusterQueue {cq.name} may hold at most {most} {res} ({why})")
        group = self.sim.groups.get((self.sim.flavor_pool(flavor), res))
        if group is not None:
            size = pods_for(units, group.cap)[0]
            offer = group.nodes * (group.cap // size) * size
            if units > offer:
                return Limit(flavor, "pool", offer, f"{flavor}: pool {group.pool} holds at most {offer} {res} in "
                                                    f"{size}-unit pods on {group.nodes} nodes (maxNodes, or --nodes)")
        domain = self._tas_most(fr, job)
        if domain is not None and units > domain:
            _, request = self._tas(fr)
            return Limit(flavor, "topology", domain,
                         f"{flavor}: its largest {request.levels[request.level]} domain holds {domain} {res} "
                         f"({request.mode} request: --tas-request, --tas-level; domain sizes: --topology-blocks, "
                         f"--topology-levels)")
        return None

    def _may_preempt_while_borrowing(self, cq: CQ) -> bool:
        """Kueue's canPreemptWhileBorrowing: borrowWithinCohort, or fair sharing with reclaimWithinCohort."""
        spec = cq.spec
        return spec.borrow_within_cohort not in (None, "Never") or (
            self.fair and spec.reclaim_within_cohort != "Never")

    def _evaluate(self, cq: CQ, job: Job) -> Entry | None:
        """Flavor assignment: the first flavor where the job fits, else the first where preemption makes room."""
        self._last_short = NO_SHORTFALL
        self._tas_short = False
        units = job.units
        preemptible = []
        for fr in cq.frs[job.bucket]:
            if units > self.potential(cq, fr):
                continue
            available = self.available(cq, fr)
            if units <= available:
                if self._tas_nodes(fr, job) is not None:
                    return Entry(cq, job, FIT, fr, cq.usage[fr] + units > cq.nominal[fr])
                self._tas_short = True
                continue  # quota fits, no topology domain holds the gang: NoFit on this flavor
            if units <= cq.nominal[fr] or self._may_preempt_while_borrowing(cq):
                preemptible.append((fr, available))  # (the search below changes no other flavor's usage)
            # else NoFit: fitsResourceQuota looks for targets only for a request within nominal quota
        # With the default flavorFungibility (whenCanPreempt: TryNextFlavor) every flavor is tried and the best
        # preemption kept (isPreferred, BorrowingOverPreemption): reclaiming only from other queues before
        # preempting in its own, then not borrowing after the preemptions, then flavor order.
        best, best_key = None, None
        for fr, available in preemptible:
            targets = self._targets(cq, job, fr, available)
            if targets and not self._tas_fits_without(fr, job, targets):
                # Kueue recomputes the TAS assignment with the targets gone (scheduler.go); targets chosen by quota
                # whose nodes leave no domain for the gang would be evicted for nothing, again and again.
                targets = []
            if targets:
                own = sum(w.units for w, _ in targets if w.queue == cq.name)
                key = (own > 0, cq.usage[fr] - own + units > cq.nominal[fr])
                if best is None or key < best_key:
                    best, best_key = Entry(cq, job, PREEMPT, fr, cq.usage[fr] + units > cq.nominal[fr], targets), key
                    if key == (False, False):
                        break
        if best is not None:
            return best
        if preemptible:
            fr = preemptible[0][0]
            return Entry(cq, job, PREEMPT, fr, cq.usage[fr] + units > cq.nominal[fr])
        return None

