"""The cluster and queue model a simulation runs against, read from a stack's planned objects.

Everything comes from what `pulumi up` would create: GPU pool capacity from the `GpuNodePool` components, queues
from the Kueue ClusterQueues (or Volcano Queues), priorities from the WorkloadPriorityClasses, gang settings from
the scheduler's Helm release. Nothing is re-derived from the stack config, so the simulator sees the same numbers
the cluster would.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from components.scheduling.kinds import KINDS, SchedulerKind
from gpu_platform.engine.plan_file import PlanFileError, check_plan_json, read_plan_json
from gpu_platform.simulator.errors import SimulationError
from policies.quantity import QuantityError, parse as parse_quantity

KUEUE_API = "kubernetes:kueue.x-k8s.io/v1beta2:"
CLUSTER_QUEUE = KUEUE_API + "ClusterQueue"
RESOURCE_FLAVOR = KUEUE_API + "ResourceFlavor"
TOPOLOGY = KUEUE_API + "Topology"
WORKLOAD_PRIORITY_CLASS = KUEUE_API + "WorkloadPriorityClass"
LOCAL_QUEUE = KUEUE_API + "LocalQueue"
VOLCANO_QUEUE = "kubernetes:scheduling.volcano.sh/v1beta1:Queue"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
GPU_NODE_POOL = "gpu-platform:cluster:GpuNodePool"
NAMESPACE = "kubernetes:core/v1:Namespace"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"

GPU = "nvidia.com/gpu"
ANY_FLAVOR = "*"  # Volcano queues count resources by name across every pool
UNLIMITED = None
# Nodes per TAS domain (the block under one network label value) when --topology-blocks gives none: the plan names
# the cloud's block labels but not how many nodes share one, so this is a what-if default (a few 8-GPU hosts behind
# one leaf).
TAS_DOMAIN_NODES = 4
HOSTS_TOPOLOGY = "gpu-hosts"
HOSTNAME = "kubernetes.io/hostname"
TAS_REQUESTS = ("required", "preferred", "implied")  # the topology annotations kueue/tas.py places by
# A flavor naming a Topology the plan does not hold (hand-made plans): one block level above the hosts.
BLOCK_AND_HOSTS = ("block", HOSTNAME)


class TasRequest(NamedTuple):
    """How Kueue's TAS places a flavor's gangs: the Topology's `levels` (broadest first, hosts last), the nodes one
    domain of each level spans (`spans`, None: one domain over the pool), the requested level's index and the
    annotation (`mode`: required, preferred, or implied when the job carries none)."""

    levels: tuple[str, ...]
    spans: tuple[int | None, ...]
    level: int
    mode: str


@dataclass(frozen=True)
class Pool:
    """A GPU node pool: how many nodes, and what each node advertises."""

    name: str
    nodes: int
    per_node: dict[str, int]
    gpus_per_node: int
    labels: dict[str, str] = field(default_factory=dict)

    def gpu_equivalent(self, resource: str) -> float:
        """Whole GPUs one unit of `resource` stands for (a MIG slice or a shared replica is a fraction)."""
        if len(self.per_node) == 1:
            return self.gpus_per_node / self.per_node[resource]
        # Mixed MIG: weigh each profile by its compute slices (`mig-3g.40gb` is 3 of them).
        slices = {name: _mig_slices(name) for name in self.per_node}
        total = sum(count * slices[name] for name, count in self.per_node.items())
        return slices[resource] * self.gpus_per_node / total


def _mig_slices(resource: str) -> int:
    match = re.search(r"mig-(\d+)g", resource)
    return int(match.group(1)) if match else 1


@dataclass(frozen=True)
class Flavor:
    """A Kueue ResourceFlavor and the pool its nodeLabels select; no pool means quota only, no node packing."""

    name: str
    pool: str | None
    topology: str | None = None  # the Kueue Topology its `topologyName` points at: TAS placement at admission
    levels: tuple[str, ...] = ()  # that Topology's node labels, broadest first, as planned


@dataclass(frozen=True)
class Quota:
    """One ClusterQueue's quota for one (flavor, resource)."""

    nominal: int
    borrowing_limit: int | None = UNLIMITED
    lending_limit: int | None = UNLIMITED

    @property
    def guaranteed(self) -> int:
        """What is never lent to the cohort."""
        return self.nominal - self.lending_limit if self.lending_limit is not None else 0


