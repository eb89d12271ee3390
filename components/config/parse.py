"""Raw `gpu-platform:*` config -> validated PlatformConfig, with every problem reported at once."""
from __future__ import annotations

import re
from datetime import date
from typing import Any

from components import catalog
# A module reference, not a name: labels imports the config model, so it may still be initializing here.
from components.clouds import labels as node_facts
from components.clouds.profiles import PROFILES, CloudProfile
from components.config import capacity
from components.config.errors import Problems
from components.config.fields import DNS1123_LABEL, Section, join
from components.config.model import (
    CAPACITY_TYPES, CLOUDS, DRIVER_OWNERS, ENVIRONMENTS, PRIORITIES, SCHEDULERS, SHARING_MODES, TAINT_EFFECTS, WORKLOADS,
    Cluster, Exemption, Gang, GpuPool, NodePool, Observability, PlatformConfig, Policy, Prometheus, Reclaim, Scheduler,
    Sharing, Slo, Taint, Team,
)

TOP_KEYS = ("cloud", "environment", "cluster", "gpuPools", "scheduler", "teams", "observability", "policy")
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "gpu-operator",
                       "kueue-system", "volcano-system", "monitoring", "gpu-platform-system")
_K8S_VERSION = re.compile(r"1\.\d{2}")
_LABEL_KEY = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_TAINT_STRING = re.compile(r"(?P<key>[^=:]+)(=(?P<value>[^:]*))?:(?P<effect>\w+)")
_MIG_G = re.compile(r"(\d+)g\.")
KUEUE_MAX_TOLERATIONS = 8  # ResourceFlavor.spec.tolerations maxItems in the v1beta2 CRD
_HTTP_URL = re.compile(r"https?://[^\s/]+(/\S*)?")
_CRON = re.compile(r"@(annually|yearly|monthly|weekly|daily|midnight|hourly)|[\d*/,A-Za-z-]+(\s+[\d*/,A-Za-z-]+){4}")


def parse(raw: dict[str, Any]) -> tuple[PlatformConfig | None, Problems]:
    """Validate `raw` (keys without the `gpu-platform:` prefix); the config is None when any error was found."""
    problems = Problems()
    top = Section(raw, "", problems, TOP_KEYS)
    cloud = top.str("cloud", choices=CLOUDS)
    environment = top.str("environment", "development", choices=ENVIRONMENTS)
    prof = PROFILES.get(cloud) if cloud else None
    production = environment == "production"

    cluster = _cluster(top.value("cluster"), prof, production, problems)
    pool_items = top.list("gpuPools", required=True)
    pools = _pools(pool_items, prof, problems)
    declared = {item.get("name") for item in pool_items if isinstance(item, dict)}
    scheduler = _scheduler(top.value("scheduler", {}), problems)
    teams = _teams(top.list("teams", required=True), pools, declared, problems)
    observability = _observability(top.value("observability", {}), problems)
    policy = _policy(top.value("policy", {}), problems)
    _reclaim_opt_ins(top.value("teams", []), teams, observability, problems)
    _one_gpu_operator(pool_items, pools, prof, problems)
    if prof and cluster:
        _cloud_pool_checks(cluster.extras, pool_items, pools, prof, problems)
    _spot_warnings(pools, production, problems)
    _team_quota_rules(pool_items, pools, scheduler, teams, prof, production, problems)
    _scale_from_zero_warnings(pool_items, pools, prof, problems)

    if problems.errors or cluster is None:
        return None, problems
    config = PlatformConfig(
        cloud=cloud, environment=environment, cluster=cluster, gpu_pools=tuple(pools), scheduler=scheduler,
        teams=tuple(teams), observability=observability, policy=policy,
        warnings=tuple(str(w) for w in problems.warnings),
    )
    return config, problems


