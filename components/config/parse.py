"""Raw `gpu-platform:*` config -> validated PlatformConfig, with every problem reported at once."""
from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit
from typing import Any

from components import catalog
from components.clouds import PROFILES
from components.clouds.facts import DEFAULT_KUBERNETES_VERSION, CloudProfile
from components.config.access import team_group_rules
from components.config.endpoint import KEY as ENDPOINT_KEY
from components.config.endpoint import min_prefixes, named_network_checks
from components.config.errors import Problems
from components.config.fabric import fabric_extras_checks
from components.config.fields import DNS1123_LABEL, DNS1123_WHAT, Section, join, name_index
from components.config.model import (
    CLOUDS, ENVIRONMENTS, Cluster, GpuPool, NodePool, Observability, PlatformConfig, Policy, Prometheus, Reclaim, Slo,
    default,
)
from components.config.pools import (
    cloud_pool_checks, one_gpu_operator, read_pools, scale_from_zero_warnings, spot_warnings,
)
from components.config.teams import (
    RESERVED_NAMESPACES, auto_fabrics_teams_can_use, fabric_pod_security, host_access_single_tenant, read_scheduler,
    read_teams, reclaim_opt_ins, team_principal_checks, team_quota_rules,
)
from components.config.cron import cron_problem
from components.config.quota_reach import quota_reach_warnings
from components.config.tables import region_check, version_check
from components.config.zonal import per_zone_start_checks
from components.provisioning.kinds import KINDS as PROVISIONERS
from components.provisioning.registry import ProvisioningStack
from policies.exemptions import POLICY_KEYS
from policies.exemptions import read_policy as read_exemption_policy
from components.config.training import topology_checks