@dataclass(frozen=True)
class Queue:
    """A team's queue: a Kueue ClusterQueue or a Volcano Queue, in one shape.

    `quotas` is keyed by (flavor, resource) in the queue's flavor order; Volcano queues use ANY_FLAVOR.
    """

    name: str
    cohort: str | None
    quotas: dict[tuple[str, str], Quota]
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    borrow_max_priority: int | None = None
    queueing_strategy: str = "BestEffortFIFO"
    weight: float = 1.0
    # Volcano only
    capability: dict[str, int] | None = None
    guarantee: dict[str, int] = field(default_factory=dict)
    deserved: dict[str, int] | None = None
    reclaimable: bool = True

    def flavors_for(self, resource: str) -> list[str]:
        """Flavors covering `resource`, in the order Kueue tries them."""
        return [f for (f, r) in self.quotas if r == resource]


@dataclass(frozen=True)
class Team:
    """Who submits to a queue: the team (ClusterQueue) name, its namespaces and its default priority."""

    name: str
    queue: str
    namespaces: tuple[str, ...] = ()
    priority: int = 0


@dataclass(frozen=True)
class Gang:
    """All-or-nothing start: Kueue's waitForPodsReady, or Volcano's gang plugin."""

    enabled: bool = False
    timeout_s: float = 300.0
    block_admission: bool = False
    backoff_base_s: float = 60.0
    backoff_max_s: float = 3600.0
    backoff_limit: int | None = None
    requeue_timestamp: str = "Eviction"