def _cluster(raw: Any, prof: CloudProfile | None, production: bool, problems: Problems) -> Cluster | None:
    sec = Section(raw, "cluster", problems, ("name", "region", "kubernetesVersion", "existingKubeconfig",
                                            "systemPool", "privateEndpoint", *CLOUDS))
    if raw is None:
        return None
    name = sec.str("name", pattern=DNS1123_LABEL, what="a DNS-1123 label (lowercase letters, digits, '-')")
    if name and len(name) > 40:
        problems.add(sec.at("name"), f"must be at most 40 characters (GKE and AKS limits); got {len(name)}")
    region = sec.str("region")
    version = sec.str("kubernetesVersion", "1.33", pattern=_K8S_VERSION, what="a Kubernetes minor version like \"1.33\"")
    if prof and prof.kubernetes_versions and version and version not in prof.kubernetes_versions:
        problems.add(sec.at("kubernetesVersion"), f"{version!r} is not a version {prof.service} offers here; allowed: "
                                                  f"{', '.join(prof.kubernetes_versions)}")
    kubeconfig = sec.value("existingKubeconfig", None)
    if kubeconfig is not None and not isinstance(kubeconfig, str):
        problems.add(sec.at("existingKubeconfig"), "must be a kubeconfig string (set it with `pulumi config set --secret`)")
    private = sec.bool("privateEndpoint", production)

    sys_sec = Section(sec.value("systemPool", {}), sec.at("systemPool"), problems, ("instanceType", "minNodes", "maxNodes"))
    system = NodePool(
        instance_type=sys_sec.str("instanceType", prof.default_system_instance if prof else ""),
        min_nodes=sys_sec.int("minNodes", 2, minimum=1),
        max_nodes=sys_sec.int("maxNodes", 4, minimum=1),
    )
    if isinstance(system.min_nodes, int) and isinstance(system.max_nodes, int) and system.min_nodes > system.max_nodes:
        problems.add(sys_sec.at("maxNodes"), f"must be >= minNodes ({system.min_nodes}); got {system.max_nodes}")

    extras: dict[str, Any] = {}
    for other in CLOUDS:
        if sec.has(other) and prof and other != prof.name:
            problems.add(sec.at(other), f"is a block for {other}, but this stack's cloud is {prof.name}; "
                                        f"only `cluster.{prof.name}` is allowed")
    if prof:
        extras = _extras(sec.value(prof.name, {}), sec.at(prof.name), prof, problems)
    return Cluster(name=name or "", region=region or "", kubernetes_version=version or "", system_pool=system,
                   existing_kubeconfig=kubeconfig if isinstance(kubeconfig, str) else None,
                   private_endpoint=bool(private), extras=extras)


def _extras(raw: Any, path: str, prof: CloudProfile, problems: Problems) -> dict[str, Any]:
    sec = Section(raw, path, problems, tuple(prof.extras))
    extras = {}
    for key, spec in prof.extras.items():
        if not sec.has(key):
            if spec.required:
                problems.add(sec.at(key), f"is required on {prof.name} ({spec.doc})")
            continue
        value = sec.raw[key]
        if not isinstance(value, spec.kind):
            problems.add(sec.at(key), f"must be a {getattr(spec.kind, '__name__', spec.kind)} ({spec.doc}); got {value!r}")
            continue
        problem = spec.problem(value)
        if problem:
            problems.add(sec.at(key), problem)
            continue
        for other in spec.requires:
            if not sec.has(other):
                problems.add(sec.at(other), f"is required with {key} ({prof.extras[other].doc})")
        extras[key] = value
    return extras


def _pools(items: list[Any], prof: CloudProfile | None, problems: Problems) -> list[GpuPool]:
    if not items and not any(p.path == "gpuPools" for p in problems.errors):
        problems.add("gpuPools", "must list at least one GPU pool")
    pools: list[GpuPool] = []
    cloud_names: dict[str, str] = {}
    for i, item in enumerate(items):
        path = join("gpuPools", i)
        pool = _pool(item, path, prof, problems)
        if pool is None:
            continue
        if any(p.name == pool.name for p in pools):
            problems.add(join(path, "name"), f"duplicate pool name {pool.name!r}")
            continue
        if pool.cloud_name in cloud_names:
            problems.add(join(path, "name"), f"{pool.name!r} and {cloud_names[pool.cloud_name]!r} both become "
                                             f"{prof.service} pool name {pool.cloud_name!r}; rename one")
        cloud_names[pool.cloud_name] = pool.name
        pools.append(pool)
    return pools