TOP_KEYS = ("cloud", "environment", "cluster", "gpuPools", "scheduler", "teams", "observability", "policy")
_K8S_VERSION = re.compile(r"1\.\d{2}(\.\d+)?")
_HTTP_URL = re.compile(r"https?://[^\s/]+(/\S*)?")
_HOST_LABEL = r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
_HOST = re.compile(rf"{_HOST_LABEL}(\.{_HOST_LABEL})*|\[[0-9A-Fa-f:.]+\]")  # a DNS name, an IPv4 or an [IPv6]


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
    pools = read_pools(pool_items, prof, problems, _zone_count(cluster, prof))
    if prof and cluster:
        pools = _provisioned_pools(cluster.extras, pool_items, pools, prof)
    declared = set(name_index(pool_items))
    scheduler = read_scheduler(top.value("scheduler", {}), problems)
    teams = read_teams(top.list("teams", required=True), pools, declared, problems)
    if prof:
        pools = auto_fabrics_teams_can_use(pool_items, pools, teams, prof, problems)
    observability = _observability(top.value("observability", {}), problems)
    _namespaces(observability, teams, problems)
    policy = read_policy(top.value("policy", {}), problems)
    if prof and cluster:
        raw_cluster = top.raw.get("cluster") if isinstance(top.raw.get("cluster"), dict) else {}
        named_network_checks(raw_cluster.get("authorizedNetworks"), min_prefixes(raw_cluster.get(ENDPOINT_KEY),
                                                                                 problems),
                             cluster, prof, policy, production, problems)
    reclaim_opt_ins(top.value("teams", []), teams, observability, problems)
    host_access_single_tenant(teams, problems)
    team_principal_checks(teams, prof, bool(cluster and cluster.adopted), problems)
    one_gpu_operator(pool_items, pools, prof, problems)
    if prof and cluster:
        cloud_pool_checks(cluster.extras, pool_items, pools, prof, problems)
        fabric_extras_checks(cluster.extras, cluster.adopted, pool_items, pools, prof, problems)
        per_zone_start_checks(cluster, pool_items, pools, prof, problems)
    if prof:
        _provisioner_checks(ProvisioningStack(cluster.extras if cluster else None,
                                              cluster.kubernetes_minor if cluster else "", pool_items, pools, prof,
                                              scheduler), problems)
    if prof and cluster:
        team_group_rules(cluster, teams, prof, problems)
    if prof:
        fabric_pod_security(pool_items, pools, teams, prof, problems)
    spot_warnings(pools, production, problems)
    team_quota_rules(pool_items, pools, scheduler, teams, prof, production, problems)
    if scheduler.kind and not problems.errors:  # reach is only worth reading on otherwise valid pools and teams
        quota_reach_warnings(pools, scheduler, teams, problems)
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
                                            "systemPool", "privateEndpoint", "authorizedNetworks", ENDPOINT_KEY,
                                            *CLOUDS))
    if raw is None:
        return None
    # Each cloud's own rule: an EKS name may hold what GKE refuses (upper case, '_', up to 100 characters).
    name = sec.str("name")
    if name and prof and not re.fullmatch(prof.cluster_name_pattern, name):
        problems.add(sec.at("name"), f"{name!r:.110} is not a {prof.service} cluster name ({prof.cluster_name_doc}; "
                                     f"got {len(name)} characters)")
    region = _cloud_format(sec, "region", prof, "region_pattern", "region_example", "region")
    if region and prof:
        region_check(sec.at("region"), region, prof, problems)
    region = sec.str("region")
    version = sec.str("kubernetesVersion", DEFAULT_KUBERNETES_VERSION, pattern=_K8S_VERSION,
                      what=f"a Kubernetes version like \"{DEFAULT_KUBERNETES_VERSION}\" or \"1.35.2\"")
    kubeconfig = sec.value("existingKubeconfig", None)
    if kubeconfig is not None and not isinstance(kubeconfig, str):
        problems.add(sec.at("existingKubeconfig"), "must be a kubeconfig string (set it with `pulumi config set --secret`)")
    # An adopted cluster already runs whatever version it runs; only a cluster we create must be on a creatable one.
    if prof and kubeconfig is None and version and not version_check(sec.at("kubernetesVersion"), version, prof,
                                                                       problems):
        version = None
    private = sec.bool("privateEndpoint", production)
    networks = _authorized_networks(sec, prof, production, bool(private), problems)

    extras: dict[str, Any] = {}
    for other in CLOUDS:
        if sec.has(other) and prof and other != prof.name:
            problems.add(sec.at(other), f"is a block for {other}, but this stack's cloud is {prof.name}; "
                                        f"only `cluster.{prof.name}` is allowed")
    if prof:
        extras = _extras(sec.value(prof.name, {}), sec.at(prof.name), prof, region, problems)

    sys_sec = Section(sec.value("systemPool", {}), sec.at("systemPool"), problems, ("instanceType", "minNodes", "maxNodes"))
    system_type = sys_sec.raw.get("instanceType")
    if prof and isinstance(system_type, str) and system_type in {t.name for t in catalog.instance_types(prof.name)}:
        problems.add(sys_sec.at("instanceType"), f"{sys_sec.raw['instanceType']} is a GPU instance type; the system "
                                                 "pool runs the platform's controllers on CPU nodes (GPU pools are "
                                                 "gpuPools)")
    pool_limit, why = prof.pool_node_limit(len(extras.get(prof.zones_key) or ())) if prof else (None, "")
    system = NodePool(
        instance_type=_cloud_format(sys_sec, "instanceType", prof, "instance_type_pattern", "instance_type_example",
                                    "instance type", prof.default_system_instance if prof else None) or "",
        min_nodes=sys_sec.int("minNodes", default(NodePool, "min_nodes"), minimum=1, maximum=pool_limit or 1000,
                              why=why),
        max_nodes=sys_sec.int("maxNodes", default(NodePool, "max_nodes"), minimum=1, maximum=pool_limit or 1000,
                              why=why),
    )
    if isinstance(system.min_nodes, int) and isinstance(system.max_nodes, int) and system.min_nodes > system.max_nodes:
        problems.add(sys_sec.at("maxNodes"), f"must be >= minNodes ({system.min_nodes}); got {system.max_nodes}")

    if kubeconfig is not None:
        _adopted_warnings(sec, prof, problems)
    return Cluster(name=name or "", region=region or "", kubernetes_version=version or "", system_pool=system,
                   existing_kubeconfig=kubeconfig if isinstance(kubeconfig, str) else None,
                   private_endpoint=bool(private), authorized_networks=networks, extras=extras)


def _provisioned_pools(extras: dict[str, Any], pool_items: list[Any], pools: list[GpuPool],
                       prof: CloudProfile) -> list[GpuPool]:
    """The pools as every registered provisioner can make them (components/provisioning/kinds.py)."""
    for kind in PROVISIONERS.values():
        resolve = kind.checks().resolve_pools if kind.checks else None
        if resolve:
            pools = resolve(extras, pool_items, pools, prof)
    return pools


def _provisioner_checks(stack: ProvisioningStack, problems: Problems) -> None:
    """Every registered provisioner's checks, each deciding whether the stack uses it."""
    for kind in PROVISIONERS.values():
        if kind.checks:
            kind.checks().check(stack, problems)


def _zone_count(cluster: Cluster | None, prof: CloudProfile | None) -> int:
    """How many zones a pool spans: those of the cloud's zone list (GKE), else one for the per-pool limit."""
    zones = cluster.extras.get(prof.zones_key) if cluster and prof and prof.zones_key else None
    return len(zones) if zones else 1