@dataclass(frozen=True)
class Model:
    """One stack's scheduling world."""

    scheduler: str  # "kueue" or "volcano"
    pools: dict[str, Pool]
    flavors: dict[str, Flavor]
    queues: dict[str, Queue]
    teams: dict[str, Team]
    priorities: dict[str, int] = field(default_factory=dict)
    gang: Gang = field(default_factory=Gang)
    fair_sharing: bool = False
    actions: tuple[str, ...] = ()  # Volcano scheduler actions
    plugins: tuple[str, ...] = ()  # Volcano scheduler plugins
    placement: str = "spread"
    source: str = ""
    warnings: tuple[str, ...] = ()
    tas_domain_nodes: dict[str, int] = field(default_factory=dict)  # pool -> nodes per TAS domain (--topology-blocks)
    tas_request: str = "required"  # the TAS annotation trace jobs are taken to carry (--tas-request)
    tas_above: dict[str, tuple[int, ...]] = field(default_factory=dict)  # pool -> domains per level above (--topology-levels)
    tas_level: str | None = None  # the level label the annotation names (--tas-level); None: the block

    # ---- what-if variants -------------------------------------------------------------------------------------
    def static(self) -> "Model":
        """The same queues with static quotas: no cohort, so nothing is borrowed, lent or reclaimed."""
        if self.scheduler == "volcano":
            queues = {}
            for name, q in self.queues.items():
                share = {res: quota.nominal for (_, res), quota in q.quotas.items()}
                queues[name] = replace(q, capability=share, guarantee=share, deserved=share, reclaimable=False)
            return replace(self, queues=queues, source=f"{self.source} (static quotas)")
        queues = {name: replace(q, cohort=None, reclaim_within_cohort="Never", borrow_within_cohort="Never",
                                quotas={k: Quota(v.nominal) for k, v in q.quotas.items()})
                  for name, q in self.queues.items()}
        return replace(self, queues=queues, source=f"{self.source} (static quotas)")

    def without_gang(self) -> "Model":
        """The same queues with gang scheduling off: partially started jobs keep their GPUs."""
        return replace(self, gang=replace(self.gang, enabled=False),
                       plugins=tuple(p for p in self.plugins if p != "gang"), source=f"{self.source} (no gang)")

    def with_nodes(self, nodes: dict[str, int]) -> "Model":
        """Override pool sizes (`--nodes pool=N`)."""
        unknown = sorted(set(nodes) - set(self.pools))
        if unknown:
            raise SimulationError(f"--nodes names unknown pool(s) {', '.join(unknown)}; "
                                  f"pools: {', '.join(self.pools) or '(none)'}")
        pools = {name: replace(p, nodes=nodes.get(name, p.nodes)) for name, p in self.pools.items()}
        return replace(self, pools=pools)

    def with_placement(self, placement: str) -> "Model":
        return replace(self, placement=placement)

    def with_tas(self, domain_nodes: dict[str, int], request: str | None = None,
                 above: dict[str, tuple[int, ...]] | None = None, level: str | None = None) -> "Model":
        """TAS domain sizes per pool (`--topology-blocks pool=N`, and `--topology-levels pool=M/K` for the levels
        above the block), the jobs' topology request (`--tas-request`) and the level it names (`--tas-level`)."""
        tas_flavors = [f for f in self.flavors.values() if f.topology and f.pool]
        tas_pools = sorted({f.pool for f in tas_flavors})
        problems = []
        for option, sizes in (("--topology-blocks", domain_nodes), ("--topology-levels", above or {})):
            unknown = sorted(set(sizes) - set(tas_pools))
            if unknown:
                problems.append(f"{option} names pool(s) without a topology-aware flavor: {', '.join(unknown)}; "
                                f"such pools: {', '.join(tas_pools) or '(none)'}")
        for pool, size in domain_nodes.items():
            if size < 1:
                problems.append(f"--topology-blocks {pool}={size}: a block holds at least one node")
        for pool, counts in (above or {}).items():
            upper = min(len(_levels(f)) - 2 for f in tas_flavors if f.pool == pool)
            if any(c < 1 for c in counts) or len(counts) > upper:
                problems.append(f"--topology-levels {pool}={'/'.join(map(str, counts))}: allowed: up to {upper} "
                                f"whole numbers from 1 (domains of the level below per domain, from the block up), "
                                f"as its Topology has {upper} level(s) above the block")
        if request is not None and request not in TAS_REQUESTS:
            problems.append(f"--tas-request {request!r}: allowed: {', '.join(TAS_REQUESTS)}")
        if level is not None:
            networked = [f for f in tas_flavors if _levels(f) != (HOSTNAME,)]
            allowed = [lv for lv in _levels(networked[0]) if all(lv in _levels(f) for f in networked)] if networked else []
            if level not in allowed:
                choices = ", ".join(allowed) or "(none: no topology-aware pool has network levels)"
                problems.append(f"--tas-level {level!r}: allowed: {choices}")
        if problems:
            raise SimulationError("; ".join(problems))
        return replace(self, tas_domain_nodes={**self.tas_domain_nodes, **domain_nodes},
                       tas_request=request or self.tas_request, tas_above={**self.tas_above, **(above or {})},
                       tas_level=level or self.tas_level)

    def tas(self, flavor: str | None) -> TasRequest | None:
        """How TAS places gangs on a flavor's pool; None when the flavor is not topology-aware or selects no pool.
        A Topology of hosts only (gpu-hosts) has no level to ask for, so its jobs go unannotated: `implied`."""
        f = self.flavors.get(flavor) if flavor else None
        if f is None or f.topology is None or f.pool not in self.pools:
            return None
        levels = _levels(f)
        if levels == (HOSTNAME,):
            return TasRequest(levels, (1,), 0, "implied")
        block = self.tas_domain_nodes.get(f.pool, TAS_DOMAIN_NODES)
        spans: list[int | None] = [1, block]
        for count in self.tas_above.get(f.pool, ()):
            spans.append(spans[-1] * count)
        spans += [None] * (len(levels) - len(spans))
        mode = self.tas_request
        index = len(levels) - 1 if mode == "implied" else levels.index(self.tas_level or levels[-2])
        return TasRequest(levels, tuple(reversed(spans)), index, mode)

    # ---- lookups ----------------------------------------------------------------------------------------------
    def resolve_priority(self, token: str | int | None, default: int) -> int:
        """An integer, a WorkloadPriorityClass/PriorityClass name, or a level (`high` -> `gpu-high`)."""
        if token is None or token == "":
            return default
        if isinstance(token, int):
            return token
        text = str(token).strip()
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        for name in (text, f"gpu-{text}"):
            if name in self.priorities:
                return self.priorities[name]
        raise SimulationError(f"unknown priority {text!r}; use an integer or one of: "
                              f"{', '.join(sorted(self.priorities)) or '(no priority classes planned)'}")

    def team_for(self, name: str) -> Team | None:
        if name in self.teams:
            return self.teams[name]
        return next((t for t in self.teams.values() if name in t.namespaces), None)

    def has_quota(self, team: Team, pool: str | None) -> bool:
        """Whether the team's queue has nominal quota on the pool (a pool or flavor name; None: on any pool). Volcano
        queues count resources across pools: there, quota for a resource the pool advertises."""
        for (flavor, resource), quota in self.queues[team.queue].quotas.items():
            if quota.nominal <= 0:
                continue
            if pool is None:
                return True
            if flavor == ANY_FLAVOR:
                if pool not in self.pools or resource in self.pools[pool].per_node:
                    return True
            elif pool in (flavor, getattr(self.flavors.get(flavor), "pool", None)):
                return True
        return False

    def capacity_gpus(self) -> float:
        return sum(p.nodes * p.gpus_per_node for p in self.pools.values())


