"""Raw `gpu-platform:*` config -> validated PlatformConfig, with every problem reported at once."""
from __future__ import annotations

import ipaddress
import re
from datetime import date
from typing import Any

from components.clouds.profiles import PROFILES, CloudProfile
from components.config.errors import Problems
from components.config.fields import DNS1123_LABEL, Section, join
from components.config.model import (
    CLOUDS, ENVIRONMENTS, Cluster, Exemption, NodePool, Observability, PlatformConfig, Policy, Prometheus, Reclaim, Slo,
)
from components.config.pools import (
    cloud_pool_checks, one_gpu_operator, read_pools, scale_from_zero_warnings, spot_warnings,
)
from components.config.teams import (
    read_scheduler, read_teams, reclaim_opt_ins, team_principal_checks, team_quota_rules,
)
from components.config.training import topology_checks

TOP_KEYS = ("cloud", "environment", "cluster", "gpuPools", "scheduler", "teams", "observability", "policy")
_K8S_VERSION = re.compile(r"1\.\d{2}")
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
    pools = read_pools(pool_items, prof, problems)
    declared = {item.get("name") for item in pool_items if isinstance(item, dict)}
    scheduler = read_scheduler(top.value("scheduler", {}), problems)
    teams = read_teams(top.list("teams", required=True), pools, declared, problems)
    observability = _observability(top.value("observability", {}), problems)
    policy = read_policy(top.value("policy", {}), problems)
    reclaim_opt_ins(top.value("teams", []), teams, observability, problems)
    team_principal_checks(teams, prof, bool(cluster and cluster.adopted), problems)
    one_gpu_operator(pool_items, pools, prof, problems)
    if prof and cluster:
        cloud_pool_checks(cluster.extras, pool_items, pools, prof, problems)
    spot_warnings(pools, production, problems)
    team_quota_rules(pool_items, pools, scheduler, teams, prof, production, problems)
    scale_from_zero_warnings(pool_items, pools, prof, problems)
    topology_checks(pool_items, pools, scheduler, teams, prof, problems)

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
                                            "systemPool", "privateEndpoint", "authorizedNetworks", *CLOUDS))
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
    networks = _authorized_networks(sec, prof, production, bool(private), problems)

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
                   private_endpoint=bool(private), authorized_networks=networks, extras=extras)


def _authorized_networks(sec: Section, prof: CloudProfile | None, production: bool, private: bool,
                         problems: Problems) -> tuple[str, ...]:
    """cluster.authorizedNetworks: IPv4 CIDRs that may reach the API endpoint; a public production endpoint needs them."""
    path = sec.at("authorizedNetworks")
    networks = []
    for i, value in enumerate(sec.str_list("authorizedNetworks")):
        try:
            net = ipaddress.IPv4Network(value)
        except ValueError:
            try:
                problems.add(join(path, i), f"{value!r} has host bits set; the network is "
                                            f"{ipaddress.IPv4Network(value, strict=False)}")
            except ValueError:
                problems.add(join(path, i), f"{value!r} is not an IPv4 CIDR like 203.0.113.0/24")
            continue
        if production and net.prefixlen == 0:
            problems.add(join(path, i), f"{value} opens the API endpoint to the whole internet; in production list "
                                        "your own networks")
            continue
        networks.append(str(net))
    if networks and sec.has("existingKubeconfig"):
        problems.add(path, "is applied to a cluster this stack creates; with cluster.existingKubeconfig limit the "
                           "endpoint where that cluster is managed")
    elif networks and private and prof and prof.authorized_networks_public_only:
        problems.add(path, f"limits a public endpoint only on {prof.service}, and cluster.privateEndpoint is true; "
                           "remove it or set privateEndpoint: false")
    if production and not private and not sec.has("existingKubeconfig") and not sec.raw.get("authorizedNetworks"):
        problems.add(path, "is required in production when cluster.privateEndpoint is false: list the IPv4 CIDRs "
                           "that may reach the public API endpoint, e.g. [203.0.113.0/24]")
    return tuple(networks)


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


def read_policy(raw: Any, problems: Problems) -> Policy:
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


