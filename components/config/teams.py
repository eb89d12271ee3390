"""Teams and the scheduler in the stack config: quotas, borrowing, priorities, and the checks across teams."""
from __future__ import annotations

import dataclasses
from typing import Any

# A module reference, not a name: labels imports the config model, so it may still be initializing here.
from components.config import labels as node_facts
from components.clouds import PROFILES
from components.clouds.facts import CloudProfile
from components.config import capacity
from components.config.errors import Problems
from components.config.fabric import AUTO, NONE
from components.config.fields import DNS1123_LABEL, DNS1123_WHAT, Section, join, name_index
from components.config.model import (
    EGRESS, FABRIC_SIDECAR, POD_SECURITY_LEVELS, PRIORITIES, Gang, GpuPool, Observability, Prometheus, Scheduler, Team,
    TeamLimits, default, pod_security_admits,
)
from components.config.training import read_frameworks
from components.namespaces import PLATFORM_NAMESPACES
from components.scheduling.framework_catalog import FRAMEWORKS
from components.scheduling.kinds import KINDS, SCHEDULERS
from policies.quantity import QuantityError, parse as parse_quantity

# Kubernetes' own, then every namespace a platform component runs in: a team there shares it with privileged pods.
RESERVED_NAMESPACES = tuple(dict.fromkeys((
    "default", "kube-public", "kube-node-lease", *PLATFORM_NAMESPACES,
    *(k.namespace for k in KINDS.values()), *(f.namespace for f in FRAMEWORKS.values()),
    *(fabric.namespace for p in PROFILES.values() for fabric in p.fabrics.values()),
    default(Prometheus, "namespace"),
)))
# Built-in groups every identity (system:authenticated), every workload (system:serviceaccounts) or cluster admins
# (system:masters) are in: a team's RoleBinding would hand them `edit` in its namespace.
SYSTEM_GROUP_PREFIX = "system:"
HOST_ACCESS = ("privileged", FABRIC_SIDECAR)  # Pod Security levels whose pods may reach their node's host


def read_scheduler(raw: Any, problems: Problems) -> Scheduler:
    sec = Section(raw, "scheduler", problems, ("kind", "gang", "fairSharing", "allowOvercommit", "frameworks"))
    gang = Section(sec.value("gang", {}), sec.at("gang"), problems, ("enabled", "timeout", "recoveryTimeout"))
    kind = sec.str("kind", default(Scheduler, "kind"), choices=SCHEDULERS)
    return Scheduler(
        kind=kind,
        frameworks=read_frameworks(sec, kind, problems),
        gang=Gang(enabled=gang.bool("enabled", default(Gang, "enabled")),
                  timeout_s=gang.duration("timeout", default(Gang, "timeout_s")),
                  recovery_timeout_s=gang.duration("recoveryTimeout", None)),
        fair_sharing=sec.bool("fairSharing", default(Scheduler, "fair_sharing")),
        allow_overcommit=bool(sec.bool("allowOvercommit", default(Scheduler, "allow_overcommit"))),
    )


def read_teams(items: list[Any], pools: list[GpuPool], declared: set, problems: Problems) -> list[Team]:
    if not items and not any(p.path == "teams" for p in problems.errors):
        problems.add("teams", "must list at least one team")
    strategy = capacity.mig_strategy(pools)
    by_name = {p.name: p for p in pools}
    teams: list[Team] = []
    for i, item in enumerate(items):
        path = join("teams", i)
        sec = Section(item, path, problems, ("name", "quotas", "borrowingLimit", "lendingLimit", "priority", "groups",
                                             "principals", "reclaim", "egress", "podSecurity", "limits"))
        name = sec.str("name", pattern=DNS1123_LABEL, what=f"{DNS1123_WHAT}: it becomes the team's namespace")
        if name in RESERVED_NAMESPACES or (name or "").startswith("kube-"):
            problems.add(sec.at("name"), f"{name!r} is a reserved namespace; reserved: "
                                         f"{', '.join(RESERVED_NAMESPACES)} and every kube-* name (Kubernetes keeps "
                                         "that prefix for itself)")
        if name and any(t.name == name for t in teams):
            problems.add(sec.at("name"), f"duplicate team name {name!r}")
        quotas = _quotas(sec.value("quotas"), sec.at("quotas"), by_name, declared, strategy, problems)
        team = Team(
            name=name or "", quotas=quotas,
            borrowing_limit=sec.int("borrowingLimit", None, minimum=0, maximum=1_000_000),
            lending_limit=sec.int("lendingLimit", None, minimum=0, maximum=1_000_000),
            priority=sec.str("priority", default(Team, "priority"), choices=PRIORITIES)
            or default(Team, "priority"),
            groups=_groups(sec),
            principals=tuple(dict.fromkeys(sec.str_list("principals"))),
            reclaim=bool(sec.bool("reclaim", default(Team, "reclaim"))),
            egress=sec.str("egress", default(Team, "egress"), choices=EGRESS) or default(Team, "egress"),
            pod_security=sec.str("podSecurity", default(Team, "pod_security"), choices=POD_SECURITY_LEVELS)
            or default(Team, "pod_security"),
            limits=_limits(sec),
        )
        if team.pod_security == "privileged":
            problems.warn(sec.at("podSecurity"), "privileged lets this team's pods run privileged containers with "
                                                 "host paths and host networking on its nodes; policy GPU014 fails "
                                                 "the namespace unless an exemption with a reason names it "
                                                 "(docs/tenancy.md)")
        teams.append(team)
    return teams


