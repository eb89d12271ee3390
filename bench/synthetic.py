"""Synthetic stack files of a chosen size, for measuring how plan and check cost grows."""
from __future__ import annotations

from pathlib import Path

import yaml

# Pool shapes cycled through so every sharing mode appears as the pool count grows.
_POOL_SHAPES = (
    {"instanceType": "p5.48xlarge", "workload": "training"},
    {"instanceType": "p4de.24xlarge", "workload": "inference", "sharing": {"mode": "mig", "migProfile": "all-1g.10gb"}},
    {"instanceType": "g6.12xlarge", "workload": "interactive", "capacityType": "spot",
     "sharing": {"mode": "time-slicing", "replicas": 4}},
    {"instanceType": "g6e.12xlarge", "workload": "inference"},
)


POOLS_PER_TEAM = 2  # teams use a few pools each, as real ones do; every resource then stays the same size


def team_pools(team: int, gpu_pools: list[dict]) -> list[str]:
    """A few pools per team; a time-slicing pool belongs to one team only (GPU002): the team of its own index."""
    picks = {(team + k) % len(gpu_pools) for k in range(POOLS_PER_TEAM)}
    return sorted(gpu_pools[i]["name"] for i in picks if not _shared(gpu_pools[i]) or i == team)


def _shared(pool: dict) -> bool:
    return pool.get("sharing", {}).get("mode") == "time-slicing"


def synthetic_stack(teams: int, pools: int, max_nodes: int = 64) -> dict:
    """A compliant aws production stack: `teams` teams, each with a small quota on a few of `pools` pools."""
    gpu_pools = [{"name": f"pool-{i}", "minNodes": 0, "maxNodes": max_nodes, **_POOL_SHAPES[i % len(_POOL_SHAPES)]}
                 for i in range(pools)]
    return {"config": {
        "gpu-platform:cloud": "aws",
        "gpu-platform:environment": "production",
        "gpu-platform:cluster": {"name": "bench", "region": "us-east-1"},
        "gpu-platform:gpuPools": gpu_pools,
        "gpu-platform:scheduler": {"kind": "kueue", "gang": {"enabled": True, "timeout": "10m"}},
        "gpu-platform:teams": [{"name": f"team-{t}", "quotas": {name: 1 for name in team_pools(t, gpu_pools)},
                                "borrowingLimit": 1} for t in range(teams)],
        "gpu-platform:observability": {"prometheus": {"install": True}},
    }}


def write_stack(directory: Path, teams: int, pools: int) -> Path:
    path = directory / f"Pulumi.synthetic-{teams}t-{pools}p.yaml"
    path.write_text(yaml.safe_dump(synthetic_stack(teams, pools), sort_keys=False))
    return path
