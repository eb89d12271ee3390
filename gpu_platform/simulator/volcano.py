"""Volcano's session semantics (v1.15, `scheduling.volcano.sh/v1beta1` Queues), as far as GPU quotas go.

Every session (schedulePeriod) runs the configured actions in order:
- deserved share per queue: the `proportion` plugin water-fills cluster capacity by `weight` over what each queue
  requests (allocated + pending), capped by `capability`, at least `guarantee`; the `capacity` plugin uses the
  queue's `deserved` instead;
- `allocate`: queues in order of share (allocated / deserved), one job at a time (priority, then creation);
  a job that would take its queue above its deserved share (proportion's allocatable: allocated + request <=
  deserved) or above the queue's capability is skipped; with
  the `gang` plugin a job's pods are bound all together or not at all, without it each pod that fits is bound
  and the rest wait, holding what they got;
- `preempt`: a pending job evicts lower-priority jobs of its own queue when that makes room on nodes;
- `reclaim`: a queue below its deserved share evicts jobs of `reclaimable` queues above theirs.
The `enqueue` gate (overcommit) and `backfill` of best-effort pods are not modelled: GPU pods always request.

Timing is Volcano's own, not Kueue's cycle model (scenarios.VOLCANO_TIMING): a session every `schedulePeriod`
(`wait.Until` in pkg/scheduler/scheduler.go, 1 s by default in cmd/scheduler/app/options), whatever its binds; each
pod bind is an API call through the scheduler's client (QPS 2000, burst 2000 by default), sent after the session.
"""
from __future__ import annotations

import heapq
import math

from gpu_platform.simulator.engine import ADMITTED, RUNNING, Job, NodeGroup, Simulation, pods_for
from gpu_platform.simulator.model import ANY_FLAVOR
from gpu_platform.simulator.ratelimit import TokenBucket
from gpu_platform.simulator.scheduler import Blocked, Limit, register


class VQueue:
    """A Volcano Queue's live state."""

    __slots__ = ("name", "spec", "idx", "allocated", "pending", "buckets", "admitted", "deserved")

    def __init__(self, name, spec, idx):
        self.name, self.spec, self.idx = name, spec, idx
        self.allocated: dict[str, int] = {}
        self.pending: dict[str, int] = {}
        self.buckets: dict[tuple, list] = {}
        self.admitted: dict[Job, None] = {}
        self.deserved: dict[str, float] = {}