def _pool(raw: Any, path: str, prof: CloudProfile | None, problems: Problems) -> GpuPool | None:
    sec = Section(raw, path, problems, ("name", "instanceType", "minNodes", "maxNodes", "capacityType", "workload",
                                        "sharing", "driver", "labels", "taints"))
    name = sec.str("name", pattern=DNS1123_LABEL, what="a DNS-1123 label (lowercase letters, digits, '-')")
    instance_type = sec.str("instanceType")
    min_nodes = sec.int("minNodes", 0, minimum=0)
    max_nodes = sec.int("maxNodes", minimum=1)
    if isinstance(min_nodes, int) and isinstance(max_nodes, int) and min_nodes > max_nodes:
        problems.add(sec.at("maxNodes"), f"must be >= minNodes ({min_nodes}); got {max_nodes}")
    capacity_type = sec.str("capacityType", "on-demand", choices=CAPACITY_TYPES)
    workload = sec.str("workload", "training", choices=WORKLOADS)
    driver = sec.str("driver", prof.default_driver if prof else "managed", choices=DRIVER_OWNERS)
    if prof and driver and driver not in prof.driver_owners:
        problems.add(sec.at("driver"), f"{driver!r} is not supported on {prof.service} ({prof.driver_note}); "
                                       f"allowed: {', '.join(prof.driver_owners)}")
        driver = None
    labels = sec.str_map("labels")
    for key, value in labels.items():
        if not _LABEL_KEY.fullmatch(key) or not _LABEL_VALUE.fullmatch(value) or len(value) > 63:
            problems.add(join(sec.at("labels"), key), f"{key}={value!r} is not a valid Kubernetes label")
    taints = tuple(_taint(t, join(sec.at("taints"), j), problems) for j, t in enumerate(sec.list("taints")))

    instance = None
    if prof and instance_type:
        try:
            instance = catalog.lookup(prof.name, instance_type)
        except catalog.CatalogError as exc:
            problems.add(sec.at("instanceType"), str(exc))
    sharing = _sharing(sec.value("sharing", {}), sec.at("sharing"), instance, prof, problems)
    if prof and instance and sharing and driver:
        _pool_sharing_limits(sharing, driver, instance, sec, prof, problems)

    cloud_name = ""
    if prof and name:
        cloud_name = prof.pool_naming.derive(name)
        if not prof.pool_naming.valid(cloud_name):
            problems.add(sec.at("name"), f"{name!r} becomes {prof.service} pool name {cloud_name!r}, which must match "
                                         f"{prof.pool_naming.pattern}")
    if None in (name, instance, max_nodes, min_nodes, capacity_type, workload, driver, sharing) or None in taints:
        return None
    return GpuPool(name=name, instance_type=instance_type, instance=instance, min_nodes=min_nodes, max_nodes=max_nodes,
                   capacity_type=capacity_type, workload=workload, sharing=sharing, driver=driver, labels=labels,
                   taints=taints, cloud_name=cloud_name)


def _pool_sharing_limits(sharing: Sharing, driver: str, instance, sec: Section, prof: CloudProfile,
                         problems: Problems) -> None:
    """What a cloud can express when its node pool API, not the GPU operator, partitions or shares GPUs."""
    path = sec.at("sharing")
    by_pool = ((sharing.mode == "mig" and prof.mig_via == "pool")
               or (sharing.mode in ("mps", "time-slicing") and prof.sharing_via == "pool"))
    if by_pool and driver == "operator" and prof.pool_sharing_needs_managed_driver:
        problems.add(sec.at("driver"), f"operator cannot be combined with sharing mode {sharing.mode} on {prof.service}: "
                                       f"{prof.service} partitions and shares GPUs through its own driver and device "
                                       "plugin, which driver: operator turns off; use driver: managed")
    limit = prof.max_pool_sharing_replicas
    if by_pool and limit and sharing.replicas and sharing.replicas > limit:
        problems.add(join(path, "replicas"), f"must be <= {limit} on {prof.service}; got {sharing.replicas}")
    if sharing.mode == "mig" and prof.mig_via == "pool":
        _pool_mig_layout(sharing.mig_profile, join(path, "migProfile"), instance.gpu, prof, problems)