def _groups(sec: Section) -> tuple[str, ...]:
    """The cloud's format for group names is checked with the cluster (config/access.py)."""
    groups = sec.str_list("groups")
    for j, group in enumerate(groups):
        if not group.strip():
            sec.problems.add(join(sec.at("groups"), j), "must not be empty")
        elif group.startswith(SYSTEM_GROUP_PREFIX):
            sec.problems.add(join(sec.at("groups"), j),
                             f"{group!r} is a Kubernetes built-in group: the team's RoleBinding would give everyone "
                             "in it (every user, every service account or the cluster admins) edit in the team's "
                             f"namespace; allowed: your identity provider's groups, never {SYSTEM_GROUP_PREFIX}*")
    return tuple(groups)


def _limits(sec: Section) -> TeamLimits:
    limits = Section(sec.value("limits", {}), sec.at("limits"), sec.problems, ("cpu", "memory", "pods"))

    def quantity(key: str) -> str | None:
        value = limits.value(key, None)
        if value is None:
            return None
        try:
            positive = parse_quantity(value) > 0
        except QuantityError as e:
            limits.problems.add(limits.at(key), str(e))
            return None
        if not positive:
            limits.problems.add(limits.at(key), f"must be above 0; got {value!r}")
            return None
        return str(value)

    return TeamLimits(cpu=quantity("cpu"), memory=quantity("memory"), pods=limits.int("pods", None, minimum=1))


def _quotas(raw: Any, path: str, pools: dict[str, GpuPool], declared: set, strategy: str | None,
            problems: Problems) -> dict[str, int]:
    if not isinstance(raw, dict) or not raw:
        problems.add(path, f"must map GPU pool names to GPU counts, e.g. {{{next(iter(pools), 'pool')}: 8}}")
        return {}
    quotas = {}
    for pool_name, value in raw.items():
        at = join(path, str(pool_name))
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.add(at, f"must be a whole number >= 0; got {value!r}")
            continue
        pool = pools.get(pool_name)
        if pool is None:
            if pool_name not in declared:  # a declared but invalid pool already has its own error
                problems.add(at, f"unknown GPU pool {pool_name!r}; pools: {', '.join(sorted(map(str, declared - {None}))) or '(none)'}")
            continue
        limit = capacity.quota_capacity(pool, strategy)
        if value > limit:
            problems.add(at, f"{value} exceeds what pool {pool_name!r} can ever offer ({limit} at maxNodes "
                             f"{pool.max_nodes}); raise maxNodes or lower the quota")
            continue
        quotas[pool_name] = value
    return quotas