@register("volcano")
class VolcanoScheduler:
    """Queues and the session."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        model = sim.model
        self.gang = model.gang.enabled
        self.proportion = "capacity" not in model.plugins
        self.actions = model.actions
        self.queues = {name: VQueue(name, model.queues[name], i) for i, name in enumerate(sorted(model.queues))}
        self.total: dict[str, int] = {}
        for group in sim.groups.values():
            self.total[group.resource] = self.total.get(group.resource, 0) + group.capacity
        if not self.total:
            for q in model.queues.values():
                for (_, resource), quota in q.quotas.items():
                    self.total[resource] = self.total.get(resource, 0) + quota.nominal
        self.dirty = False
        self.client = TokenBucket(sim.timing.api_qps, sim.timing.api_burst)
        # Jobs no session can ever bind, reported up front; they still queue, as they would in Volcano.
        self.blocked: list[Blocked] = []
        self._limits_cache: dict[tuple, tuple[Limit, ...] | None] = {}

    # ---- engine hooks -----------------------------------------------------------------------------------------
    def wants_cycle(self) -> bool:
        return self.dirty

    def submit(self, job: Job, t: float) -> None:
        q = self.queues[job.queue]
        if job.bucket is None:
            job.bucket = (job.units, job.resource, job.pools)
            job.cand_groups = self.sim.candidate_groups(q.spec, job.resource, job.pools)
            key = (q.name, job.bucket)
            if key not in self._limits_cache:
                self._limits_cache[key] = self.limits(q, job)
            if self._limits_cache[key]:
                self.blocked.append(Blocked(job, self._limits_cache[key]))
        heapq.heappush(q.buckets.setdefault(job.bucket, []), (-job.priority, job.ts, job.seq, job))
        q.pending[job.resource] = q.pending.get(job.resource, 0) + job.units
        self.dirty = True

    def started(self, job: Job, t: float) -> None:
        pass

    def release(self, job: Job, t: float, evicted: bool = False, was_admitted: bool = False) -> None:
        q = self.queues[job.queue]
        q.admitted.pop(job, None)
        q.allocated[job.resource] -= job.units
        self.dirty = True

    def busy_until(self) -> float:
        return -math.inf  # sessions run every schedulePeriod whatever the binds; they go out asynchronously

    # ---- the session ------------------------------------------------------------------------------------------
    def cycle(self, t: float) -> None:
        self.dirty = False
        for action in self.actions:
            if action == "allocate":
                self._shares()
                self._allocate(t)
            elif action == "preempt":
                self._preempt(t)
            elif action == "reclaim":
                self._shares()
                self._reclaim(t)

    def _shares(self) -> None:
        for resource, total in self.total.items():
            queues = list(self.queues.values())
            if not self.proportion:
                for q in queues:
                    spec = q.spec
                    q.deserved[resource] = float((spec.deserved or {}).get(
                        resource, sum(quota.nominal for (_, r), quota in spec.quotas.items() if r == resource)))
                continue
            self._water_fill(queues, resource, total)

    def _water_fill(self, queues: list[VQueue], resource: str, total: int) -> None:
        """The proportion plugin: share `total` by weight, never above a queue's request or capability."""
        request = {q.name: q.allocated.get(resource, 0) + q.pending.get(resource, 0) for q in queues}
        guarantee = {q.name: q.spec.guarantee.get(resource, 0) for q in queues}
        capability = {q.name: (q.spec.capability or {}).get(resource, math.inf) for q in queues}
        deserved = {q.name: 0.0 for q in queues}
        remaining = float(total)
        met: set[str] = set()
        for _ in range(len(queues) + 1):
            weight = sum(q.spec.weight for q in queues if q.name not in met)
            if weight <= 0 or remaining <= 1e-9:
                break
            given = 0.0
            for q in queues:
                if q.name in met:
                    continue
                old = deserved[q.name]
                new = old + remaining * q.spec.weight / weight
                new = max(min(new, capability[q.name], request[q.name]), guarantee[q.name])
                if request[q.name] <= new:
                    met.add(q.name)
                deserved[q.name] = new
                given += new - old
            if abs(given) <= 1e-9:
                break
            remaining -= given
        for q in queues:
            q.deserved[resource] = deserved[q.name]

    def _share(self, q: VQueue) -> float:
        return max((q.allocated.get(r, 0) / d if d > 0 else (math.inf if q.allocated.get(r, 0) else 0.0)
                    for r, d in q.deserved.items()), default=0.0)

    def _heads(self, q: VQueue, skip: set) -> list[tuple]:
        return sorted(heap[0] for key, heap in q.buckets.items() if heap and key not in skip)

    def _allocate(self, t: float) -> None:
        skipped: dict[str, set] = {name: set() for name in self.queues}
        order = [(self._share(q), q.idx, q) for q in self.queues.values() if q.buckets]
        heapq.heapify(order)
        while order:
            _, _, q = heapq.heappop(order)
            heads = self._heads(q, skipped[q.name])
            if not heads:
                continue
            job = heads[0][3]
            resource = job.resource
            if self.proportion and q.allocated.get(resource, 0) + self._first(job) > q.deserved.get(resource, 0):
                # proportion's allocatable: allocated + request must stay within deserved (proportion.go
                # queueAllocatable), per task; this head waits, the queue's smaller heads may still fit.
                skipped[q.name].add(job.bucket)
                heapq.heappush(order, (self._share(q), q.idx, q))
                continue
            capability = (q.spec.capability or {}).get(resource)
            ok, group = False, None
            if capability is None or q.allocated.get(resource, 0) + job.units <= capability:
                ok, group = self._room(job)
            if ok:
                self._bind(q, job, group, t)
            else:
                skipped[q.name].add(job.bucket)
            heapq.heappush(order, (self._share(q), q.idx, q))

    def _first(self, job: Job) -> int:
        """What must be allocatable for the job to be bound this session: all its pods with the gang plugin, one
        pod without it (its other pods then wait for room, holding the quota as the simulator binds jobs whole)."""
        if self.gang or not job.cand_groups:
            return job.units
        return pods_for(job.units, job.cand_groups[0].cap)[0]

    def _room(self, job: Job) -> tuple[bool, NodeGroup | None]:
        """Whether the job can start now, and where: the first candidate group with room for all its pods
        (gang) or for one pod (no gang); no group at all when the model has no nodes (quota only)."""
        if not self.sim.groups:
            return True, None
        for group in job.cand_groups:
            if self.gang:
                if group.fits_all(job.units):
                    return True, group
            elif group.max_free() >= pods_for(job.units, group.cap)[0]:
                return True, group
        return False, None

    def _bind(self, q: VQueue, job: Job, group: NodeGroup | None, t: float) -> None:
        heap = q.buckets[job.bucket]
        heapq.heappop(heap)
        if not heap:
            del q.buckets[job.bucket]
        q.pending[job.resource] -= job.units
        q.allocated[job.resource] = q.allocated.get(job.resource, 0) + job.units
        q.admitted[job] = None
        # The session binds in cache; the pod binds go out asynchronously (BindFlowChannel), one API call per pod
        # through the scheduler's own client, and the job starts when the last went through.
        pods = len(pods_for(job.units, group.cap)) if group is not None else 1
        self.sim.admit(job, ANY_FLAVOR, group, t, place_now=True, landed=self.client.take(t, pods))

    # ---- eviction actions -------------------------------------------------------------------------------------
    def _victims_make_room(self, job: Job, victims: list[Job]) -> list[Job] | None:
        """The shortest prefix of `victims` (all on one group) whose eviction lets `job` start; None if none."""
        chosen: list[Job] = []
        for group in job.cand_groups:
            on_group = [v for v in victims if v.group is group]
            freed: list[tuple[int, int]] = []
            try:
                for victim in on_group:
                    for node, size in victim.bound:
                        group.give(node, size)
                        freed.append((node, size))
                    chosen.append(victim)
                    if group.fits_all(job.units):
                        return chosen
            finally:
                for node, size in freed:
                    group.take(node, size)
            chosen = []
        return None

    def _pending_heads(self, q: VQueue) -> list[Job]:
        return [head[3] for head in self._heads(q, set())]

    def _preempt(self, t: float) -> None:
        for q in sorted(self.queues.values(), key=lambda x: x.idx):
            for job in self._pending_heads(q):
                if self._room(job)[0] or not job.cand_groups:
                    continue
                victims = sorted((w for w in q.admitted if w.state == RUNNING and w.priority < job.priority),
                                 key=lambda w: (w.priority, -w.start_t, w.seq))
                chosen = self._victims_make_room(job, victims)
                if chosen:
                    for victim in chosen:
                        self.sim.evict(victim, "VolcanoPreempt", t)
                    return

    def _reclaim(self, t: float) -> None:
        for q in sorted(self.queues.values(), key=lambda x: (self._share(x), x.idx)):
            for job in self._pending_heads(q):
                resource = job.resource
                if q.allocated.get(resource, 0) + job.units > q.deserved.get(resource, 0):
                    continue
                if self._room(job)[0] or not job.cand_groups:
                    continue
                victims = []
                for other in self.queues.values():
                    if other is q or not other.spec.reclaimable:
                        continue
                    spare = other.allocated.get(resource, 0) - other.deserved.get(resource, 0)
                    running = (w for w in other.admitted if w.state in (ADMITTED, RUNNING) and w.resource == resource)
                    for w in sorted(running, key=lambda w: (w.priority, -(w.start_t or w.admit_t), w.seq)):
                        if spare <= 0:
                            break
                        victims.append(w)
                        spare -= w.units
                chosen = self._victims_make_room(job, victims)
                if chosen:
                    for victim in chosen:
                        self.sim.evict(victim, "VolcanoReclaim", t)
                    return

    def never_admittable(self) -> list[Blocked]:
        return self.blocked

    def limits(self, q: VQueue, job: Job) -> tuple[Limit, ...] | None:
        """What keeps the job from ever being bound, or None when some session could bind it: the queue's
        capability, the most its deserved share can ever be, or no node group of its pools holding it."""
        res, spec = job.resource, q.spec
        capability = (spec.capability or {}).get(res)
        if capability is not None and job.units > capability:
            return (Limit(ANY_FLAVOR, "quota", capability,
                          f"Volcano Queue {q.name} capability allows at most {capability} {res}"),)
        if self.proportion:
            # proportion's allocatable keeps a job within its queue's deserved share, which water-filling raises at
            # most to the cluster's total (capped by capability, at least the guarantee). The capacity plugin checks
            # capability alone at allocation.
            total = self.total.get(res, 0)
            most = max(min(total, capability if capability is not None else total), spec.guarantee.get(res, 0))
            if self._first(job) > most:
                return (Limit(ANY_FLAVOR, "quota", most,
                              f"Volcano Queue {q.name} deserves at most {most} {res} (proportion plugin: the "
                              f"cluster's {total}, capability {'none' if capability is None else capability})"),)
        if not self.sim.groups:
            return None  # quota only: no nodes to fit
        if not job.cand_groups:
            where = f" on {', '.join(job.pools)}" if job.pools else ""
            return (Limit(ANY_FLAVOR, "pool", None, f"no GPU pool offers {res}{where}"),)
        offers = {g.pool: g.nodes * (g.cap // pods_for(job.units, g.cap)[0]) * pods_for(job.units, g.cap)[0]
                  for g in job.cand_groups}
        if job.units > max(offers.values()):
            # Every pod of a job is bound into one pool (one node group), as _room places it.
            return tuple(Limit(pool, "pool", offer, f"{pool}: pool {pool} holds at most {offer} {res} in its nodes "
                                                    "(maxNodes, or --nodes); a job's pods run in one pool")
                         for pool, offer in offers.items())
        return None

    def check(self) -> None:
        for q in self.queues.values():
            for resource, used in q.allocated.items():
                capability = (q.spec.capability or {}).get(resource)
                if used < 0 or (capability is not None and used > capability):
                    raise AssertionError(f"Volcano queue {q.name}: {used} {resource} outside [0, capability]")
