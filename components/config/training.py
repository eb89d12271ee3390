"""Multi-node training settings: job frameworks to install, topology-aware scheduling on pools against the
scheduler."""
from __future__ import annotations

from typing import Any

from components.clouds.facts import CloudProfile
from components.config.errors import Problems
from components.config.fields import Section, join, name_index
from components.config.model import GpuPool, Scheduler, Team
from components.scheduling.framework_catalog import FRAMEWORKS
from components.scheduling.kinds import KINDS


def topology_checks(items: list[Any], pools: list[GpuPool], scheduler: Scheduler, teams: list[Team],
                    prof: CloudProfile | None, problems: Problems) -> None:
    """`topology: true` is a Kueue feature whose placement depends on node labels and on the team queues' mix."""
    index = name_index(items)
    facts = prof.network_topology if prof else None
    kind = KINDS.get(scheduler.kind)  # None when scheduler.kind was refused (its error is already reported)
    topology = bool(kind and kind.topology)
    able = " or ".join(f"scheduler.kind: {k.name}" for k in KINDS.values() if k.topology)
    for pool in pools:
        if not pool.topology:
            continue
        path = join(join("gpuPools", index[pool.name]), "topology")
        if not topology:
            problems.add(path, f"topology-aware scheduling is a Kueue feature (scheduler.kind is {scheduler.kind}); "
                               f"allowed: false, or {able}")
        elif prof and not (facts and facts.labels(pool.instance_type)):
            problems.warn(path, f"{prof.service} puts no block or rack labels on {pool.instance_type} nodes: Kueue can "
                                "place this pool's jobs by host (kubernetes.io/hostname) only")
        elif facts and facts.writer:
            problems.add(path, f"{pool.instance_type} nodes get Kueue's {prof.service} topology levels "
                               f"({', '.join(facts.levels)}) only if something writes those labels: "
                               f"{facts.writer}; without them no node matches and no job is ever admitted. "
                               "allowed: false")
    if not topology:
        return
    tas = {p.name for p in pools if p.topology}
    for i, team in enumerate(teams):
        with_tas = [p for p in team.quotas if p in tas]
        without = [p for p in team.quotas if p not in tas]
        if with_tas and without:
            # Kueue's flavor assigner: a pod set without a topology request skips TAS flavors unless every flavor of
            # its ClusterQueue is one ("supports only TopologyAwareScheduling"), and one with a request skips the rest.
            problems.warn(join(join("teams", i), "quotas"),
                          f"team {team.name!r} mixes topology-aware pools ({', '.join(with_tas)}) with others "
                          f"({', '.join(without)}): its jobs without a kueue.x-k8s.io/podset-required-topology or "
                          "-preferred-topology annotation never run on the former, jobs with one never on the "
                          "latter; set topology: true on all of them to make topology implied")


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
    if chosen and kind in KINDS and not KINDS[kind].frameworks:
        able = " or ".join(f"scheduler.kind: {k.name}" for k in KINDS.values() if k.frameworks)
        problems.add(path, f"frameworks are installed as Kueue integrations (gang admission, quotas); "
                           f"scheduler.kind is {kind}: use {able} or remove scheduler.frameworks")
    # Install order follows the catalog, so a framework always comes after what it needs.
    return tuple(n for n in FRAMEWORKS if n in chosen)