def _authorized_networks(sec: Section, prof: CloudProfile | None, production: bool, private: bool,
                         problems: Problems) -> tuple[str, ...]:
    """cluster.authorizedNetworks: CIDRs that may reach the API endpoint (IPv6 where the cloud's allow-list takes
    them); a public production endpoint needs them."""
    path = sec.at("authorizedNetworks")
    ipv6 = bool(prof and prof.authorized_networks_ipv6)
    kinds = ("an IPv4 or IPv6 CIDR like 203.0.113.0/24 or 2001:db8:1::/48" if ipv6
             else "an IPv4 CIDR like 203.0.113.0/24")
    networks = []
    for i, value in enumerate(sec.str_list("authorizedNetworks")):
        try:
            net = ipaddress.ip_network(value)
        except ValueError:
            try:
                problems.add(join(path, i), f"{value!r} has host bits set; the network is "
                                            f"{ipaddress.ip_network(value, strict=False)}")
            except ValueError:
                problems.add(join(path, i), f"{value!r} is not {kinds}")
            continue
        if net.version == 6 and not ipv6:
            problems.add(join(path, i), f"{value} is IPv6, which {prof.service if prof else 'this cloud'} does not "
                                        f"take here; use {kinds}")
            continue
        if production and net.prefixlen == 0:
            problems.add(join(path, i), f"{value} opens the API endpoint to the whole internet; in production list "
                                        "your own networks")
            continue
        networks.append(str(net))
    if networks and sec.has("existingKubeconfig"):
        problems.warn(path, "does nothing with cluster.existingKubeconfig (the stack creates no cluster); limit the "
                            "endpoint where that cluster is managed")
    elif networks and private and prof and prof.authorized_networks_public_only:
        problems.add(path, f"limits a public endpoint only on {prof.service}, and cluster.privateEndpoint is true; "
                           "remove it or set privateEndpoint: false")
    # Outside production an open endpoint is a warning here and a failing GPU013 in `check` (exemptable): a dev
    # cluster holds the same cloud credentials and GPU quota, and is scanned just as fast.
    if not private and not sec.has("existingKubeconfig") and not sec.raw.get("authorizedNetworks"):
        (problems.add if production else problems.warn)(
            path, "is required when cluster.privateEndpoint is false (the default outside production): list the "
                  "IPv4 CIDRs that may reach the public API endpoint, e.g. [203.0.113.0/24]")
    return tuple(networks)


def _cloud_format(sec: Section, key: str, prof: CloudProfile | None, pattern: str, example: str, what: str,
                  default: Any = None) -> str | None:
    """A string the stack's cloud must recognise as its own: a GKE stack with region us-east-1 is refused here."""
    value = sec.str(key) if default is None else sec.str(key, default)
    if value and prof and not re.fullmatch(getattr(prof, pattern), value):
        sec.problems.add(sec.at(key), f"{value!r:.80} is not a {prof.service} {what} (like "
                                      f"{getattr(prof, example)}); is it from another cloud?")
        return None
    return value


def _adopted_warnings(sec: Section, prof: CloudProfile | None, problems: Problems) -> None:
    """An adopted cluster is only reached through its kubeconfig: keys that shape a created cluster do nothing."""
    for key in ("privateEndpoint", "systemPool", *([prof.name] if prof else [])):
        if sec.has(key):
            problems.warn(sec.at(key), "has no effect with cluster.existingKubeconfig: an adopted cluster is not "
                                       "created or changed; remove it")


def _extras(raw: Any, path: str, prof: CloudProfile, region: str | None, problems: Problems) -> dict[str, Any]:
    sec = Section(raw, path, problems, tuple(prof.extras))
    extras = {}
    for key, spec in prof.extras.items():
        if not sec.has(key):
            if spec.required:
                problems.add(sec.at(key), f"is required on {prof.name} ({spec.doc})")
            continue
        value = sec.raw[key]
        if isinstance(value, str) and not value.strip():
            problems.add(sec.at(key), f"must not be empty ({spec.doc})")
            continue
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
        for other in spec.conflicts:
            if sec.has(other):
                problems.add(sec.at(key), f"cannot be set with {other}: {key} is for {spec.doc}")
        if spec.zones and prof.zone_pattern and region:
            zone = prof.zone_pattern.format(region=re.escape(region))
            for below, name in spec.zones(value):
                if not re.fullmatch(zone, name):
                    problems.add(join(sec.at(key), below), f"{name!r:.80} is not a zone of cluster.region {region}")
        extras[key] = value
    return extras


