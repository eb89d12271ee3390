"""Multi-node training settings across sections: topology-aware scheduling on pools against the scheduler."""
from __future__ import annotations

from typing import Any

from components.clouds.profiles import CloudProfile
from components.config.errors import Problems
from components.config.fields import join
from components.config.model import GpuPool, Scheduler


def topology_checks(items: list[Any], pools: list[GpuPool], scheduler: Scheduler, prof: CloudProfile | None,
                    problems: Problems) -> None:
    """`topology: true` is a Kueue feature; a pool that asks for it under Volcano would silently get nothing."""
    index = {item.get("name"): i for i, item in enumerate(items) if isinstance(item, dict)}
    for pool in pools:
        explicit = items[index[pool.name]].get("topology") is True
        if explicit and scheduler.kind != "kueue":
            problems.add(join(join("gpuPools", index[pool.name]), "topology"),
                         f"topology-aware scheduling is a Kueue feature (scheduler.kind is {scheduler.kind}); "
                         "allowed: false, or scheduler.kind: kueue")
        facts = prof.network_topology if prof else None
        if explicit and prof and not (facts and facts.labels(pool.instance_type)):
            problems.warn(join(join("gpuPools", index[pool.name]), "topology"),
                          f"{prof.service} puts no block or rack labels on {pool.instance_type} nodes: Kueue can "
                          "place this pool's jobs by host (kubernetes.io/hostname) only")
        elif explicit and facts and not facts.default_on:
            problems.warn(join(join("gpuPools", index[pool.name]), "topology"),
                          f"{facts.note}: Kueue sees only nodes that carry every level label, so without them this "
                          "pool admits no job")
