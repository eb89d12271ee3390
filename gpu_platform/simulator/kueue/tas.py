"""Topology-aware scheduling (TAS) at admission: which nodes of a TAS flavor's pool a gang's pods get.

Mirrors Kueue v0.19.2's `pkg/cache/scheduler/tas_flavor_snapshot.go` (findTopologyAssignment) for a two-level
Topology: domains ("blocks") of `domain_nodes` consecutive nodes, then the hosts. The planned Topologies name the
cloud's block/rack labels, but nothing in the plan says how many nodes share a label value, so the block size is a
stated what-if (Model.tas_domain). Levels above the block are not modelled: a `preferred` gang that fits no block
spreads over blocks as Kueue does at its top level.

- `required`: the block holding the most pods is checked; if it cannot hold the gang the workload does not fit.
  Otherwise the best fit (fewest free pods that still hold the gang) is chosen: BestFit, the default profile.
- `preferred`: the same, but a gang no block holds is spread over blocks, largest free first and best fit for the
  remainder (findLevelWithFitDomains' fallback at the top level).
- `implied` (no TAS annotation on a ClusterQueue of TAS flavors only): unconstrained at the host level with the
  LeastFreeCapacity profile (TASProfileMixed, beta and on in v0.19): the fullest node that holds the whole gang,
  else nodes from the fullest up.

Inside the chosen blocks, pods go to hosts largest free first with best fit for the remainder
(updateCountsToMinimumGeneric). Kueue admits with this assignment, so a TAS gang never half-starts.
"""
from __future__ import annotations


def _take(caps: list[tuple[int, int]], need: int) -> list[tuple[int, int]] | None:
    """BestFit over domains given as (pods it holds, index): largest first, and once one domain can hold the rest,
    the first of the smallest that can. Returns (index, pods) per domain used, or None if they all hold too few."""
    order = sorted(caps, key=lambda c: (-c[0], c[1]))
    taken = []
    for i, (cap, index) in enumerate(order):
        if cap >= need:
            best = min((c for c in order[i:] if c[0] >= need), key=lambda c: c[0])  # min keeps the first of ties
            taken.append((best[1], need))
            return taken
        if cap <= 0:
            return None
        taken.append((index, cap))
        need -= cap
    return None


def assign(free: list[int], size: int, count: int, domain_nodes: int, request: str) -> list[int] | None:
    """The node of each of `count` pods of `size` units, on nodes with `free` units each; None if TAS finds none."""
    per_node = [f // size for f in free]
    if not free:
        return None
    if request == "implied":
        # LeastFreeCapacity: fullest first, whole gang on the first node that holds it, else fill from the fullest.
        order = sorted(range(len(free)), key=lambda n: (per_node[n], n))
        single = next((n for n in order if per_node[n] >= count), None)
        if single is not None:
            return [single] * count
        nodes, need = [], count
        for n in order:
            take = min(per_node[n], need)
            nodes += [n] * take
            need -= take
            if not need:
                return nodes
        return None
    blocks = [range(start, min(start + domain_nodes, len(free))) for start in range(0, len(free), domain_nodes)]
    room = [(sum(per_node[n] for n in block), b) for b, block in enumerate(blocks)]
    if request == "required" and max(room)[0] < count:
        return None
    chosen = _take(room, count)
    if chosen is None:
        return None
    nodes = []
    for b, pods in chosen:
        for n, k in _take([(per_node[n], n) for n in blocks[b]], pods):
            nodes += [n] * k
    return nodes


def largest_domain(nodes: int, per_node_pods: int, domain_nodes: int, request: str) -> int:
    """The most pods one admission can ever place: a block's worth when required, else the whole pool."""
    if request == "required":
        return min(nodes, domain_nodes) * per_node_pods
    return nodes * per_node_pods
