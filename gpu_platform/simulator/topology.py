"""Topology-aware placement: how many gangs of a trace land in one network block, with Kueue TAS and without.

A pool whose ResourceFlavor names a Kueue `Topology` (`topologyName`, from `gpuPools[].topology`) is split into
blocks of `block_size` consecutive nodes: the simulator has no real block labels, so the size is a what-if knob
(`--topology-blocks POOL=N`, default DEFAULT_BLOCK). The same gangs are then placed three ways on those nodes,
first come first served with later jobs passing a head that does not fit (BestEffortFIFO), each gang all at once:

- `none`: kube-scheduler alone, each pod on the emptiest node (LeastAllocated scoring), blocks ignored;
- `preferred` (`kueue.x-k8s.io/podset-preferred-topology`): the tightest block that holds the whole gang, else the
  fewest blocks, largest free first;
- `required` (`kueue.x-k8s.io/podset-required-topology`): the tightest block that holds the whole gang, else wait.

Within a block, pods fill the fullest nodes that fit, as Kueue's TAS packs a domain. The queue model (quotas,
cohorts, preemption) is not replayed here: this isolates what placement alone does to locality and waiting.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from gpu_platform.simulator.engine import pods_for
from gpu_platform.simulator.errors import SimulationError
from gpu_platform.simulator.model import RESOURCE_FLAVOR, TAS_DOMAIN_NODES, Model, _meta, _plan_json, _spec
from gpu_platform.simulator.traces import TraceJob

DEFAULT_BLOCK = TAS_DOMAIN_NODES  # nodes per block when none is given (the replay's TAS uses the same)
POLICIES = ("none", "preferred", "required")


@dataclass(frozen=True)
class TasPool:
    """A pool with a TAS flavor, its nodes grouped into blocks."""

    name: str
    nodes: int
    per_node: int  # GPU units one node advertises
    block_size: int
    topology: str

    def block(self, node: int) -> int:
        return node // self.block_size

    @property
    def blocks(self) -> list[range]:
        return [range(start, min(start + self.block_size, self.nodes)) for start in range(0, self.nodes, self.block_size)]


@dataclass(frozen=True)
class Placement:
    """What one policy did to one pool's gangs."""

    policy: str
    jobs: int
    placed: int
    gangs: int  # placed jobs with pods on more than one node
    one_block: int  # of those, with every pod in one block
    mean_blocks: float  # blocks a multi-node gang spans, on average
    mean_wait_s: float
    p95_wait_s: float
    makespan_s: float
    never_fit: int  # jobs larger than the pool

    @property
    def one_block_fraction(self) -> float:
        return self.one_block / self.gangs if self.gangs else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "jobs": self.jobs, "placed": self.placed, "gangs": self.gangs,
                "one_block": self.one_block, "one_block_fraction": round(self.one_block_fraction, 4),
                "mean_blocks": round(self.mean_blocks, 3), "mean_wait_s": round(self.mean_wait_s, 1),
                "p95_wait_s": round(self.p95_wait_s, 1), "makespan_s": round(self.makespan_s, 1),
                "never_fit": self.never_fit}


def tas_pools(plan: Any, model: Model, block_sizes: dict[str, int] | None = None) -> dict[str, TasPool]:
    """The model's pools whose planned ResourceFlavor has a `topologyName`, with their block sizes."""
    block_sizes = dict(block_sizes or {})
    data, _ = _plan_json(plan)
    found: dict[str, TasPool] = {}
    for res in data.get("resources") or []:
        if res.get("type") != RESOURCE_FLAVOR or "topologyName" not in _spec(res):
            continue
        flavor = model.flavors.get(_meta(res).get("name"))
        pool = model.pools.get(flavor.pool) if flavor and flavor.pool else None
        if pool is None:
            continue
        size = block_sizes.pop(pool.name, DEFAULT_BLOCK)
        if size < 1:
            raise SimulationError(f"--topology-blocks {pool.name}={size}: a block holds at least one node")
        found[pool.name] = TasPool(pool.name, pool.nodes, max(pool.per_node.values()), size, _spec(res)["topologyName"])
    if block_sizes:
        raise SimulationError(f"--topology-blocks names pool(s) without a topology-aware flavor: "
                              f"{', '.join(sorted(block_sizes))}; such pools: {', '.join(found) or '(none)'}")
    return found


