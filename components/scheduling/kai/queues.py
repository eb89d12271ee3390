"""KAI's queue tree from `teams[]`: the `gpu-platform` department queue and one leaf queue per team under it.

KAI counts queue resources as `gpu` (devices, fractions allowed), `cpu` and `memory`, not per resource name, so a
team's quotas on every pool add up to one GPU figure in whole-GPU equivalents (a MIG slice or a shared replica
counts as its part of a GPU). Only GPUs are queued: CPU and memory quota are unlimited (-1), as Kueue excludes them,
so a CPU-only pod is never held for GPU quota and the namespace ResourceQuota stays the cap on them.

The mapping from Kueue terms: nominal quota -> `quota` (guaranteed, never reclaimed), nominal + borrowingLimit ->
`limit`, the team's weight -> `overQuotaWeight`, team priority -> `priority` (higher queues get idle GPUs first and
are reclaimed from last). A lendingLimit has no KAI counterpart: in-quota use is never reclaimed there anyway.
"""
from __future__ import annotations

from typing import Any

from components.config.capacity import mig_strategy, quota_capacity
from components.config.model import PRIORITIES, PlatformConfig, Team
from components.scheduling.kai.facts import DEPARTMENT
from components.config.shares import has_cohort, team_shares, team_weight

UNLIMITED = -1
GPU_DIGITS = 3  # KAI takes GPUs as a decimal; 1/7 of an A100 is 0.143 GPUs


def team_gpus(config: PlatformConfig, team: Team) -> tuple[float, float]:
    """The team's nominal quota and ceiling (nominal plus borrowing, never above a pool) in whole GPUs."""
    strategy = mig_strategy(config.gpu_pools)
    nominal = ceiling = 0.0
    for pool in (share.pool for share in team_shares(config, team)):
        per_unit = pool.instance.gpus * pool.max_nodes / quota_capacity(pool, strategy)  # GPUs per quota unit
        quota = team.quotas[pool.name]
        borrow = (team.borrowing_limit or 0) if has_cohort(config) else 0
        nominal += quota * per_unit
        ceiling += min(quota + borrow, quota_capacity(pool, strategy)) * per_unit
    return round(nominal, GPU_DIGITS), round(ceiling, GPU_DIGITS)


def _unqueued() -> dict[str, Any]:
    return {"quota": UNLIMITED, "limit": UNLIMITED, "overQuotaWeight": 1}


def team_queue_spec(config: PlatformConfig, team: Team) -> dict[str, Any]:
    nominal, ceiling = team_gpus(config, team)
    return {
        "parentQueue": DEPARTMENT,
        "priority": len(PRIORITIES) - PRIORITIES.index(team.priority),
        "resources": {
            "gpu": {"quota": nominal, "limit": ceiling, "overQuotaWeight": team_weight(config, team)},
            "cpu": _unqueued(),
            "memory": _unqueued(),
        },
    }


def department_spec(config: PlatformConfig) -> dict[str, Any]:
    """The teams' parent: guarantees what its children are guaranteed, and lets them grow to their ceilings."""
    nominal = ceiling = 0.0
    for team in config.teams:
        team_nominal, team_ceiling = team_gpus(config, team)
        nominal, ceiling = nominal + team_nominal, ceiling + team_ceiling
    return {"resources": {
        "gpu": {"quota": round(nominal, GPU_DIGITS), "limit": round(ceiling, GPU_DIGITS), "overQuotaWeight": 1},
        "cpu": _unqueued(),
        "memory": _unqueued(),
    }}