def _pool_mig_layout(layout, path: str, gpu, prof: CloudProfile, problems: Problems) -> None:
    field = f"{prof.service} {prof.mig_pool_field}"
    if isinstance(layout, dict) or layout == "all-balanced":
        shown = layout if isinstance(layout, str) else "a custom layout"
        problems.add(path, f"{shown} cannot be expressed on {prof.service}: {field} gives every GPU of a pool one "
                           "profile; use all-<profile>, or one pool per profile")
        return
    name = layout.removeprefix("all-")
    if "+" in name:
        problems.add(path, f"{layout} cannot be expressed on {prof.service}: {field} has no media-extension (+me) "
                           "profiles; use the plain profile")
        return
    if prof.mig_by_slices:
        slices = int(_MIG_G.match(name).group(1))
        reachable = min((p.name for p in gpu.mig_profiles if "+" not in p.name and p.name.startswith(f"{slices}g.")),
                        key=lambda n: int(n.split(".")[1].removesuffix("gb")))
        if reachable != name:
            problems.add(path, f"{layout} cannot be expressed on {prof.service}: {field} MIG{slices}g always "
                               f"creates {reachable} on {gpu.name}; use all-{reachable}")


def _taint(raw: Any, path: str, problems: Problems) -> Taint | None:
    if isinstance(raw, str):
        match = _TAINT_STRING.fullmatch(raw)
        if not match:
            problems.add(path, f"{raw!r} is not a taint; write key=value:Effect or {{key, value, effect}}")
            return None
        raw = match.groupdict()
    sec = Section(raw, path, problems, ("key", "value", "effect"))
    key = sec.str("key", pattern=_LABEL_KEY, what="a valid taint key")
    value = sec.str("value", "", pattern=_LABEL_VALUE, what="a valid taint value")
    effect = sec.str("effect", "NoSchedule", choices=TAINT_EFFECTS)
    if key is None or value is None or effect is None:
        return None
    return Taint(key, value, effect)


def _sharing(raw: Any, path: str, instance, prof: CloudProfile | None, problems: Problems) -> Sharing | None:
    sec = Section(raw, path, problems, ("mode", "migProfile", "replicas"))
    mode = sec.str("mode", "none", choices=SHARING_MODES)
    mig_profile = sec.value("migProfile", None)
    replicas = sec.int("replicas", None, minimum=2)
    if mode is None:
        return None
    if mode != "mig" and mig_profile is not None:
        problems.add(sec.at("migProfile"), f"only applies with mode: mig (this pool has mode: {mode}"
                                           f"{'; MPS does not work on MIG devices' if mode == 'mps' else ''})")
    if mode in ("mps", "time-slicing") and replicas is None and not sec.has("replicas"):
        problems.add(sec.at("replicas"), f"is required with mode: {mode} (clients per GPU, >= 2)")
    if mode not in ("mps", "time-slicing") and sec.has("replicas"):
        problems.add(sec.at("replicas"), f"only applies with mode: mps or time-slicing (this pool has mode: {mode})")
    if mode == "mig":
        mig_profile = _mig_profile(mig_profile, sec.at("migProfile"), instance, prof, problems)
        if mig_profile is None:
            return None
    return Sharing(mode=mode, mig_profile=mig_profile if mode == "mig" else None,
                   replicas=replicas if mode in ("mps", "time-slicing") else None)


def _mig_profile(raw: Any, path: str, instance, prof: CloudProfile | None, problems: Problems):
    if instance is None:
        return None
    gpu = instance.gpu
    if not gpu.supports_mig:
        problems.add(path.rsplit(".", 1)[0] + ".mode",
                     f"mig is not available on {instance.name} ({gpu.name} has no MIG); use none, mps or time-slicing")
        return None
    allowed = [f"all-{p.name}" for p in gpu.mig_profiles] + ["all-balanced"]
    if raw is None:
        problems.add(path, f"is required with mode: mig; allowed for {gpu.name}: {', '.join(allowed)} or {{<profile>: count}}")
        return None
    if isinstance(raw, str):
        if raw not in allowed:
            problems.add(path, f"{raw!r} is not a MIG layout of {gpu.name}; allowed: {', '.join(allowed)}")
            return None
        return raw
    if isinstance(raw, dict) and raw:
        return _custom_layout(raw, path, gpu, problems)
    problems.add(path, f"must be one of {', '.join(allowed)} or a mapping {{<profile>: count}}; got {raw!r}")
    return None