def _observability(raw: Any, problems: Problems) -> Observability:
    sec = Section(raw, "observability", problems, ("dcgm", "prometheus", "slo", "reclaim"))
    prom = Section(sec.value("prometheus", {}), sec.at("prometheus"), problems,
                   ("install", "namespace", "releaseLabel", "url"))
    slo = Section(sec.value("slo", {}), sec.at("slo"), problems, ("minUtilization", "idleMinutes", "pendingMinutes"))
    observability = Observability(
        dcgm=sec.bool("dcgm", default(Observability, "dcgm")),
        prometheus=Prometheus(
            install=prom.bool("install", default(Prometheus, "install")),
            namespace=prom.str("namespace", default(Prometheus, "namespace"), pattern=DNS1123_LABEL,
                               what=f"a namespace name ({DNS1123_WHAT})"),
            release_label=_label_value(prom, "releaseLabel", "kube-prometheus-stack"),
            url=_url(prom, "url"),
        ),
        slo=Slo(min_utilization=slo.number("minUtilization", default(Slo, "min_utilization"), 0.0, 1.0),
                idle_minutes=slo.int("idleMinutes", default(Slo, "idle_minutes"), minimum=1, maximum=7 * 24 * 60,
                                     why="a week"),
                pending_minutes=slo.int("pendingMinutes", default(Slo, "pending_minutes"), minimum=1,
                                        maximum=7 * 24 * 60, why="a week")),
        reclaim=_reclaim(sec.value("reclaim", {}), sec.at("reclaim"), problems),
    )
    if observability.reclaim.enabled:
        if observability.dcgm is False:
            problems.add(join(sec.at("reclaim"), "enabled"), "needs observability.dcgm: true (idle GPUs are measured by DCGM)")
        if observability.prometheus.install is False and observability.prometheus.url is None:
            problems.add(prom.at("url"), "is required when observability.reclaim.enabled and prometheus.install is "
                                         "false: the reclaimer asks that Prometheus which GPUs are idle")
    return observability


def _label_value(sec: Section, key: str, default: str) -> str | None:
    from components.config.pools import LABEL_VALUE

    return sec.str(key, default, pattern=LABEL_VALUE,
                   what="a Kubernetes label value (at most 63 letters, digits, '-', '_', '.')")


def _url(sec: Section, key: str) -> str | None:
    url = sec.str(key, None, pattern=_HTTP_URL, what="an http:// or https:// URL")
    if url is None:
        return None
    try:
        parts = urlsplit(url)  # an unbalanced [ or ] in the host raises ValueError("Invalid IPv6 URL")
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        sec.problems.add(sec.at(key), f"{url!r:.120} is not an http(s) URL with a valid host and port 1-65535")
        return None
    host = parts.netloc.rpartition("@")[2]
    host = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    if not port_ok or not _HOST.fullmatch(host) or len(host) > 253:
        sec.problems.add(sec.at(key), f"{url!r:.120} is not an http(s) URL with a valid host and port 1-65535")
        return None
    return url


def _namespaces(observability: Observability, teams: list, problems: Problems) -> None:
    """Prometheus gets a namespace of its own: a team's `edit` there would read the Grafana admin Secret and
    Prometheus' credentials, and the team's default-deny NetworkPolicy would cut Prometheus off."""
    namespace = observability.prometheus.namespace
    if not namespace:
        return
    platform = [n for n in RESERVED_NAMESPACES if n != default(Prometheus, "namespace")]
    if namespace in platform:
        problems.add("observability.prometheus.namespace", f"{namespace!r} is a platform namespace; choose another "
                                                           f"(platform namespaces: {', '.join(platform)})")
    for i, team in enumerate(teams):
        if team.name == namespace:
            problems.add(join(join("teams", i), "name"), f"{namespace!r} is observability.prometheus.namespace, a "
                                                         "platform namespace holding the Grafana admin Secret; "
                                                         "rename the team or move Prometheus")


def _reclaim(raw: Any, path: str, problems: Problems) -> Reclaim:
    sec = Section(raw, path, problems, ("enabled", "dryRun", "schedule"))
    schedule = sec.str("schedule", "*/10 * * * *")
    problem = cron_problem(schedule) if schedule else None
    if problem:
        problems.add(sec.at("schedule"), f"{schedule!r:.80} is not a cron schedule like \"*/10 * * * *\" or "
                                         f"@hourly: {problem}")
    return Reclaim(
        enabled=bool(sec.bool("enabled", default(Reclaim, "enabled"))),
        # Anything but an explicit false stays a dry run.
        dry_run=sec.bool("dryRun", default(Reclaim, "dry_run")) is not False,
        schedule=schedule or "*/10 * * * *",
    )


def read_policy(raw: Any, problems: Problems) -> Policy:
    """The policy pack reads and judges exemptions (a bad one is a GPU000 finding there); only the block's keys
    are checked here."""
    Section(raw, "policy", problems, POLICY_KEYS)
    policy = read_exemption_policy(raw)
    # A bad lifetime setting is the stack's error, not one exemption's: refuse the stack (exit 2).
    for problem in policy.malformed:
        if problem.path == "policy.maxExemptionDays":
            problems.add(problem.path, problem.message)
    return policy


