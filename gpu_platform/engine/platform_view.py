"""The platform as a reviewer pictures it, read from a plan's resources: GPU pools with their taints, and each team's
queue, cohort and per-pool quota (nominal and what it may borrow). The Markdown summary and the Mermaid picture
both draw from it, so they cannot disagree; like the plan summary it reads planned objects, never the config, so a
plan read back from JSON gives the same view.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_platform.engine.plan import Plan
from gpu_platform.engine.summary import POOL_TYPE, TEAM_TYPE, number
from policies.pool_reach import quota_unit

POOL_LABEL = "gpu-platform.io/pool"
GPU = "nvidia.com/gpu"
VOLCANO_API, KAI_API = "scheduling.volcano.sh", "scheduling.run.ai"  # API groups of the schedulers' Queue kinds
UNLIMITED = -1  # a KAI queue limit without a cap


@dataclass(frozen=True)
class Pool:
    name: str
    instance_type: str
    gpus: str  # "8 x H100"
    nodes: str  # "0-4"
    taints: tuple[str, ...]  # key=value:Effect
    unit: str  # what a quota on it counts: GPUs, MIG slices, time-slicing replicas, ...


@dataclass(frozen=True)
class Quota:
    """What one team's queue holds on one pool (Kueue), or on the pools it may use together (Volcano, KAI)."""

    pools: tuple[str, ...]
    resource: str
    nominal: str
    borrowing: str  # the most it may borrow beyond nominal: a number, or "unlimited"
    unit: str  # GPUs, MIG slices, ... (the pools'; "" when they differ)


@dataclass(frozen=True)
class Team:
    name: str
    priority: str
    queue: str  # "ClusterQueue research", "Volcano Queue alpha", "KAI Queue alpha (under gpu-platform)", or ""
    cohort: str  # the Kueue cohort its ClusterQueue shares quota in, or ""
    quotas: tuple[Quota, ...]


@dataclass(frozen=True)
class PlatformView:
    scheduler: str  # kueue | volcano | kai | ""
    pools: tuple[Pool, ...]
    teams: tuple[Team, ...]

    @property
    def cohorts(self) -> bool:
        """Whether borrowing stays inside a team's cohort (Kueue); otherwise any queue on the pool lends."""
        return _READERS.get(self.scheduler, (None, False))[1]

    def borrowing(self) -> list[tuple[str, str, str]]:
        """(borrower, lender, pool): a team whose queue may borrow on a pool from a team that holds quota there
        and shares it (same Kueue cohort; under Volcano, any other queue on the pool, reclaimable by design)."""
        found = []
        for team in self.teams:
            for quota in team.quotas:
                if quota.borrowing in ("0", ""):
                    continue
                for other in self.teams:
                    apart = self.cohorts and (not team.cohort or other.cohort != team.cohort)
                    if other is team or apart:
                        continue
                    for pool in quota.pools:
                        if any(pool in q.pools and q.nominal not in ("0", "") for q in other.quotas):
                            found.append((team.name, other.name, pool))
        return found


def _taint(taint: dict[str, Any]) -> str:
    value = f"={taint['value']}" if taint.get("value") not in (None, "") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"


def _pools(plan: Plan) -> tuple[Pool, ...]:
    return tuple(Pool(p["poolName"], p["instanceType"], f"{number(p['gpusPerNode'])} x {p['gpuModel']}",
                      f"{number(p['minNodes'])}-{number(p['maxNodes'])}",
                      tuple(_taint(t) for t in p.get("taints") or ()),
                      quota_unit(str((p.get("sharing") or {}).get("mode") or "none"), p.get("advertised") or {}))
                 for p in (r.inputs for r in plan.of_type(POOL_TYPE)))


def _objects(plan: Plan, kind: str) -> list[dict[str, Any]]:
    return [r.inputs for r in plan.resources if r.type.rsplit(":", 1)[-1] == kind and r.custom]


