"""Node counts on clouds that start a pool's initial nodes in every zone (GKE `initialNodeCount`)."""
from __future__ import annotations


def initial_per_zone(min_nodes: int, zones: int) -> int:
    """Nodes per zone at creation: minNodes spread over the zones, rounded up so the pool starts at minNodes at least."""
    return -(-min_nodes // zones) if min_nodes else 0


def nodes_at_creation(min_nodes: int, zones: int) -> int:
    """What the pool really starts with: the per-zone count in every zone."""
    return initial_per_zone(min_nodes, zones) * zones