# ---- reading a plan ---------------------------------------------------------------------------------------------

def _unmodelled_scheduler(by_type: dict[str, list[dict[str, Any]]]) -> SchedulerKind | None:
    """A registered scheduler whose queue objects the plan holds and whose row says the simulator does not model it."""
    for row in KINDS.values():
        if row.not_simulated and by_type.get(f"kubernetes:{row.api}:{row.queue_kinds[0]}"):
            return row
    return None


def load_model(plan: Any) -> Model:
    """The model of a Plan, a plan JSON dict, or a plan JSON file path."""
    data, source = _plan_json(plan)
    resources = data.get("resources") or []
    by_type: dict[str, list[dict[str, Any]]] = {}
    for res in resources:
        by_type.setdefault(res.get("type", ""), []).append(res)
    warnings: list[str] = []
    pools = _pools(by_type.get(GPU_NODE_POOL, []))
    namespaces = {str(_meta(r).get("name") or r.get("name")): _meta(r).get("labels") or {}
                  for r in by_type.get(NAMESPACE, [])}
    priorities = {str(_meta(r).get("name")): quantity(_inputs(r).get("value", 0), f"priority {_meta(r).get('name')!r}")
                  for r in by_type.get(PRIORITY_CLASS, []) + by_type.get(WORKLOAD_PRIORITY_CLASS, [])
                  if _meta(r).get("name")}
    releases = by_type.get(HELM_RELEASE, [])
    if by_type.get(CLUSTER_QUEUE):
        model = _kueue_model(by_type, pools, namespaces, priorities, releases, warnings)
    elif by_type.get(VOLCANO_QUEUE):
        model = _volcano_model(by_type, pools, namespaces, priorities, releases, warnings)
    elif unmodelled := _unmodelled_scheduler(by_type):
        raise SimulationError(f"{source}: the plan schedules with {unmodelled.title}, which the simulator does not "
                              f"model ({unmodelled.not_simulated}); simulate the stack with another scheduler.kind")
    else:
        raise SimulationError(f"{source}: the plan has no Kueue ClusterQueue and no Volcano Queue to simulate "
                              "(are teams and a scheduler configured?)")
    if not pools:
        warnings.append("the plan has no GPU node pools (adopted cluster?): quotas only, no node packing")
    return replace(model, source=f"{data.get('project', '')}/{data.get('stack', '')}".strip("/") or source,
                   warnings=tuple(warnings))


