"""The part of a plan people read first: resources per layer, each GPU pool, each team with its quota and queue.

Read from the planned resources (the GpuNodePool and Team components' inputs, the queue objects), not re-derived
from the config, so it also summarizes a plan read back from JSON.
"""
from __future__ import annotations

from typing import Any

from pulumi_policy.proxy import UnknownValueError

from components.clouds import CLOUDS
from components.scheduling.kinds import KINDS
from gpu_platform.engine.plan import Plan, PlannedResource
from policies.pool_reach import PoolReach, pool_reach

POOL_TYPE = "gpu-platform:cluster:GpuNodePool"
TEAM_TYPE = "gpu-platform:tenancy:Team"
# Component areas that build the cluster itself (each cloud's, the shared ones); every other area is named by its own
# segment.
CLUSTER_AREAS = (*CLOUDS, "cluster", "existing")
DRIVER_OWNERS = {"managed": "cloud image", "operator": "GPU Operator"}


def layer_of(type_: str) -> str:
    """`gpu-platform:<area>:<Noun>` -> the layer it belongs to."""
    area = type_.split(":")[1]
    return "cluster" if area in CLUSTER_AREAS else area


def layer_counts(plan: Plan) -> dict[str, tuple[int, int]]:
    """Per layer: (components, cloud and Kubernetes resources), in the order layers first appear."""
    by_urn = {r.urn: r for r in plan.resources}

    def root(resource: PlannedResource) -> PlannedResource:
        while resource.parent in by_urn:
            resource = by_urn[resource.parent]
        return resource

    counts: dict[str, list[int]] = {}
    for resource in plan.resources:
        top = root(resource)
        layer = layer_of(top.type) if top.type.startswith("gpu-platform:") else "other"
        entry = counts.setdefault(layer, [0, 0])
        entry[0 if not resource.custom else 1] += 1
    return {layer: (c, r) for layer, (c, r) in counts.items()}


def number(value: Any) -> str:
    """A planned number as people write it: 8, not 8.0."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _sharing(sharing: dict[str, Any]) -> str:
    mode = sharing.get("mode") or "none"
    if mode == "mig":
        return f"mig {sharing.get('migConfig')}"
    if sharing.get("replicas"):
        return f"{mode} x{number(sharing['replicas'])}"
    return mode


def pool_rows(plan: Plan) -> list[list[str]]:
    reach = _reach(plan)
    rows = []
    for pool in plan.of_type(POOL_TYPE):
        p = pool.inputs
        rows.append([p["poolName"], p["instanceType"], f"{number(p['gpusPerNode'])} x {p['gpuModel']}",
                     f"{number(p['minNodes'])}-{number(p['maxNodes'])}", p["capacityType"], _sharing(p["sharing"]),
                     DRIVER_OWNERS.get(p["driver"], p["driver"]), _fabric(p), _unreachable(reach, p["poolName"])])
    return rows


def _reach(plan: Plan) -> dict[str, PoolReach] | None:
    """Each pool's reach through the planned queues (policies/pool_reach.py, as GPU019 reads it); None when the
    plan does not say."""
    try:
        return pool_reach((r.type, r.inputs) for r in plan.resources)
    except UnknownValueError:
        return None


def _unreachable(reach: dict[str, PoolReach] | None, pool: str) -> str:
    """What no team's queue can ever use of the pool at maxNodes, in its units: `none`, or `?` when unreadable."""
    found = (reach or {}).get(pool)
    if found is None:
        return "?" if reach is None else "-"  # "-": no queues planned, so nothing to reach through
    return f"{found.unreachable} {found.unit}" if found.unreachable else "none"


def _fabric(pool: dict[str, Any]) -> str:
    """The pool's fabric, flagged when unused: built and paid for while no team's pods may use it, or on the
    instance type (paid for in its price) but not attached."""
    fabric = pool.get("fabric", "none")
    if fabric != "none" and not pool.get("fabricTeams"):
        return f"{fabric} (unused: no team with quota admits its pods)"
    if fabric == "none" and (idle := _interconnect(pool)):
        return f"none ({idle} unused: not attached)"
    return fabric


def _interconnect(pool: dict[str, Any]) -> str | None:
    """The fast interconnect the pool's instance type has, from the catalog; None when it has none or the plan's
    cloud or type is not catalogued (a plan read back from JSON may be older than the catalog)."""
    from components.catalog import CatalogError, lookup

    try:
        return lookup(pool.get("cloud", ""), pool.get("instanceType", "")).interconnect
    except CatalogError:
        return None


# Schedulers whose queue for a team is one cluster-wide object named after the team (Volcano's Queue).
_TEAM_NAMED_QUEUES = {f"kubernetes:{k.api}:{k.queue_kinds[0]}": k for k in KINDS.values() if k.local_queue is None}


def _queue(plan: Plan, team: str) -> str:
    """The team's queue as planned: Kueue LocalQueue -> ClusterQueue, or the Volcano Queue; "-" when none."""
    for resource in plan.resources:
        kind = resource.type.rsplit(":", 1)[-1]
        meta = resource.inputs.get("metadata") or {}
        spec = resource.inputs.get("spec") or {}
        if kind == "LocalQueue" and meta.get("namespace") == team:
            return f"kueue {team}/{meta.get('name')} -> ClusterQueue {spec.get('clusterQueue')}"
        if (row := _TEAM_NAMED_QUEUES.get(resource.type)) and meta.get("name") == team:
            return f"{row.name} {kind} {team}"
    return "-"


def team_rows(plan: Plan) -> list[list[str]]:
    rows = []
    for team in plan.of_type(TEAM_TYPE):
        t = team.inputs
        quota = ", ".join(f"{k.removeprefix('requests.')} {v}" for k, v in sorted((t.get("gpuQuota") or {}).items())
                          if str(v) != "0") or "none"
        rows.append([t["team"], t.get("priority", ""), quota, _queue(plan, t["team"])])
    return rows


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    return ["  " + "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *rows]]


def render_summary(plan: Plan) -> str:
    custom = sum(1 for r in plan.resources if r.custom)
    lines = [f"{plan.project}/{plan.stack}: {len(plan.resources)} resources "
             f"({custom} cloud and Kubernetes resources, {len(plan.resources) - custom} components)", "", "layers:"]
    lines += _table(["layer", "components", "resources"],
                    [[layer, str(c), str(r)] for layer, (c, r) in layer_counts(plan).items()])
    pools = pool_rows(plan)
    lines += ["", "GPU pools:"]
    lines += _table(["pool", "instance type", "GPUs per node", "nodes", "capacity", "sharing", "driver", "fabric",
                     "unreachable GPUs"], pools) \
        if pools else ["  none (adopted cluster: pools are the cluster's own)"]
    teams = team_rows(plan)
    lines += ["", "teams:"]
    lines += _table(["team", "priority", "GPU quota (nominal + borrowing)", "queue"], teams) if teams else ["  none"]
    return "\n".join(lines)
