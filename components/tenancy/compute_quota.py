"""A team's CPU, memory and pod caps: what keeps one team's CPU work from starving the system pool, where Kueue,
Prometheus and the autoscaler run.

A namespace ResourceQuota cannot tell nodes apart, so the caps bound everything the team's pods request, GPU pods
on GPU nodes included. Unset (`teams[].limits`), each is what the nodes of the team's GPU pools hold at maxNodes
(its GPU pods can never use more there) plus a system-pool allowance, so the defaults never refuse a GPU job its
pools could run; a team that must be held tighter on the system pool sets them lower. The LimitRange's default
requests (team.py) make a pod without requests count.
"""
from __future__ import annotations

from components.config.model import PlatformConfig, Team

# What a team may take of the system pool beyond its GPU nodes: a few notebooks, controllers and data loaders.
SYSTEM_ALLOWANCE = {"cpu": 4, "memory_gib": 16, "pods": 50}
PODS_PER_GPU_NODE = 8  # one pod per GPU, the most a training or inference layout puts on a node


def compute_hard(config: PlatformConfig, team: Team) -> dict[str, str]:
    """ResourceQuota `hard` caps on requests.cpu, requests.memory and pods: teams[].limits, else derived."""
    pools = [p for p in config.gpu_pools if p.name in team.quotas]
    cpu = SYSTEM_ALLOWANCE["cpu"] + sum(p.max_nodes * p.instance.vcpus for p in pools)
    memory = SYSTEM_ALLOWANCE["memory_gib"] + sum(p.max_nodes * p.instance.memory_gib for p in pools)
    pods = SYSTEM_ALLOWANCE["pods"] + sum(p.max_nodes * PODS_PER_GPU_NODE for p in pools)
    limits = team.limits
    return {"requests.cpu": limits.cpu or str(cpu), "requests.memory": limits.memory or f"{memory}Gi",
            "pods": str(limits.pods or pods)}