def _kueue_team(plan: Plan, team: str) -> tuple[str, str, tuple[Quota, ...]]:
    local = next((q for q in _objects(plan, "LocalQueue") if (q.get("metadata") or {}).get("namespace") == team), None)
    if local is None:
        return "", "", ()
    name = (local.get("spec") or {}).get("clusterQueue", "")
    queue = next((q for q in _objects(plan, "ClusterQueue") if (q.get("metadata") or {}).get("name") == name), {})
    spec = queue.get("spec") or {}
    units = {pool.name: pool.unit for pool in _pools(plan)}
    # A flavor selects its pool by the pool label; one without it is shown by its own name.
    flavor_pool = {(f.get("metadata") or {}).get("name"):
                   ((f.get("spec") or {}).get("nodeLabels") or {}).get(POOL_LABEL)
                   for f in _objects(plan, "ResourceFlavor")}
    quotas = []
    for group in spec.get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for entry in flavor.get("resources") or ():
                limit = entry.get("borrowingLimit")
                pool = flavor_pool.get(flavor["name"]) or flavor["name"]
                quotas.append(Quota((pool,), entry["name"], number(entry.get("nominalQuota", 0)),
                                    "unlimited" if limit is None else number(limit), units.get(pool, "")))
    return f"ClusterQueue {name}", spec.get("cohortName") or "", tuple(quotas)


def _team_pools(plan: Plan, team: str) -> tuple[str, ...]:
    """The pools a team's GPU pods may use (the pool admission policy's table), for a queue counting them together."""
    tables = [r.inputs.get("teamPools") or {} for r in plan.of_type("gpu-platform:tenancy:GpuPoolAdmission")]
    return tuple(sorted({p for table in tables for p in table.get(team) or ()})) if tables else \
        tuple(p.name for p in _pools(plan))


def _queue(plan: Plan, team: str, api_group: str) -> dict[str, Any] | None:
    return next((q for q in _objects(plan, "Queue") if (q.get("metadata") or {}).get("name") == team
                 and q.get("apiVersion", "").startswith(f"{api_group}/")), None)


def _volcano_team(plan: Plan, team: str) -> tuple[str, str, tuple[Quota, ...]]:
    queue = _queue(plan, team, VOLCANO_API)
    if queue is None:
        return "", "", ()
    pools = _team_pools(plan, team)
    spec = queue.get("spec") or {}
    deserved, capability = spec.get("deserved") or {}, spec.get("capability") or {}
    quotas = []
    for resource in sorted(set(deserved) | set(capability)):
        nominal = deserved.get(resource, 0)
        cap = capability.get(resource)
        kinds = {pool.unit for pool in _pools(plan) if pool.name in pools}
        quotas.append(Quota(pools, resource, number(nominal), "unlimited" if cap is None else number(cap - nominal),
                            kinds.pop() if len(kinds) == 1 else ""))
    return f"Volcano Queue {team}", "", tuple(quotas)


def _kai_team(plan: Plan, team: str) -> tuple[str, str, tuple[Quota, ...]]:
    """A team's leaf Queue under the department: one GPU figure for all its pools, in whole-GPU equivalents (a MIG
    slice or a shared replica counts as its part of a GPU); its limit is how far over quota it may grow."""
    queue = _queue(plan, team, KAI_API)
    if queue is None or not (queue.get("spec") or {}).get("parentQueue"):
        return "", "", ()
    gpu = ((queue["spec"].get("resources") or {}).get("gpu")) or {}
    nominal, limit = gpu.get("quota", 0), gpu.get("limit", UNLIMITED)
    borrowing = "unlimited" if limit == UNLIMITED else number(max(limit - max(nominal, 0), 0))
    quota = Quota(_team_pools(plan, team), "gpu", number(nominal), borrowing, quota_unit("none", {}))
    return f"KAI Queue {team} (under {queue['spec']['parentQueue']})", "", (quota,)


# scheduler -> (its team queue reader, whether its borrowing stays inside a cohort)
_READERS = {"kueue": (_kueue_team, True), "volcano": (_volcano_team, False), "kai": (_kai_team, False)}
# The API group of each scheduler's queue objects: Volcano and KAI both call theirs `Queue`.
_QUEUE_GROUPS = {VOLCANO_API: "volcano", KAI_API: "kai"}


def _scheduler(plan: Plan) -> str:
    if any(r.type.rsplit(":", 1)[-1] == "ClusterQueue" for r in plan.resources if r.custom):
        return "kueue"
    groups = {q.get("apiVersion", "").split("/")[0] for q in _objects(plan, "Queue")}
    return next((name for group, name in _QUEUE_GROUPS.items() if group in groups), "")


def platform_view(plan: Plan) -> PlatformView:
    scheduler = _scheduler(plan)
    read = _READERS.get(scheduler, (None, False))[0]
    teams = []
    for team in plan.of_type(TEAM_TYPE):
        name = team.inputs["team"]
        queue, cohort, quotas = read(plan, name) if read else ("", "", ())
        teams.append(Team(name, str(team.inputs.get("priority", "")), queue, cohort, quotas))
    return PlatformView(scheduler, _pools(plan), tuple(teams))