def _custom_layout(raw: dict, path: str, gpu, problems: Problems) -> dict[str, int] | None:
    names = [p.name for p in gpu.mig_profiles]
    ok = True
    for name, count in raw.items():
        profile = gpu.mig_profile(str(name))
        if profile is None:
            problems.add(join(path, str(name)), f"not a MIG profile of {gpu.name}; allowed: {', '.join(names)}")
            ok = False
        elif isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= profile.max_per_gpu:
            problems.add(join(path, str(name)), f"count must be 1..{profile.max_per_gpu} per GPU; got {count!r}")
            ok = False
    if not ok:
        return None
    # A GPU has a fixed number of compute slices (7, or 4 on A30): the layout must fit in them.
    slices = max(int(_MIG_G.match(n).group(1)) for n in names)
    used = sum(int(_MIG_G.match(n).group(1)) * c for n, c in raw.items())
    if used > slices:
        problems.add(path, f"uses {used} compute slices but a {gpu.name} has {slices}")
        return None
    return {str(k): v for k, v in raw.items()}


def _scheduler(raw: Any, problems: Problems) -> Scheduler:
    sec = Section(raw, "scheduler", problems, ("kind", "gang", "fairSharing", "allowOvercommit"))
    gang = Section(sec.value("gang", {}), sec.at("gang"), problems, ("enabled", "timeout", "recoveryTimeout"))
    return Scheduler(
        kind=sec.str("kind", "kueue", choices=SCHEDULERS),
        gang=Gang(enabled=gang.bool("enabled", True), timeout_s=gang.duration("timeout", 600),
                  recovery_timeout_s=gang.duration("recoveryTimeout", None)),
        fair_sharing=sec.bool("fairSharing", True),
        allow_overcommit=bool(sec.bool("allowOvercommit", False)),
    )


def _teams(items: list[Any], pools: list[GpuPool], declared: set, problems: Problems) -> list[Team]:
    if not items and not any(p.path == "teams" for p in problems.errors):
        problems.add("teams", "must list at least one team")
    strategy = capacity.mig_strategy(pools)
    by_name = {p.name: p for p in pools}
    teams: list[Team] = []
    for i, item in enumerate(items):
        path = join("teams", i)
        sec = Section(item, path, problems, ("name", "quotas", "borrowingLimit", "lendingLimit", "priority", "groups",
                                             "reclaim"))
        name = sec.str("name", pattern=DNS1123_LABEL, what="a DNS-1123 label (it becomes the team's namespace)")
        if name in RESERVED_NAMESPACES:
            problems.add(sec.at("name"), f"{name!r} is a reserved namespace; reserved: {', '.join(RESERVED_NAMESPACES)}")
        if name and any(t.name == name for t in teams):
            problems.add(sec.at("name"), f"duplicate team name {name!r}")
        quotas = _quotas(sec.value("quotas"), sec.at("quotas"), by_name, declared, strategy, problems)
        team = Team(
            name=name or "", quotas=quotas,
            borrowing_limit=sec.int("borrowingLimit", None, minimum=0),
            lending_limit=sec.int("lendingLimit", None, minimum=0),
            priority=sec.str("priority", "normal", choices=PRIORITIES) or "normal",
            groups=tuple(sec.str_list("groups")),
            reclaim=bool(sec.bool("reclaim", False)),
        )
        teams.append(team)
    return teams


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


def _team_quota_rules(pool_items: list[Any], pools: list[GpuPool], scheduler: Scheduler, teams: list[Team],
                      prof: CloudProfile | None, production: bool, problems: Problems) -> None:
    """What teams' quotas mean together: a cohort to borrow from, quota that can be lent or reached, pool capacity."""
    strategy = capacity.mig_strategy(pools)
    index = {item.get("name"): i for i, item in enumerate(pool_items) if isinstance(item, dict)}
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
    if scheduler.kind == "kueue" and prof:
        for pool in pools:
            taints = len(node_facts.pool_taints(pool, prof))
            if taints > KUEUE_MAX_TOLERATIONS:
                problems.add(join(join("gpuPools", index[pool.name]), "taints"),
                             f"pool {pool.name!r} carries {taints} taints but a Kueue ResourceFlavor holds at most "
                             f"{KUEUE_MAX_TOLERATIONS} tolerations; drop extra taints")
    if scheduler.kind == "volcano":
        for i, team in enumerate(teams):
            if team.name == "root":
                problems.add(join(join("teams", i), "name"), "'root' is Volcano's own root queue; choose another name")


