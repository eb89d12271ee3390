"""Multi-node training settings: job frameworks to install, topology-aware scheduling on pools against the
scheduler."""
from __future__ import annotations

from typing import Any

from components.clouds.profiles import CloudProfile
from components.config.errors import Problems
from components.config.fields import Section, join
from components.config.model import GpuPool, Scheduler
from components.scheduling.frameworks import FRAMEWORKS


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


def read_frameworks(sec: Section, kind: str | None, problems: Problems) -> tuple[str, ...]:
    """`scheduler.frameworks`: known names, once each, with what they run on; Kueue integrations only."""
    names = sec.str_list("frameworks")
    path = sec.at("frameworks")
    chosen: list[str] = []
    for i, name in enumerate(names):
        if name not in FRAMEWORKS:
            problems.add(join(path, i), f"{name!r} is not a job framework the platform installs; allowed: "
                                        f"{', '.join(FRAMEWORKS)}")
        elif name in chosen:
            problems.add(join(path, i), f"{name!r} is listed twice")
        else:
            chosen.append(name)
    for name in chosen:
        missing = [n for n in FRAMEWORKS[name].needs if n not in chosen]
        if missing:
            problems.add(path, f"{name} runs its jobs on {', '.join(missing)}; add {', '.join(missing)} to "
                               f"scheduler.frameworks")
    if chosen and kind and kind != "kueue":
        problems.add(path, f"frameworks are installed as Kueue integrations (gang admission, quotas); "
                           f"scheduler.kind is {kind}: use scheduler.kind: kueue or remove scheduler.frameworks")
    # Install order follows the catalog, so a framework always comes after what it needs.
    return tuple(n for n in FRAMEWORKS if n in chosen)
