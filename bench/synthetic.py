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


def synthetic_stack(teams: int, pools: int, max_nodes: int = 64) -> dict:
    """An aws production stack with `teams` teams, each holding a small quota on every pool."""
    gpu_pools = [{"name": f"pool-{i}", "minNodes": 0, "maxNodes": max_nodes, **_POOL_SHAPES[i % len(_POOL_SHAPES)]}
                 for i in range(pools)]
    return {"config": {
        "gpu-platform:cloud": "aws",
        "gpu-platform:environment": "production",
        "gpu-platform:cluster": {"name": "bench", "region": "us-east-1"},
        "gpu-platform:gpuPools": gpu_pools,
        "gpu-platform:scheduler": {"kind": "kueue", "gang": {"enabled": True, "timeout": "10m"}},
        "gpu-platform:teams": [{"name": f"team-{t}", "quotas": {p["name"]: 1 for p in gpu_pools}, "borrowingLimit": 1}
                               for t in range(teams)],
        "gpu-platform:observability": {"prometheus": {"install": True}},
    }}


def write_stack(directory: Path, teams: int, pools: int) -> Path:
    path = directory / f"Pulumi.synthetic-{teams}t-{pools}p.yaml"
    path.write_text(yaml.safe_dump(synthetic_stack(teams, pools), sort_keys=False))
    return path
