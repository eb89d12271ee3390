"""Topology-aware scheduling (TAS) at admission: which nodes of a TAS flavor's pool a gang's pods get.

Mirrors Kueue v0.19.2's `pkg/cache/scheduler/tas_flavor_snapshot.go` (findTopologyAssignment) on the levels of the
flavor's planned Topology, broadest first, hosts last (model.TasRequest). The plan names each level's node label
but not how many nodes share one value, so the domains are stated what-ifs: consecutive nodes, `--topology-blocks`
per block (the level above the hosts), `--topology-levels` for each level above, one domain over the pool where
none is given.

- findLevelWithFitDomains, at the requested level: the domains sorted by free pods (BestFit, the default profile:
  most first; LeastFreeCapacity: fewest first, for `implied`). If the first holds the gang, the first of the
  smallest that does is chosen. Else `required` does not fit; `preferred` tries the level above, and at the top
  spreads over its domains, largest first, best fit for the remainder. `implied` (no annotation; unconstrained at
  the host level with TASProfileMixed, beta and on in v0.19) takes the fullest host that holds the gang, else hosts
  from the fullest up.
- Then level by level down to the hosts, the children of every chosen domain are pooled, sorted the same way and
  taken largest first with best fit for the remainder (updateCountsToMinimumGeneric): pods go where the chosen
  domains have most room, not in proportion to what each was given above.

Kueue admits with this assignment, so a TAS gang never half-starts. Slices, leaders and balanced placement (alpha)
are not modelled.
"""
from __future__ import annotations

from gpu_platform.simulator.model import TasRequest


def domain_spans(request: TasRequest, nodes: int) -> list[int]:
    """Nodes per domain at each level, a level of one domain over the pool spanning a whole number of the level
    below, so domains nest."""
    spans = [1] * len(request.spans)
    for i in range(len(spans) - 2, -1, -1):
        below = spans[i + 1]
        spans[i] = request.spans[i] or -(-nodes // below) * below
    return spans


def _best_fit(caps: list[int], order: list[int], need: int) -> int:
    """findBestFitDomain: the first of the smallest domains in `order` that hold `need`, else the first."""
    best = None
    for d in order:
        if caps[d] >= need and (best is None or caps[d] < caps[best]):
            best = d
    return order[0] if best is None else best


def _order(caps: list[int], domains, least_free: bool) -> list[int]:
    """sortedDomains: most free pods first (BestFit) or fewest (LeastFreeCapacity), then domain order."""
    return sorted(domains, key=(lambda d: (caps[d], d)) if least_free else (lambda d: (-caps[d], d)))


def _fit_level(caps: list[list[int]], level: int, count: int, mode: str) -> tuple[int, list[int]] | None:
    """findLevelWithFitDomains: (level, domains) that hold the gang, or None."""
    least_free = mode == "implied"
    row = caps[level]
    order = _order(row, range(len(row)), least_free)
    if least_free:
        single = next((d for d in order if row[d] >= count), None)
        if single is not None:
            return level, [single]
    elif row[order[0]] >= count:
        return level, [_best_fit(row, order, count)]
    elif mode == "required":
        return None
    elif level > 0:
        return _fit_level(caps, level - 1, count, mode)
    chosen, need = [], count
    for i, d in enumerate(order):
        if need <= 0:
            break
        if not least_free and row[d] >= need:
            d = _best_fit(row, order[i:], need)
        chosen.append(d)
        need -= row[d]
    return (level, chosen) if need <= 0 else None


def _minimum(row: list[int], order: list[int], count: int, least_free: bool) -> list[tuple[int, int]]:
    """updateCountsToMinimumGeneric: (domain, pods) taking each in order, best fit for the last."""
    taken, need = [], count
    for i, d in enumerate(order):
        if not least_free and row[d] >= need:
            d = _best_fit(row, order[i:], need)
        if row[d] >= need:
            taken.append((d, need))
            return taken
        taken.append((d, row[d]))
        need -= row[d]
    raise AssertionError("TAS: the chosen domains hold fewer pods than they were found to")


def assign(free: list[int], size: int, count: int, request: TasRequest) -> list[int] | None:
    """The node of each of `count` pods of `size` units, on nodes with `free` units each; None if TAS finds none."""
    if not free:
        return None
    n = len(free)
    spans = domain_spans(request, n)
    per_node = [f // size for f in free]
    caps = [per_node]  # free pods per domain, hosts first, then each level up
    for i in range(len(spans) - 2, -1, -1):
        ratio = spans[i] // spans[i + 1]
        below = caps[0]
        caps.insert(0, [sum(below[k:k + ratio]) for k in range(0, len(below), ratio)])
    found = _fit_level(caps, request.level, count, request.mode)
    if found is None:
        return None
    level, chosen = found
    least_free = request.mode == "implied"
    taken = _minimum(caps[level], chosen, count, least_free)
    for lv in range(level + 1, len(spans)):
        ratio = spans[lv - 1] // spans[lv]
        width = len(caps[lv])
        children = [c for d, _ in taken for c in range(d * ratio, min((d + 1) * ratio, width))]
        taken = _minimum(caps[lv], _order(caps[lv], children, least_free), count, least_free)
    nodes = []
    for node, pods in sorted(taken):
        nodes += [node] * pods
    return nodes


def largest_domain(nodes: int, per_node_pods: int, request: TasRequest) -> int:
    """The most pods one admission can ever place: a domain of the requested level's worth when required, else
    the whole pool."""
    if request.mode == "required":
        return min(nodes, domain_spans(request, nodes)[request.level]) * per_node_pods
    return nodes * per_node_pods
