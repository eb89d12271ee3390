"""Kueue topology-aware scheduling (TAS): a `Topology` per set of node-label levels the TAS pools use.

A pool with `topology` on points its ResourceFlavor at the Topology built from the cloud's block/rack labels when
its instance type carries them, else at a hostname-only one. Kueue sees only nodes that carry every level label of a
flavor's Topology, so levels are never promised on nodes that lack them.
"""
from __future__ import annotations

from typing import Any

from components.clouds import profile
from components.config.model import GpuPool, PlatformConfig

HOSTNAME = "kubernetes.io/hostname"  # every node has it; the CRD allows it only as the lowest level
NETWORK = "gpu-network"  # the cloud's block/rack labels, then the host
HOSTS = "gpu-hosts"  # the host alone: pods packed onto the fewest nodes
NETWORK_LAYERS = 3  # every cloud's block/rack labels are three (clouds.facts.NetworkTopology.levels)


def pool_levels(config: PlatformConfig, pool: GpuPool) -> tuple[str, ...]:
    """Node labels of the pool's topology, broadest first; empty when the pool has TAS off."""
    if not pool.topology:
        return ()
    facts = profile(config.cloud).network_topology
    if facts and facts.labels(pool.instance_type):
        return (*facts.levels_of(pool.instance_type), HOSTNAME)
    return (HOSTNAME,)


def topology_name(levels: tuple[str, ...]) -> str:
    """gpu-hosts, gpu-network, or for types with a layer more (EKS p6-b200) gpu-network-4: a Topology per depth."""
    if levels == (HOSTNAME,):
        return HOSTS
    layers = len(levels) - 1
    return NETWORK if layers == NETWORK_LAYERS else f"{NETWORK}-{layers}"


def topologies(config: PlatformConfig) -> dict[str, tuple[str, ...]]:
    """Every Topology the TAS pools need, by name, in pool order."""
    found: dict[str, tuple[str, ...]] = {}
    for pool in config.gpu_pools:
        levels = pool_levels(config, pool)
        if levels:
            found.setdefault(topology_name(levels), levels)
    return found


def topology_spec(levels: tuple[str, ...]) -> dict[str, Any]:
    return {"levels": [{"nodeLabel": label} for label in levels]}
