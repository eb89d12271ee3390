"""Whether the teams' quotas fit each GPU pool at maxNodes: capacity no team can ever use, or nominal quota the
pool can never honour all at once. Both are valid configs that cost money or promises, so they are warnings.

What a team can reach follows the scheduler (policies/pool_reach.py reads the same from the plan):
- Kueue admits only within quota, and borrowing only moves other teams' unused nominal quota, so a pool is
  reachable up to its teams' nominal quotas added up, whatever their borrowingLimits.
- Volcano lets a queue grow into idle capacity up to its capability (nominal plus borrowingLimit on each of its
  pools, summed per resource name), so a pool is reachable up to what the teams with quota on it can hold.
Counted in the pool's quota units (GPUs, MIG slices, shared replicas), as `teams[].quotas` is.
"""
from __future__ import annotations

from components.config.capacity import mig_strategy, quota_capacity, quota_resources
from components.config.errors import Problems
from components.config.fields import join
from components.config.model import GpuPool, Scheduler, Team
from components.scheduling.kinds import KINDS

SHARED_UNITS = {"mps": "MPS replicas", "time-slicing": "time-slicing replicas"}


def quota_unit(pool: GpuPool, strategy: str | None) -> str:
    """What one unit of quota on the pool is."""
    mode = pool.sharing.mode
    if mode == "mig":
        return "MIG slices" if strategy == "single" else "GPUs' worth of MIG slices"
    return SHARED_UNITS.get(mode, "GPUs")


def _volcano_capability(team: Team, pools: list[GpuPool], strategy: str | None, cohort: bool) -> dict[str, int]:
    """The team's Volcano capability per resource name: nominal plus borrowing on each of its pools, capped at the
    pool, summed (components/config/shares.py sizes the Queue the same way)."""
    borrowing = (team.borrowing_limit or 0) if cohort else 0
    total: dict[str, int] = {}
    for pool in pools:
        if pool.name in team.quotas:
            ceiling = quota_resources(pool, team.quotas[pool.name] + borrowing, strategy)
            limit = quota_resources(pool, quota_capacity(pool, strategy), strategy)
            for name, amount in ceiling.items():
                total[name] = total.get(name, 0) + min(amount, limit[name])
    return total


def reachable(pool: GpuPool, pools: list[GpuPool], scheduler: Scheduler, teams: list[Team]) -> int:
    """The most of the pool, in quota units, the teams' queues can ever use at maxNodes."""
    strategy = mig_strategy(pools)
    limit = quota_capacity(pool, strategy)
    users = [t for t in teams if pool.name in t.quotas]
    if not KINDS[scheduler.kind].borrowing_adds_capacity:
        return min(limit, sum(t.quotas[pool.name] for t in users))
    capacity = quota_resources(pool, limit, strategy)
    cohort = len(teams) >= 2
    held = {name: 0 for name in capacity}
    for team in users:
        capability = _volcano_capability(team, pools, strategy, cohort)
        for name in held:
            held[name] += min(capacity[name], capability.get(name, 0))
    return min(min(held[name], capacity[name]) * limit // capacity[name] for name in capacity)


def quota_reach_warnings(pools: list[GpuPool], scheduler: Scheduler, teams: list[Team], problems: Problems) -> None:
    """Per pool, at `teams[].quotas.<pool>`: capacity no team can reach, and (when scheduler.allowOvercommit
    silences the maxNodes check) nominal quota the pool cannot honour."""
    strategy = mig_strategy(pools)
    for pool in pools:
        limit, unit = quota_capacity(pool, strategy), quota_unit(pool, strategy)
        users = [t for t in teams if pool.name in t.quotas]
        owners = ", ".join(f"{t.name} {t.quotas[pool.name]}" for t in users) or "no team has quota on it"
        at = join(join("teams[]", "quotas"), pool.name)
        reach = reachable(pool, pools, scheduler, teams)
        nominal = sum(t.quotas[pool.name] for t in users)
        if reach < limit:
            how = KINDS[scheduler.kind].reach_rule
            problems.warn(at, f"pool {pool.name!r} offers {limit} {unit} at maxNodes {pool.max_nodes} but teams can "
                              f"use at most {reach}: {limit - reach} {unit} are unreachable (quotas: {owners}; {how}); "
                              "raise the quotas or lower maxNodes")
        elif nominal > limit and scheduler.allow_overcommit:
            problems.warn(at, f"teams' nominal quotas add up to {nominal} {unit} ({owners}) but pool {pool.name!r} "
                              f"offers {limit} at maxNodes {pool.max_nodes}: they can never all be honoured at once "
                              "(scheduler.allowOvercommit accepts that)")