def _observability(raw: Any, problems: Problems) -> Observability:
    sec = Section(raw, "observability", problems, ("dcgm", "prometheus", "slo", "reclaim"))
    prom = Section(sec.value("prometheus", {}), sec.at("prometheus"), problems,
                   ("install", "namespace", "releaseLabel", "url"))
    slo = Section(sec.value("slo", {}), sec.at("slo"), problems, ("minUtilization", "idleMinutes", "pendingMinutes"))
    observability = Observability(
        dcgm=sec.bool("dcgm", True),
        prometheus=Prometheus(
            install=prom.bool("install", True),
            namespace=prom.str("namespace", "monitoring", pattern=DNS1123_LABEL, what="a namespace name"),
            release_label=prom.str("releaseLabel", "kube-prometheus-stack"),
            url=prom.str("url", None, pattern=_HTTP_URL, what="an http:// or https:// URL"),
        ),
        slo=Slo(min_utilization=slo.number("minUtilization", 0.5, 0.0, 1.0),
                idle_minutes=slo.int("idleMinutes", 30, minimum=1),
                pending_minutes=slo.int("pendingMinutes", 60, minimum=1)),
        reclaim=_reclaim(sec.value("reclaim", {}), sec.at("reclaim"), problems),
    )
    if observability.reclaim.enabled:
        if observability.dcgm is False:
            problems.add(join(sec.at("reclaim"), "enabled"), "needs observability.dcgm: true (idle GPUs are measured by DCGM)")
        if observability.prometheus.install is False and observability.prometheus.url is None:
            problems.add(prom.at("url"), "is required when observability.reclaim.enabled and prometheus.install is "
                                         "false: the reclaimer asks that Prometheus which GPUs are idle")
    return observability


def _reclaim(raw: Any, path: str, problems: Problems) -> Reclaim:
    sec = Section(raw, path, problems, ("enabled", "dryRun", "schedule"))
    return Reclaim(
        enabled=bool(sec.bool("enabled", False)),
        dry_run=sec.bool("dryRun", True) is not False,  # anything but an explicit false stays a dry run
        schedule=sec.str("schedule", "*/10 * * * *", pattern=_CRON,
                         what="a cron schedule like \"*/10 * * * *\" or @hourly") or "*/10 * * * *",
    )


def _reclaim_opt_ins(items: Any, teams: list[Team], observability: Observability, problems: Problems) -> None:
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


def _policy(raw: Any, problems: Problems) -> Policy:
    """Exemptions are checked by the policy pack (a bad one is a finding there), so only their shape is read here."""
    sec = Section(raw, "policy", problems, ("exemptions",))
    exemptions = []
    malformed = []
    for i, item in enumerate(sec.list("exemptions")):
        path = join("policy.exemptions", i)
        local = Problems()
        ex = Section(item, path, local, ("rule", "resource", "reason", "expires"))
        rule, resource, reason = ex.str("rule"), ex.str("resource"), ex.str("reason")
        expires = ex.value("expires")
        if isinstance(expires, str):
            try:
                expires = date.fromisoformat(expires)
            except ValueError:
                local.add(ex.at("expires"), f"must be a date YYYY-MM-DD; got {expires!r}")
        elif expires is not None and not isinstance(expires, date):
            local.add(ex.at("expires"), f"must be a date YYYY-MM-DD; got {expires!r}")
        if local.errors:
            malformed.extend(local.errors)
        else:
            exemptions.append(Exemption(rule=rule, resource=resource, reason=reason, expires=expires))
    return Policy(exemptions=tuple(exemptions), malformed=tuple(malformed))


def _one_gpu_operator(items: list[Any], pools: list[GpuPool], prof: CloudProfile | None, problems: Problems) -> None:
    """One GPU Operator serves every pool: its cluster-wide settings must mean the same on all of them."""
    if prof is None:
        return
    index = {item.get("name"): i for i, item in enumerate(items) if isinstance(item, dict)}
    if prof.managed_driver_root and len({p.driver for p in pools}) > 1:
        for pool in pools:
            if pool.driver != prof.default_driver:
                problems.add(join(join("gpuPools", index[pool.name]), "driver"),
                             f"{pool.driver} cannot be mixed with {prof.default_driver} pools on {prof.service}: the "
                             f"operator reads {prof.service}-installed drivers from {prof.managed_driver_root} "
                             "cluster-wide; give every GPU pool the same driver owner")
    if prof.mig_via != "operator":
        return
    layouts: dict[str, GpuPool] = {}
    for pool in pools:
        if pool.sharing.mode != "mig":
            continue
        path = join(join(join("gpuPools", index[pool.name]), "sharing"), "migProfile")
        name = pool.sharing.mig_config_name
        first = layouts.setdefault(name, pool)
        layout, first_layout = pool.sharing.mig_layout(pool.instance), first.sharing.mig_layout(first.instance)
        if layout != first_layout:
            problems.add(path, f"{name} is {layout} on {pool.instance.gpu.name} but {first_layout} on pool "
                               f"{first.name!r} ({first.instance.gpu.name}), and mig-manager looks layouts up by "
                               "name cluster-wide; give one of them an explicit {<profile>: count} layout")


