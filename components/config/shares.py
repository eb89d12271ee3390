"""What each team is entitled to on each GPU pool, counted in the resources that pool advertises.

The namespace ResourceQuota, the Kueue ClusterQueue and the Volcano Queue are all sized from these numbers,
so the hard cap, the queue and the scheduler can never disagree.
"""
from __future__ import annotations

from dataclasses import dataclass

from components.config.capacity import mig_strategy, pool_units, quota_capacity, quota_resources
from components.config.model import GpuPool, PlatformConfig, Team

# Kueue's shared cohort (and the Cohort object) when teams can borrow from one another.
COHORT = "gpu-platform"


@dataclass(frozen=True)
class PoolShare:
    """One team's share of one pool, per advertised resource name."""

    pool: GpuPool
    nominal: dict[str, int]
    borrowing: dict[str, int] | None  # None: there is no cohort to borrow from
    lending: dict[str, int] | None  # None: all unused nominal quota may be lent
    capacity: dict[str, int]  # what the pool offers at maxNodes
    gpus: float  # the nominal quota in whole-GPU equivalents

    @property
    def ceiling(self) -> dict[str, int]:
        """The most the team can hold on this pool: nominal plus borrowing, never above the pool itself."""
        borrow = self.borrowing or {}
        return {name: min(amount + borrow.get(name, 0), self.capacity[name]) for name, amount in self.nominal.items()}


def has_cohort(config: PlatformConfig) -> bool:
    """Teams share a cohort (borrow, lend, reclaim) as soon as there are two of them."""
    return len(config.teams) >= 2


def gpu_resources(config: PlatformConfig) -> list[str]:
    """Every GPU resource name some pool advertises, sorted."""
    strategy = mig_strategy(config.gpu_pools)
    return sorted({name for pool in config.gpu_pools for name in pool_units(pool, strategy)})


def team_shares(config: PlatformConfig, team: Team) -> list[PoolShare]:
    """The team's shares in pool declaration order (Kueue tries flavors in this order)."""
    strategy = mig_strategy(config.gpu_pools)
    cohort = has_cohort(config)
    shares = []
    for pool in config.gpu_pools:
        if pool.name not in team.quotas:
            continue
        quota = team.quotas[pool.name]
        limit = quota_capacity(pool, strategy)
        shares.append(PoolShare(
            pool=pool,
            nominal=quota_resources(pool, quota, strategy),
            # An unset borrowingLimit means no borrowing: Kueue's "unlimited" default would let one team
            # take the whole cohort, and the namespace ResourceQuota needs a finite ceiling.
            borrowing=quota_resources(pool, team.borrowing_limit or 0, strategy) if cohort else None,
            lending=(quota_resources(pool, team.lending_limit, strategy)
                     if cohort and team.lending_limit is not None else None),
            capacity=quota_resources(pool, limit, strategy),
            gpus=quota * pool.instance.gpus * pool.max_nodes / limit,
        ))
    return shares


def _total(parts: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for part in parts:
        for name, amount in part.items():
            total[name] = total.get(name, 0) + amount
    return dict(sorted(total.items()))


def team_nominal(config: PlatformConfig, team: Team) -> dict[str, int]:
    """Nominal quota per resource name, summed over the team's pools."""
    return _total([s.nominal for s in team_shares(config, team)])


def team_ceiling(config: PlatformConfig, team: Team) -> dict[str, int]:
    """Per resource name the most the team may ever hold; 0 for GPU resources it has no share of."""
    ceiling = _total([s.ceiling for s in team_shares(config, team)])
    return {name: ceiling.get(name, 0) for name in gpu_resources(config)}


def team_reserved(config: PlatformConfig, team: Team) -> dict[str, int]:
    """Quota the team never lends (nominal minus lendingLimit), per resource name; empty when it lends all."""
    reserved = _total([{name: amount - s.lending.get(name, 0) for name, amount in s.nominal.items()}
                       for s in team_shares(config, team) if s.lending is not None])
    return {name: amount for name, amount in reserved.items() if amount > 0}


def team_weight(config: PlatformConfig, team: Team) -> int:
    """The team's nominal quota in whole-GPU equivalents (at least 1): its weight when idle capacity is shared.

    Absolute, not a fraction of the total, so adding a team never changes another team's weight.
    """
    return max(1, round(sum(s.gpus for s in team_shares(config, team))))
