"""Node counts on clouds that start a pool's initial nodes in every zone (GKE `initialNodeCount`), and pool sizes
checked against them: a pool must not start above its own maxNodes."""
from __future__ import annotations

from typing import Any

from components.clouds.facts import CloudProfile
from components.config.errors import Problems
from components.config.fields import join, name_index
from components.config.model import Cluster, GpuPool


def initial_per_zone(min_nodes: int, zones: int) -> int:
    """Nodes per zone at creation: minNodes spread over the zones, rounded up so the pool starts at minNodes at least."""
    return -(-min_nodes // zones) if min_nodes else 0


def nodes_at_creation(min_nodes: int, zones: int) -> int:
    """What the pool really starts with: the per-zone count in every zone."""
    return initial_per_zone(min_nodes, zones) * zones


def per_zone_start_checks(cluster: Cluster, items: list[Any], pools: list[GpuPool], prof: CloudProfile,
                          problems: Problems) -> None:
    """Each pool starts with minNodes rounded up to a multiple of the zones; that must fit in maxNodes."""
    zones = cluster.extras.get(prof.zones_key) if prof.zones_key else None
    if not zones:
        return  # a missing or malformed zone list is reported where it is read
    index = name_index(items)
    sized = [("cluster.systemPool", cluster.system_pool.min_nodes, cluster.system_pool.max_nodes)]
    sized += [(join("gpuPools", index[p.name]), p.min_nodes, p.max_nodes) for p in pools]
    for path, min_nodes, max_nodes in sized:
        if not isinstance(min_nodes, int) or not isinstance(max_nodes, int):
            continue
        started = nodes_at_creation(min_nodes, len(zones))
        if started > max_nodes:
            problems.add(join(path, "maxNodes"),
                         f"{prof.service} starts {initial_per_zone(min_nodes, len(zones))} node(s) in each of the "
                         f"{len(zones)} zones of cluster.{prof.name}.{prof.zones_key}, {started} in all for minNodes "
                         f"{min_nodes}, above maxNodes {max_nodes}; raise maxNodes to at least {started} or list fewer "
                         "zones")
