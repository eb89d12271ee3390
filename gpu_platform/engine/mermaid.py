"""`plan --format mermaid`: a picture of the platform as a Mermaid flowchart (GitHub renders ```mermaid blocks):
GPU pools with their taints, each team's queue inside its cohort, the quota it holds on each pool, and dotted
edges for what may borrow from what."""
from __future__ import annotations

import re

from gpu_platform.engine.plan import Plan
from gpu_platform.engine.platform_view import Quota, platform_view


def node_id(kind: str, name: str) -> str:
    """A Mermaid node id: letters, digits and underscores only (names carry dashes and dots)."""
    return f"{kind}_{re.sub(r'[^A-Za-z0-9]', '_', name)}"


def label(*lines: str) -> str:
    """A quoted label; a double quote would end it, so it is written as Mermaid's entity."""
    return '"' + "<br/>".join(line.replace('"', "#quot;") for line in lines) + '"'


def _quota(quota: Quota) -> str:
    nominal, borrowing = quota.nominal, quota.borrowing
    unit = quota.unit or quota.resource
    if quota.resource != "nvidia.com/gpu":  # a MIG profile resource on a mixed pool: name it
        unit = f"{quota.resource} ({quota.unit})" if quota.unit else quota.resource
    if borrowing == "0":
        return f"{nominal} {unit}"
    more = " + borrows any" if borrowing == "unlimited" else f" + borrows up to {borrowing}"
    return f"{nominal} {unit}{more}"


def render_mermaid(plan: Plan) -> str:
    view = platform_view(plan)
    lines = ["flowchart LR", '  subgraph gpu_pools["GPU pools"]', "    direction TB"]
    for pool in view.pools:
        taints = [f"taint {t}" for t in pool.taints] or ["no taints"]
        text = label(pool.name, f"{pool.instance_type}: {pool.gpus}", f"{pool.nodes} nodes", *taints)
        lines.append(f"    {node_id('pool', pool.name)}[{text}]")
    # A quota on a pool the stack does not build (an adopted cluster's own nodes) still gets a node to point at.
    planned = {pool.name for pool in view.pools}
    others = sorted({p for team in view.teams for q in team.quotas for p in q.pools} - planned)
    lines += [f"    {node_id('pool', name)}[{label(name, 'not built by this stack')}]" for name in others]
    lines.append("  end")
    cohorts: dict[str, list] = {}
    for team in view.teams:
        if team.queue:
            cohorts.setdefault(team.cohort, []).append(team)
    for cohort, teams in cohorts.items():
        indent = "    " if cohort else "  "
        if cohort:
            lines.append(f"  subgraph {node_id('cohort', cohort)}[{label(f'Kueue cohort {cohort}')}]")
        lines += [f"{indent}{node_id('queue', team.name)}[[{label(team.queue)}]]" for team in teams]
        if cohort:
            lines.append("  end")
    for team in view.teams:
        lines.append(f"  {node_id('team', team.name)}([{label(f'team {team.name}', f'priority {team.priority}')}])")
        if not team.queue:
            continue
        lines.append(f"  {node_id('team', team.name)} --> {node_id('queue', team.name)}")
        for quota in team.quotas:
            # A Volcano queue's quota is one amount over all the pools it may use, not that amount on each.
            shared = f" across {len(quota.pools)} pools" if len(quota.pools) > 1 else ""
            text = label(_quota(quota) + shared)
            lines += [f"  {node_id('queue', team.name)} -- {text} --> {node_id('pool', pool)}" for pool in quota.pools]
    lends: dict[tuple[str, str], list[str]] = {}
    for borrower, lender, pool in view.borrowing():
        lends.setdefault((borrower, lender), []).append(pool)
    for (borrower, lender), pools in lends.items():
        lines.append(f"  {node_id('queue', borrower)} -. {label('borrows ' + ', '.join(sorted(set(pools))) + ' from')}"
                     f" .-> {node_id('queue', lender)}")
    return "\n".join(lines)