def team_quota_rules(pool_items: list[Any], pools: list[GpuPool], scheduler: Scheduler, teams: list[Team],
                      prof: CloudProfile | None, production: bool, problems: Problems) -> None:
    """What teams' quotas mean together: a cohort to borrow from, quota that can be lent or reached, pool capacity."""
    strategy = capacity.mig_strategy(pools)
    index = name_index(pool_items)
    cohort = len(teams) >= 2  # teams borrow and lend within one shared cohort
    for i, team in enumerate(teams):
        path = join("teams", i)
        for key, value, verb in (("borrowingLimit", team.borrowing_limit, "borrow from"),
                                 ("lendingLimit", team.lending_limit, "lend to")):
            if value is not None and not cohort:
                problems.add(join(path, key), f"there is no cohort to {verb}: teams share one only when there are "
                                              "at least two; remove it or add a team")
        if cohort and team.lending_limit is not None:
            over = [f"{pool} ({quota})" for pool, quota in team.quotas.items() if team.lending_limit > quota]
            if over:
                problems.add(join(path, "lendingLimit"), f"{team.lending_limit} exceeds the team's quota on "
                                                         f"{', '.join(over)}; a team can lend at most its own quota")
        for pool, quota in team.quotas.items():
            if quota == 0 and not (cohort and team.borrowing_limit):
                why = "it has no borrowingLimit" if cohort else "there is no cohort to borrow from"
                problems.add(join(join(path, "quotas"), pool), f"0 leaves pool {pool!r} reachable only by borrowing, "
                                                               f"but {why}; remove the entry or set borrowingLimit")
    for pool in pools:
        total = sum(team.quotas.get(pool.name, 0) for team in teams)
        limit = capacity.quota_capacity(pool, strategy)
        if total <= limit or scheduler.allow_overcommit:
            continue
        owners = ", ".join(f"{t.name} {t.quotas[pool.name]}" for t in teams if t.quotas.get(pool.name))
        message = (f"teams' nominal quotas on pool {pool.name!r} add up to {total} ({owners}) but it offers {limit} "
                   f"at maxNodes {pool.max_nodes}: nominal quota would not be guaranteed; raise maxNodes or lower "
                   "the quotas")
        at = join(join("gpuPools", index[pool.name]), "maxNodes")
        if production:
            problems.add(at, message + " (or set scheduler.allowOvercommit: true)")
        else:
            problems.warn(at, message)
    kind = KINDS.get(scheduler.kind)  # None when scheduler.kind was refused (its error is already reported)
    if kind is None:
        return
    tolerations = kind.max_flavor_tolerations
    if tolerations is not None and prof:
        for pool in pools:
            taints = len(node_facts.pool_taints(pool, prof))
            if taints > tolerations:
                problems.add(join(join("gpuPools", index[pool.name]), "taints"),
                             f"pool {pool.name!r} carries {taints} taints but a {kind.title} ResourceFlavor holds at "
                             f"most {tolerations} tolerations; drop extra taints")
    for i, team in enumerate(teams):
        if team.name in kind.reserved_queue_names:
            problems.add(join(join("teams", i), "name"),
                         f"{team.name!r} is {kind.title}'s own {team.name} queue; choose another name")
        if team.reclaim and kind.reclaim_rules is None:  # the reclaimer acts only through a scheduler's own objects
            able = " or ".join(f"scheduler.kind: {k.name}" for k in KINDS.values() if k.reclaim_rules)
            problems.add(join(join("teams", i), "reclaim"),
                         f"the reclaimer cannot act through {kind.title}; needs {able}")


def reclaim_opt_ins(items: Any, teams: list[Team], observability: Observability, problems: Problems) -> None:
    """Teams opt in to reclaim one by one; either half alone does nothing, which is worth a warning."""
    opted = [i for i, item in enumerate(items if isinstance(items, list) else []) if isinstance(item, dict)
             and item.get("reclaim") is True]
    if observability.reclaim.enabled and not opted:
        problems.warn("observability.reclaim.enabled", "no team sets reclaim: true, so the reclaimer will find "
                                                       "nothing it may act on")
    if not observability.reclaim.enabled:
        for i in opted:
            problems.warn(join(join("teams", i), "reclaim"), "has no effect while observability.reclaim.enabled "
                                                             "is false")


def team_principal_checks(teams: list[Team], prof: CloudProfile | None, adopted: bool, problems: Problems) -> None:
    """teams[].principals: only where the cloud needs them (profile.team_principals) on a cluster this stack
    creates, in the cloud's identity format, and always with groups to put them in."""
    if prof is None:
        return
    spec = prof.team_principals
    for i, team in enumerate(teams):
        if not team.principals:
            continue
        at = join(join("teams", i), "principals")
        if adopted:
            problems.add(at, "is applied to a cluster this stack creates; with cluster.existingKubeconfig map the "
                             "principals where that cluster is managed")
        elif spec is None:
            problems.add(at, f"{prof.service} puts its own identities in Kubernetes groups: list them in "
                             "teams[].groups; principals is for EKS, which maps IAM principals through access entries")
            continue
        problem = spec.problem(list(team.principals))
        if problem:
            problems.add(at, problem)
        if not team.groups:
            problems.add(join(join("teams", i), "groups"), f"is required with principals: {spec.doc}, and the "
                                                           "team's RoleBinding grants those groups")