class _Nodes:
    def __init__(self, pool: TasPool):
        self.pool = pool
        self.free = [pool.per_node] * pool.nodes

    def _spread(self, pods: list[int]) -> list[int] | None:
        free = list(self.free)
        chosen = []
        for size in pods:
            node = max(range(len(free)), key=lambda n: (free[n], -n), default=-1)
            if node < 0 or free[node] < size:
                return None
            free[node] -= size
            chosen.append(node)
        return chosen

    def _pack(self, pods: list[int], nodes: list[int], free: list[int]) -> list[int]:
        """Place as many pods as fit on `nodes`, fullest first; the nodes used, one per placed pod."""
        chosen = []
        for size in pods:
            fits = [n for n in nodes if free[n] >= size]
            if not fits:
                break
            node = min(fits, key=lambda n: (free[n], n))
            free[node] -= size
            chosen.append(node)
        return chosen

    def _room(self, block: range, size: int) -> int:
        return sum(self.free[n] // size for n in block)

    def _topology(self, pods: list[int], required: bool) -> list[int] | None:
        size, count = pods[0], len(pods)
        rooms = [(self._room(b, size), i) for i, b in enumerate(self.pool.blocks)]
        fitting = [(room, i) for room, i in rooms if room >= count]
        if fitting:
            _, best = min(fitting)  # the tightest block that holds the gang leaves big blocks for big gangs
            return self._pack(pods, list(self.pool.blocks[best]), list(self.free))
        if required or sum(room for room, _ in rooms) < count:
            return None
        free, chosen = list(self.free), []
        for _, i in sorted(rooms, key=lambda r: (-r[0], r[1])):
            chosen += self._pack(pods[len(chosen):], list(self.pool.blocks[i]), free)
            if len(chosen) == count:
                return chosen
        return None

    def try_place(self, pods: list[int], policy: str) -> list[int] | None:
        chosen = self._spread(pods) if policy == "none" else self._topology(pods, policy == "required")
        if chosen is not None:
            for node, size in zip(chosen, pods):
                self.free[node] -= size
        return chosen

    def release(self, nodes: list[int], pods: list[int]) -> None:
        for node, size in zip(nodes, pods):
            self.free[node] += size


def place(pool: TasPool, jobs: list[TraceJob], policy: str) -> Placement:
    """Replay `jobs` on `pool` under one policy."""
    if policy not in POLICIES:
        raise SimulationError(f"unknown topology policy {policy!r}; allowed: {', '.join(POLICIES)}")
    nodes = _Nodes(pool)
    capacity = pool.nodes * pool.per_node
    order = sorted(jobs, key=lambda j: (j.submit_s, j.job_id))
    fitting = [j for j in order if j.units <= capacity]
    arrivals = [(j.submit_s, 0, i) for i, j in enumerate(fitting)]
    heapq.heapify(arrivals)
    events = arrivals  # (time, kind 0 arrival / -1 finish first, index)
    pending: list[int] = []
    running: dict[int, tuple[list[int], list[int]]] = {}
    waits, spans, end = [], [], 0.0
    one_block = 0
    while events:
        t, kind, i = heapq.heappop(events)
        if kind < 0:
            nodes.release(*running.pop(i))
        else:
            pending.append(i)
        if events and events[0][0] == t:
            continue  # everything due now first, then one placement pass
        still = []
        for k in pending:
            job = fitting[k]
            pods = pods_for(job.units, pool.per_node)
            chosen = nodes.try_place(pods, policy)
            if chosen is None:
                still.append(k)
                continue
            running[k] = (chosen, pods)
            waits.append(t - job.submit_s)
            end = max(end, t + job.duration_s)
            heapq.heappush(events, (t + job.duration_s, -1, k))
            if len(set(chosen)) > 1:
                blocks = {pool.block(n) for n in chosen}
                spans.append(len(blocks))
                one_block += len(blocks) == 1
        pending = still
    waits.sort()
    p95 = waits[min(len(waits) - 1, int(0.95 * len(waits)))] if waits else 0.0
    return Placement(policy=policy, jobs=len(order), placed=len(waits), gangs=len(spans), one_block=one_block,
                     mean_blocks=sum(spans) / len(spans) if spans else 0.0,
                     mean_wait_s=sum(waits) / len(waits) if waits else 0.0, p95_wait_s=p95, makespan_s=end,
                     never_fit=len(order) - len(fitting))


def jobs_for(pool: str, trace: list[TraceJob], default_pool: str | None, first: bool) -> list[TraceJob]:
    """The trace jobs that run on `pool`: those naming it, and unnamed ones when it is the default (or the first
    TAS pool when no default is given)."""
    return [j for j in trace
            if j.pool == pool or (j.pool is None and (default_pool == pool or (default_pool is None and first)))]


def compare(pools: dict[str, TasPool], trace: list[TraceJob], default_pool: str | None = None) -> list[dict[str, Any]]:
    """Per TAS pool: its blocks and every policy's placement of the jobs it runs."""
    rows = []
    for index, pool in enumerate(pools.values()):
        jobs = jobs_for(pool.name, trace, default_pool, index == 0)
        rows.append({"pool": pool.name, "topology": pool.topology, "nodes": pool.nodes,
                     "block_size": pool.block_size, "blocks": len(pool.blocks),
                     "policies": [place(pool, jobs, policy).as_dict() for policy in POLICIES]})
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    """The comparison as a text table."""
    if not rows:
        return "Topology-aware placement: no pool has a topology-aware flavor (gpuPools[].topology)."
    lines = ["Topology-aware placement (gangs on one block; see docs/simulator.md)"]
    head = f"  {'policy':<10} {'jobs':>5} {'placed':>6} {'gangs':>6} {'1 block':>8} {'blocks/gang':>11} " \
           f"{'mean wait s':>11} {'p95 wait s':>10} {'makespan s':>10}"
    for row in rows:
        lines.append(f"pool {row['pool']} ({row['nodes']} nodes in {row['blocks']} blocks of {row['block_size']}, "
                     f"Topology {row['topology']})")
        lines.append(head)
        for p in row["policies"]:
            lines.append(f"  {p['policy']:<10} {p['jobs']:>5} {p['placed']:>6} {p['gangs']:>6} "
                         f"{p['one_block_fraction']:>8.1%} {p['mean_blocks']:>11.2f} {p['mean_wait_s']:>11.1f} "
                         f"{p['p95_wait_s']:>10.1f} {p['makespan_s']:>10.1f}")
        never = row["policies"][0]["never_fit"]
        if never:
            lines.append(f"  {never} job(s) larger than the pool were left out")
    return "\n".join(lines)