def _plan_json(plan: Any) -> tuple[dict[str, Any], str]:
    if hasattr(plan, "to_json"):
        return plan.to_json(), getattr(plan, "stack", "plan")
    try:
        if isinstance(plan, dict):
            check_plan_json(plan)
            return plan, "plan"
        path = Path(plan)
        return read_plan_json(path), str(path)
    except OSError as exc:
        raise SimulationError(f"cannot read plan {plan}: {exc.strerror}") from None
    except PlanFileError as exc:
        raise SimulationError(str(exc)) from None


def _inputs(res: dict[str, Any]) -> dict[str, Any]:
    return res.get("inputs") or {}


def _meta(res: dict[str, Any]) -> dict[str, Any]:
    meta = _inputs(res).get("metadata")
    return meta if isinstance(meta, dict) else {}


def _spec(res: dict[str, Any]) -> dict[str, Any]:
    spec = _inputs(res).get("spec")
    return spec if isinstance(spec, dict) else {}


def _pools(components: list[dict[str, Any]]) -> dict[str, Pool]:
    pools = {}
    for res in components:
        inp = _inputs(res)
        name = inp.get("poolName") or res.get("name")
        where = f"GPU pool {name!r:.60}"
        raw_advertised, labels = inp.get("advertised") or {}, inp.get("labels") or {}
        if not isinstance(name, str) or not isinstance(raw_advertised, dict) or not isinstance(labels, dict):
            raise SimulationError(f"{where}: poolName must be a string, advertised and labels objects")
        advertised = {k: n for k, v in raw_advertised.items() if (n := quantity(v, f"{where} advertised {k}")) > 0}
        if not advertised:
            continue
        pools[name] = Pool(name=name, nodes=quantity(inp.get("maxNodes") or 0, f"{where} maxNodes"),
                           per_node=advertised,
                           gpus_per_node=quantity(inp.get("gpusPerNode") or next(iter(advertised.values())),
                                                  f"{where} gpusPerNode"),
                           labels=dict(labels))
    return pools


def quantity(value: Any, where: str) -> int:
    """A Kubernetes quantity (the policy pack's parser: every suffix and exponent) as an integer count (GPUs,
    slices, replicas)."""
    try:
        return int(parse_quantity(value))
    except QuantityError as exc:
        raise SimulationError(f"{where}: {exc}") from None


def _levels(flavor: Flavor) -> tuple[str, ...]:
    """The node labels of a TAS flavor's Topology: as planned, else hosts alone for gpu-hosts and one block level
    above the hosts for another name."""
    if flavor.levels:
        return flavor.levels
    return (HOSTNAME,) if flavor.topology == HOSTS_TOPOLOGY else BLOCK_AND_HOSTS


