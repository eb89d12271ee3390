"""How much of each GPU pool's capacity at maxNodes the planned queues let any team use (GPU019, plan summary).

Read from the plan, never the config: the GpuNodePool components (maxNodes, what a node advertises, labels) and
the scheduler's queue objects. What the queues allow differs by scheduler:

- Kueue admits a workload only within quota: a ClusterQueue's own nominal quota, or quota its cohort's members
  lend and do not use, up to its borrowingLimit. Borrowing moves unused nominal quota between teams; it never
  adds any. So on a pool at most the sum of the nominal quotas of the flavors selecting it is ever admitted.
- Volcano's capacity plugin lets a Queue grow past `deserved` into idle cluster capacity up to its `capability`
  (nominal plus borrowing limit), so a pool is reachable up to what the queues that may use it can hold. Which
  queues may use a pool comes from the GpuPoolAdmission component's team table; without one, every queue may.
- KAI Scheduler lets a leaf Queue take idle GPUs up to its `resources.gpu.limit` (-1: no cap), counted in whole
  GPUs over every pool, so a pool is reachable up to the limits of the leaf queues that may use it, each capped at
  the pool (parent queues only divide resources among their children; they admit nothing themselves).

Figures are upper bounds (a flavor selecting several pools counts toward each; a queue's capability is counted
on every pool it may use), so what is reported unreachable really is. What cannot be read raises Undecidable.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable

from policies import quantity
from policies.props import Undecidable, get, items, mapping
from policies.shapes import INSTANCE_TYPE_LABELS, POOL_COMPONENT
from policies.tenancy import DISCOVERED

CLUSTER_QUEUE = ":ClusterQueue"
RESOURCE_FLAVOR = ":ResourceFlavor"
COHORT = ":Cohort"
KUEUE_GROUP = "kubernetes:kueue.x-k8s.io/"
VOLCANO_QUEUE = "kubernetes:scheduling.volcano.sh/v1beta1:Queue"
KAI_QUEUE = "kubernetes:scheduling.run.ai/v2:Queue"
KAI_UNLIMITED = -1
POOL_ADMISSION = "gpu-platform:tenancy:GpuPoolAdmission"
GPU_RESOURCE = "nvidia.com/gpu"
SHARED_UNITS = {"mps": "MPS replicas", "time-slicing": "time-slicing replicas"}


@dataclass(frozen=True)
class PoolReach:
    """One pool's capacity at maxNodes and the most of it the queues can ever use, in the pool's quota units."""

    pool: str
    unit: str  # GPUs, MIG slices, time-slicing replicas, ...
    capacity: int
    reachable: int
    nominal: int | None  # Kueue: the nominal quotas on the pool added up; None under Volcano and KAI (not per pool)

    @property
    def unreachable(self) -> int:
        return self.capacity - self.reachable

    @property
    def oversubscribed(self) -> int:
        return max(0, (self.nominal or 0) - self.capacity)


@dataclass(frozen=True)
class _Pool:
    name: str
    unit: str
    units: int  # capacity at maxNodes in quota units
    gpus: int  # physical GPUs at maxNodes
    capacity: dict[str, int]  # per advertised resource at maxNodes
    labels: dict[str, set[str]]

    def to_units(self, resource: str, amount: int) -> int:
        """A resource amount in quota units: a mixed MIG pool's quota counts GPUs' worth of its layout."""
        return amount * self.units // self.capacity[resource]


def _number(value: Any, where: str) -> int:
    try:
        return int(quantity.parse(value))
    except quantity.QuantityError as exc:
        raise Undecidable(f"{where}: {exc}") from None


def quota_unit(mode: str, resources: Mapping[str, int]) -> str:
    """What a quota on a pool counts, by its sharing mode and the resources its nodes advertise."""
    if mode == "mig":
        return "MIG slices" if set(resources) == {GPU_RESOURCE} else "GPUs' worth of MIG slices"
    return SHARED_UNITS.get(mode, "GPUs")


def _pool(props: Mapping) -> _Pool:
    name = str(get(props, "poolName", ""))
    max_nodes = _number(get(props, "maxNodes"), f"pool {name} maxNodes")
    per_node = {str(r): _number(n, f"pool {name} advertised.{r}") for r, n in mapping(get(props, "advertised")).items()}
    if not per_node or not all(per_node.values()):
        raise Undecidable(f"pool {name}: the plan does not say which GPU resources its nodes advertise")
    capacity = {r: n * max_nodes for r, n in per_node.items()}
    gpus = _number(get(props, "gpusPerNode"), f"pool {name} gpusPerNode") * max_nodes
    units = next(iter(capacity.values())) if len(capacity) == 1 else gpus
    labels = {str(k): {str(v)} for k, v in mapping(get(props, "labels")).items()}
    for key in INSTANCE_TYPE_LABELS:
        labels.setdefault(key, set()).add(str(get(props, "instanceType", "")))
    return _Pool(name, quota_unit(str(get(props, "sharing.mode", "none")), per_node), units, gpus, capacity, labels)


def _selected(flavor: str, node_labels: Mapping, pools: list[_Pool]) -> list[_Pool]:
    """The pools a ResourceFlavor's nodeLabels select (every pool without any); a label no pool declares and
    discovery does not add could be on any node, so it cannot be decided."""
    selected = []
    for pool in pools:
        if all(str(v) in pool.labels.get(str(k), set()) or str(k).startswith(DISCOVERED)
               for k, v in node_labels.items()):
            selected.append(pool)
    declared = {key for pool in pools for key in pool.labels}
    unread = [str(k) for k in node_labels if str(k) not in declared and not str(k).startswith(DISCOVERED)]
    if unread:
        raise Undecidable(f"ResourceFlavor {flavor} selects nodes by {', '.join(unread)}, which no planned pool "
                          "declares, so which pools its quota reaches cannot be read")
    return selected


def _kueue(resources: list[tuple[str, Mapping]], pools: list[_Pool]) -> dict[str, dict[str, int]]:
    """Per pool and resource: the nominal quotas of every flavor selecting the pool, added up."""
    for type_, props in resources:
        if type_.startswith(KUEUE_GROUP) and type_.endswith(COHORT) and (
                get(props, "spec.resourceGroups") or get(props, "spec.parentName")):
            raise Undecidable(f"Cohort {get(props, 'metadata.name')} has quota or a parent of its own: "
                              "hierarchical cohorts are not read")
    flavors = {str(get(props, "metadata.name")): mapping(get(props, "spec.nodeLabels"))
               for type_, props in resources if type_.startswith(KUEUE_GROUP) and type_.endswith(RESOURCE_FLAVOR)}
    nominal: dict[str, dict[str, int]] = {pool.name: {} for pool in pools}
    for type_, props in resources:
        if not (type_.startswith(KUEUE_GROUP) and type_.endswith(CLUSTER_QUEUE)):
            continue
        queue = get(props, "metadata.name")
        for group in items(get(props, "spec.resourceGroups")):
            for flavor in items(get(group, "flavors")):
                name = str(get(flavor, "name"))
                if name not in flavors:
                    raise Undecidable(f"ClusterQueue {queue} uses ResourceFlavor {name}, which is not in the plan")
                for pool in _selected(name, flavors[name], pools):
                    for entry in items(get(flavor, "resources")):
                        resource = str(get(entry, "name"))
                        if resource in pool.capacity:
                            amount = _number(get(entry, "nominalQuota", 0), f"ClusterQueue {queue} {name} {resource}")
                            nominal[pool.name][resource] = nominal[pool.name].get(resource, 0) + amount
    return nominal


def _volcano(resources: list[tuple[str, Mapping]], pools: list[_Pool]) -> dict[str, dict[str, int]]:
    """Per pool and resource: the capabilities of every queue that may use the pool, each capped at the pool."""
    tables = [mapping(get(props, "teamPools")) for type_, props in resources if type_ == POOL_ADMISSION]
    reach: dict[str, dict[str, int]] = {pool.name: {} for pool in pools}
    for type_, props in resources:
        if type_ != VOLCANO_QUEUE:
            continue
        queue = str(get(props, "metadata.name"))
        allowed = {str(p) for table in tables for p in items(table.get(queue))} if tables else None
        capability = mapping(get(props, "spec.capability"))
        for pool in pools:
            if allowed is not None and pool.name not in allowed:
                continue
            for resource, capacity in pool.capacity.items():
                # A resource the queue sets no capability for is not capped by it.
                cap = capacity if resource not in capability else \
                    min(capacity, _number(capability[resource], f"Queue {queue} capability.{resource}"))
                reach[pool.name][resource] = reach[pool.name].get(resource, 0) + cap
    return reach


def _kai(resources: list[tuple[str, Mapping]], pools: list[_Pool]) -> dict[str, dict[str, int]]:
    """Per pool and resource: the GPU limits of every leaf queue that may use the pool, each capped at the pool."""
    tables = [mapping(get(props, "teamPools")) for type_, props in resources if type_ == POOL_ADMISSION]
    queues = {str(get(props, "metadata.name")): props for type_, props in resources if type_ == KAI_QUEUE}
    parents = {str(get(props, "spec.parentQueue")) for props in queues.values() if get(props, "spec.parentQueue")}
    reach: dict[str, dict[str, int]] = {pool.name: {} for pool in pools}
    for queue, props in queues.items():
        if queue in parents:
            continue
        limit = get(props, "spec.resources.gpu.limit")
        if limit is None:  # KAI's docs say both "no additional resources" and "-1" for it
            raise Undecidable(f"KAI Queue {queue} sets no resources.gpu.limit, whose meaning KAI's docs disagree on")
        try:
            gpus = float(quantity.parse(limit))
        except quantity.QuantityError as exc:
            raise Undecidable(f"KAI Queue {queue} resources.gpu.limit: {exc}") from None
        allowed = {str(p) for table in tables for p in items(table.get(queue))} if tables else None
        for pool in pools:
            if allowed is not None and pool.name not in allowed:
                continue
            share = 1.0 if gpus == KAI_UNLIMITED else min(1.0, gpus / pool.gpus)
            for resource, capacity in pool.capacity.items():
                reach[pool.name][resource] = reach[pool.name].get(resource, 0) + int(capacity * share)
    return reach


def scheduler(resources: Iterable[tuple[str, Mapping]]) -> str | None:
    """`kueue`, `volcano` or `kai` by the queue objects planned; None when there are none."""
    types = {type_ for type_, _ in resources}
    if any(t.startswith(KUEUE_GROUP) and t.endswith(CLUSTER_QUEUE) for t in types):
        return "kueue"
    if VOLCANO_QUEUE in types:
        return "volcano"
    return "kai" if KAI_QUEUE in types else None


def pool_reach(resources: Iterable[tuple[str, Mapping]]) -> dict[str, PoolReach]:
    """Every GpuNodePool's reach by pool name, from (type, properties) pairs of the plan; empty without queues."""
    resources = list(resources)
    kind = scheduler(resources)
    if kind is None:
        return {}
    pools = [_pool(props) for type_, props in resources if type_ == POOL_COMPONENT]
    totals = {"kueue": _kueue, "volcano": _volcano, "kai": _kai}[kind](resources, pools)
    reach = {}
    for pool in pools:
        got = totals[pool.name]
        reachable = min(pool.to_units(r, min(got.get(r, 0), capacity)) for r, capacity in pool.capacity.items())
        nominal = max(pool.to_units(r, got.get(r, 0)) for r in pool.capacity) if kind == "kueue" else None
        reach[pool.name] = PoolReach(pool.name, pool.unit, pool.units, reachable, nominal)
    return reach