def auto_fabrics_teams_can_use(pool_items: list[Any], pools: list[GpuPool], teams: list[Team], prof: CloudProfile,
                               problems: Problems) -> list[GpuPool]:
    """`auto` never picks a fabric no team can use: one whose pods need a Pod Security level no team with quota on
    the pool enforces (or that no team has quota on) would be built, paid for and idle. Such a pool gets none."""
    index = name_index(pool_items)
    resolved = []
    for pool in pools:
        fabric = prof.fabrics.get(pool.fabric)
        raw = pool_items[index[pool.name]] if pool.name in index else {}
        users = [t for t in teams if t.quotas.get(pool.name)]
        # Only fabrics needing more than the default level: any team with quota can use the others.
        if fabric and not pod_security_admits(default(Team, "pod_security"), fabric.pod_security) and \
                isinstance(raw, dict) and raw.get("fabric", AUTO) == AUTO and \
                not any(pod_security_admits(t.pod_security, fabric.pod_security) for t in users):
            who = (f"no team with quota on it ({', '.join(t.name for t in users)}) sets teams[].podSecurity: "
                   f"{fabric.pod_security}" if users else "no team has quota on it")
            problems.warn(join(join("gpuPools", index[pool.name]), "fabric"),
                          f"auto leaves {pool.name!r} without {pool.fabric}: its pods need Pod Security "
                          f"{fabric.pod_security} and {who}; set that on the team that trains there and fabric: "
                          f"{pool.fabric}, or fabric: none to silence this")
            pool = dataclasses.replace(pool, fabric=NONE)
        resolved.append(pool)
    return resolved


def host_access_single_tenant(teams: list[Team], problems: Problems) -> None:
    """A team whose pods may reach the host (privileged, or fabric-sidecar's host mounts and NET_ADMIN) runs them
    only on its own pools (tenancy/pool_admission.py); it must be each such pool's single tenant, or it is root on
    the nodes running another team's pods. A 0 quota counts: it is that team's borrowing reach."""
    for i, team in enumerate(teams):
        if team.pod_security not in HOST_ACCESS:
            continue
        shared = {pool: [t.name for t in teams if t is not team and pool in t.quotas] for pool in team.quotas}
        shared = {pool: others for pool, others in shared.items() if others}
        if shared:
            where = "; ".join(f"pool {pool!r} with {', '.join(others)}" for pool, others in shared.items())
            problems.add(join(join("teams", i), "podSecurity"),
                         f"{team.pod_security} gives this team's pods access to the host of its pools' nodes, but it "
                         f"shares {where} (teams[].quotas): only a pool's single tenant may run with host access; "
                         f"allowed here: {', '.join(p for p in POD_SECURITY_LEVELS if p not in HOST_ACCESS)}, or "
                         "give the pool to this team alone")


def fabric_pod_security(pool_items: list[Any], pools: list[GpuPool], teams: list[Team], prof: CloudProfile,
                        problems: Problems) -> None:
    """A pool whose fabric's pods need a looser Pod Security level than every team with quota on it enforces: the
    fabric is built, and no team's pods can use it."""
    index = name_index(pool_items)
    sidecar_pools = {p.name for p in pools if (f := prof.fabrics.get(p.fabric)) and f.pod_sidecar}
    sidecar_fabrics = [f.name for f in prof.fabrics.values() if f.pod_sidecar]
    which = (f"gpuPools[].fabric {' or '.join(sidecar_fabrics)}" if sidecar_fabrics
             else f"no fabric on {prof.service} runs one")
    for i, team in enumerate(teams):
        # The exception is the fabric's sidecar: without such a pool there is nothing to except.
        if team.pod_security == FABRIC_SIDECAR and not sidecar_pools & set(team.quotas):
            problems.add(join(join("teams", i), "podSecurity"),
                         f"{FABRIC_SIDECAR} excepts only the sidecar of a fabric that runs one ({which}), and none "
                         "of the team's pools has one; allowed: "
                         f"{', '.join(p for p in POD_SECURITY_LEVELS if p != FABRIC_SIDECAR)}")
    for pool in pools:
        fabric = prof.fabrics.get(pool.fabric)
        # Only fabrics that need more than the default level: a team's stricter choice is its own.
        if not fabric or pod_security_admits(default(Team, "pod_security"), fabric.pod_security) or \
                pool.name not in index:
            continue
        users = [t for t in teams if t.quotas.get(pool.name)]
        if users and not any(pod_security_admits(t.pod_security, fabric.pod_security) for t in users):
            problems.warn(join(join("gpuPools", index[pool.name]), "fabric"),
                          f"{pool.fabric} pods need Pod Security {fabric.pod_security}, and no team with quota on "
                          f"{pool.name!r} ({', '.join(t.name for t in users)}) sets podSecurity: "
                          f"{fabric.pod_security}: their jobs there run over the pod network; set it on the team that "
                          "trains there, or fabric: none on the pool (docs/fabric.md)")