def _topologies(objects: list[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    """Each planned Topology's level labels by name, broadest first."""
    found = {}
    for res in objects:
        levels = _spec(res).get("levels")
        if isinstance(levels, list):
            found[_meta(res).get("name") or res.get("name")] = tuple(
                lv.get("nodeLabel") for lv in levels if isinstance(lv, dict) and isinstance(lv.get("nodeLabel"), str))
    return found


def _flavors(rfs: list[dict[str, Any]], pools: dict[str, Pool], warnings: list[str],
             topologies: dict[str, tuple[str, ...]]) -> dict[str, Flavor]:
    flavors = {}
    for res in rfs:
        name = _meta(res).get("name") or res.get("name")
        selector = _spec(res).get("nodeLabels") or {}
        matches = [p.name for p in pools.values()
                   if selector and all(p.labels.get(k) == v for k, v in selector.items())]
        pool = matches[0] if len(matches) == 1 else (name if name in pools else None)
        if pool is None and pools:
            warnings.append(f"ResourceFlavor {name} selects no single GPU pool: quota only, no node packing")
        topology = _spec(res).get("topologyName")
        flavors[name] = Flavor(name=name, pool=pool, topology=topology, levels=topologies.get(topology, ()))
    return flavors


def _default_priority(by_type: dict[str, list[dict[str, Any]]]) -> int:
    """The priority of a job that names no priority class: the planned global default PriorityClass's value (the
    lowest, if several), else 0. Kueue takes it from there (pkg/util/priority getDefaultPriority) and so does the
    API server's Priority admission for pods; a namespace's `gpu-platform.io/priority` label is the team's
    ceiling (docs/scheduling.md), not a default, and nothing in the platform turns it into one."""
    defaults = [quantity(_inputs(r).get("value", 0), f"priority {_meta(r).get('name')!r}")
                for r in by_type.get(PRIORITY_CLASS, []) if _inputs(r).get("globalDefault")]
    return min(defaults, default=0)


def _kueue_model(by_type, pools, namespaces, priorities, releases, warnings) -> Model:
    flavors = _flavors(by_type.get(RESOURCE_FLAVOR, []), pools, warnings, _topologies(by_type.get(TOPOLOGY, [])))
    queues: dict[str, Queue] = {}
    for res in by_type[CLUSTER_QUEUE]:
        name = _meta(res).get("name") or res.get("name")
        spec = _spec(res)
        quotas: dict[tuple[str, str], Quota] = {}
        for g, group in enumerate(spec.get("resourceGroups") or []):
            for f, flavor in enumerate(group.get("flavors") or []):
                flavor_name = flavor["name"]
                if flavor_name not in flavors:
                    flavors[flavor_name] = Flavor(flavor_name, flavor_name if flavor_name in pools else None)
                for r, item in enumerate(flavor.get("resources") or []):
                    where = f"ClusterQueue {name} resourceGroups[{g}].flavors[{f}].resources[{r}]"
                    quotas[(flavor["name"], item["name"])] = Quota(
                        nominal=quantity(item.get("nominalQuota", 0), where),
                        borrowing_limit=(quantity(item["borrowingLimit"], where)
                                         if item.get("borrowingLimit") is not None else None),
                        lending_limit=(quantity(item["lendingLimit"], where)
                                       if item.get("lendingLimit") is not None else None))
        pre = spec.get("preemption") or {}
        borrow = pre.get("borrowWithinCohort") or {}
        cohort = spec.get("cohortName") or spec.get("cohort")
        queues[name] = Queue(
            name=name, cohort=cohort, quotas=quotas,
            within_cluster_queue=pre.get("withinClusterQueue", "Never"),
            reclaim_within_cohort=pre.get("reclaimWithinCohort", "Never"),
            borrow_within_cohort=borrow.get("policy", "Never"),
            borrow_max_priority=borrow.get("maxPriorityThreshold"),
            queueing_strategy=spec.get("queueingStrategy", "BestEffortFIFO"),
            weight=float(quantity_float((spec.get("fairSharing") or {}).get("weight", 1))))
    local: dict[str, list[str]] = {}
    for res in by_type.get(LOCAL_QUEUE, []):
        ns = _meta(res).get("namespace")
        cq = _spec(res).get("clusterQueue")
        if ns and cq:
            local.setdefault(cq, []).append(ns)
    teams = {name: Team(name=name, queue=name, namespaces=tuple(local.get(name, ())),
                        priority=_default_priority(by_type))
             for name in queues}
    conf = _kueue_config(releases)
    gang = Gang()
    pods_ready = conf.get("waitForPodsReady")
    if isinstance(pods_ready, dict) and pods_ready.get("enable", True):
        requeue = pods_ready.get("requeuingStrategy") or {}
        gang = Gang(enabled=True, timeout_s=duration(pods_ready.get("timeout", "5m")),
                    block_admission=bool(pods_ready.get("blockAdmission", False)),
                    backoff_base_s=float(requeue.get("backoffBaseSeconds", 60)),
                    backoff_max_s=float(requeue.get("backoffMaxSeconds", 3600)),
                    backoff_limit=requeue.get("backoffLimitCount"),
                    requeue_timestamp=requeue.get("timestamp", "Eviction"))
    fair = conf.get("fairSharing")
    return Model(scheduler="kueue", pools=pools, flavors=flavors, queues=queues, teams=teams, priorities=priorities,
                 gang=gang, fair_sharing=isinstance(fair, dict) and fair.get("enable", True) is not False,
                 placement="spread")


def quantity_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        match = _QUANTITY.match(str(value))
        if not match:
            raise SimulationError(f"{value!r} is not a number") from None
        return float(match.group(1)) * _SUFFIX[match.group(2)]


def _release(releases: list[dict[str, Any]], chart: str) -> dict[str, Any] | None:
    for res in releases:
        inp = _inputs(res)
        if chart in str(inp.get("chart", "")) or chart in str(inp.get("name", "")) or chart in res.get("name", ""):
            return inp
    return None


def _embedded_yaml(values: Any, accept) -> dict[str, Any]:
    """The first YAML document embedded as a string in Helm values that `accept` recognises."""
    stack = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and "\n" in item:
            try:
                doc = yaml.safe_load(item)
            except yaml.YAMLError:
                continue
            if isinstance(doc, dict) and accept(doc):
                return doc
    return {}


def _kueue_config(releases: list[dict[str, Any]]) -> dict[str, Any]:
    release = _release(releases, "kueue")
    if release is None:
        return {}
    return _embedded_yaml(release.get("values") or {}, lambda d: d.get("kind") == "Configuration")


def _volcano_model(by_type, pools, namespaces, priorities, releases, warnings) -> Model:
    queues: dict[str, Queue] = {}
    for res in by_type[VOLCANO_QUEUE]:
        name = _meta(res).get("name") or res.get("name")
        spec = _spec(res)
        where = f"Volcano Queue {name}"
        capability = {k: quantity(v, f"{where} capability.{k}") for k, v in (spec.get("capability") or {}).items()
                      if not k.startswith(("cpu", "memory"))}
        guarantee = {k: quantity(v, f"{where} guarantee.{k}")
                     for k, v in ((spec.get("guarantee") or {}).get("resource") or {}).items()
                     if not k.startswith(("cpu", "memory"))}
        deserved = {k: quantity(v, f"{where} deserved.{k}") for k, v in (spec.get("deserved") or {}).items()
                    if not k.startswith(("cpu", "memory"))}
        share = deserved or guarantee or capability
        queues[name] = Queue(
            name=name, cohort="cluster", quotas={(ANY_FLAVOR, r): Quota(n) for r, n in sorted(share.items())},
            weight=float(spec.get("weight", 1) or 1), capability=capability or None, guarantee=guarantee,
            deserved=deserved or None, reclaimable=bool(spec.get("reclaimable", True)))
    teams = {}
    for name in queues:
        owned = tuple(ns for ns, labels in namespaces.items()
                      if any(k.endswith("/team") and v == name for k, v in labels.items()))
        teams[name] = Team(name=name, queue=name, namespaces=owned or (name,),
                           priority=_default_priority(by_type))
    release = _release(releases, "volcano")
    conf = _embedded_yaml((release or {}).get("values") or {}, lambda d: "actions" in d) if release else {}
    if not conf:
        warnings.append("no Volcano scheduler configuration in the plan: using Volcano's default "
                        "(enqueue, allocate, backfill; no preempt or reclaim)")
        conf = {"actions": "enqueue, allocate, backfill",
                "tiers": [{"plugins": [{"name": n} for n in ("priority", "gang", "conformance")]},
                          {"plugins": [{"name": n} for n in ("overcommit", "drf", "predicates", "proportion",
                                                              "nodeorder", "binpack")]}]}
    actions = tuple(a.strip() for a in str(conf.get("actions", "")).split(",") if a.strip())
    plugins = tuple(p.get("name") for tier in conf.get("tiers") or [] for p in tier.get("plugins") or [])
    gang = Gang(enabled="gang" in plugins, timeout_s=0.0)
    return Model(scheduler="volcano", pools=pools, flavors={}, queues=queues, teams=teams, priorities=priorities,
                 gang=gang, actions=actions, plugins=plugins,
                 placement="binpack" if "binpack" in plugins else "spread")


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")


def duration(value: Any) -> float:
    """A Go duration (`5m`, `1h30m`, `600s`) or a number of seconds."""
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(a + b for a, b in parts) != text:
        raise SimulationError(f"{value!r} is not a duration")
    scale = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    return sum(float(n) * scale[unit] for n, unit in parts)