def _cloud_pool_checks(extras: dict[str, Any], items: list[Any], pools: list[GpuPool], prof: CloudProfile,
                       problems: Problems) -> None:
    """Pools against the cloud: labels it refuses, what the chosen GPU image runs, reservations reserved pools need."""
    index = {item.get("name"): i for i, item in enumerate(items) if isinstance(item, dict)}
    extras_path = f"cluster.{prof.name}"
    if prof.gpu_image_key:
        image_type = extras.get(prof.gpu_image_key, next(iter(prof.gpu_images)))
        image = prof.gpu_images[image_type]
        for pool in pools:
            if pool.sharing.mode not in image.sharing_modes:
                problems.add(join(join(join("gpuPools", index[pool.name]), "sharing"), "mode"),
                             f"{pool.sharing.mode} is not available on {extras_path}.{prof.gpu_image_key} {image_type} "
                             f"({image.note}); allowed: {', '.join(image.sharing_modes)}")
    for pool in pools:
        for key in pool.labels:
            domain = key.split("/", 1)[0] if "/" in key else ""
            if any(domain == d or domain.endswith(f".{d}") for d in prof.reserved_label_domains):
                problems.add(join(join(join("gpuPools", index[pool.name]), "labels"), key),
                             f"{prof.service} refuses node labels in {', '.join(prof.reserved_label_domains)} "
                             "(or their subdomains); use your own domain")
    if prof.reservations_key:
        reservations = extras.get(prof.reservations_key, {})
        reserved = {p.name for p in pools if p.capacity_type == "reserved"}
        for name in sorted(reserved - set(reservations)):
            problems.add(join(join("gpuPools", index[name]), "capacityType"),
                         f"reserved on {prof.service} needs {extras_path}.{prof.reservations_key}.{name} "
                         f"({prof.extras[prof.reservations_key].doc})")
        for name in reservations:
            if name not in reserved:
                problems.add(join(join(extras_path, prof.reservations_key), str(name)),
                             f"no reserved GPU pool named {name!r}; reserved pools: {', '.join(sorted(reserved)) or '(none)'}")


def _spot_warnings(pools: list[GpuPool], production: bool, problems: Problems) -> None:
    for i, pool in enumerate(pools):
        if production and pool.capacity_type == "spot" and pool.min_nodes > 0:
            problems.warn(join(join("gpuPools", i), "minNodes"),
                          f"spot pool {pool.name!r} keeps {pool.min_nodes} node(s) warm in production; spot capacity "
                          "can vanish, so warm spares are usually wasted: consider minNodes: 0")


def _scale_from_zero_warnings(items: list[Any], pools: list[GpuPool], prof: CloudProfile | None,
                              problems: Problems) -> None:
    """Pools the Cluster Autoscaler cannot start from zero nodes for the resources their pods ask for."""
    if not (prof and prof.autoscaler_template_whole_gpus):
        return
    index = {item.get("name"): i for i, item in enumerate(items) if isinstance(item, dict)}
    strategy = capacity.mig_strategy(pools)
    for pool in pools:
        unseen = sorted(set(capacity.pool_units(pool, strategy)) - {capacity.GPU_RESOURCE})
        if pool.min_nodes == 0 and unseen:
            problems.warn(join(join("gpuPools", index[pool.name]), "minNodes"),
                          f"pool {pool.name!r} starts at 0 nodes but its pods ask for {', '.join(unseen)}; the "
                          f"{prof.service} Cluster Autoscaler only knows a pool's whole GPUs before its first node "
                          "exists, so such pods never trigger one: set minNodes: 1")
