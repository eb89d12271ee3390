"""Kueue: the pinned chart with gang admission and fair sharing, a ResourceFlavor per GPU pool, and a
ClusterQueue plus a `default` LocalQueue per team, all in `kueue.x-k8s.io/v1beta2`.

Queues count only GPU resources: CPU, memory and storage are excluded from Kueue's quota check, so a GPU job is
never blocked on a resource no queue declares, and a CPU-only job is admitted without pinning a GPU pool.
"""
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import pulumi
import pulumi_kubernetes.meta.v1 as meta
import pulumi_kubernetes.rbac.v1 as rbac
import yaml
from pulumi_kubernetes.apiextensions import CustomResource
from pulumi_kubernetes.helm.v3 import Release, ReleaseArgs

from components.args import fill_defaults
from components.args_checks import check_args
from components.clouds import profile
from components.config.fabric import fabric_resources
from components.config.labels import POOL_LABEL, pool_taints
from components.config.model import GpuPool, PlatformConfig, Team
from components.scheduling.kueue import provisioning
from components.scheduling import topology
from components.scheduling.framework_catalog import kueue_integrations
from components.scheduling.kueue.facts import KIND
from components.config.priority_levels import LEVELS
from components.config.shares import COHORT, PoolShare, has_cohort, team_shares, team_weight
from components.tenancy.team import RBAC_GROUP, TEAM_LABEL
from components.system_pool import tolerating

if TYPE_CHECKING:
    from components.context import Context
    from components.tenancy.team import Team as TeamNamespace

CHART, VERSION, NAMESPACE, API = KIND.chart, KIND.version, KIND.namespace, KIND.api
LOCAL_QUEUE = KIND.local_queue
USER_ROLE = "kueue-batch-user-role"  # the chart's role for submitting jobs and reading queues and workloads

NOT_QUEUED = ("cpu", "memory", "ephemeral-storage", "hugepages-")  # resource prefixes Kueue does not count
# Team priority -> the highest workload priority its borrowing jobs may preempt in other queues (classic
# preemption only). Reclaiming one's own nominal quota is always allowed; preempting others in order to borrow is
# a privilege of critical and high teams, and never reaches work at their own level or the level just below.
BORROW_PREEMPTS_UP_TO = {"critical": LEVELS["normal"].value, "high": LEVELS["low"].value}
REQUEUE_BACKOFF = {"timestamp": "Eviction", "backoffLimitCount": 5, "backoffBaseSeconds": 60,
                   "backoffMaxSeconds": 3600}


def manager_config(config: PlatformConfig) -> dict[str, Any]:
    """Kueue's `Configuration` (config.kueue.x-k8s.io/v1beta2): the chart defaults plus our admission policy."""
    scheduler = config.scheduler
    conf: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        # Per-ClusterQueue usage and nominal quota metrics, which the observability layer's quota rules read.
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {"groupKindConcurrency": {
            "Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10, "LocalQueue.kueue.x-k8s.io": 5,
            "Cohort.kueue.x-k8s.io": 1, "ClusterQueue.kueue.x-k8s.io": 5, "ResourceFlavor.kueue.x-k8s.io": 1}},
        "clientConnection": {"qps": 300, "burst": 500},
        # Jobs in team namespaces are queued even without a queue label, so nobody bypasses quota by omitting it;
        # pod-level integrations only act in team namespaces, never in system ones.
        "manageJobsWithoutQueueName": True,
        "managedJobsNamespaceSelector": {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]},
        # Only what is installed: an integration without its operator would admit jobs nothing runs.
        "integrations": {"frameworks": kueue_integrations(config.scheduler.frameworks)},
        "resources": {"excludeResourcePrefixes": [*NOT_QUEUED, *fabric_resources(config)]},
    }
    if scheduler.gang.enabled:
        timeout = scheduler.gang.timeout_s
        conf["waitForPodsReady"] = {
            "timeout": f"{timeout}s",
            "recoveryTimeout": f"{scheduler.gang.recovery_timeout_s or timeout}s",
            # Admitting one job at a time would stall every queue while a GPU pool scales up from zero.
            "blockAdmission": False,
            "requeuingStrategy": dict(REQUEUE_BACKOFF),
        }
    if scheduler.fair_sharing:
        conf["fairSharing"] = {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
    return conf


def flavor_spec(config: PlatformConfig, pool: GpuPool) -> dict[str, Any]:
    """Admitted pods get the pool's node label as nodeSelector and a toleration for each of its taints."""
    tolerations = []
    for taint in pool_taints(pool, profile(config.cloud)):
        if taint.value:
            tolerations.append({"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect})
        else:
            tolerations.append({"key": taint.key, "operator": "Exists", "effect": taint.effect})
    spec: dict[str, Any] = {"nodeLabels": {POOL_LABEL: pool.name}, "tolerations": tolerations}
    levels = topology.pool_levels(config, pool)
    if levels:
        spec["topologyName"] = topology.topology_name(levels)
    return spec


def _groups(shares: list[PoolShare]) -> list[list[PoolShare]]:
    """Pools whose resource names overlap share a resource group (Kueue allows a name in one group only)."""
    groups: list[list[PoolShare]] = []
    for share in shares:
        overlapping = [g for g in groups if any(set(s.nominal) & set(share.nominal) for s in g)]
        groups = [g for g in groups if g not in overlapping] + [[s for g in overlapping for s in g] + [share]]
    order = {s.pool.name: i for i, s in enumerate(shares)}
    members = [sorted(g, key=lambda s: order[s.pool.name]) for g in groups]
    return sorted(members, key=lambda g: order[g[0].pool.name])


def resource_groups(shares: list[PoolShare]) -> list[dict[str, Any]]:
    """One group per set of pools with overlapping resources; every flavor lists every covered resource."""
    result = []
    for members in _groups(shares):
        covered = sorted(set().union(*(s.nominal for s in members)))
        flavors = []
        for share in members:
            resources = []
            for name in covered:
                quota = {"name": name, "nominalQuota": share.nominal.get(name, 0)}
                if share.borrowing is not None:
                    quota["borrowingLimit"] = share.borrowing.get(name, 0)
                if share.lending is not None:
                    quota["lendingLimit"] = share.lending.get(name, 0)
                resources.append(quota)
            flavors.append({"name": share.pool.name, "resources": resources})
        result.append({"coveredResources": covered, "flavors": flavors})
    return result


def preemption(config: PlatformConfig, team: Team) -> dict[str, Any]:
    """Reclaim lent quota always; preempt lower priority inside the queue; borrow-preempt by team priority."""
    cohort = has_cohort(config)
    policy: dict[str, Any] = {
        "withinClusterQueue": "LowerPriority",
        # Nominal quota is a guarantee: whoever borrowed it gives it back, whatever their priority.
        "reclaimWithinCohort": "Any" if cohort else "Never",
    }
    # Kueue allows borrowWithinCohort with classic preemption only; fair sharing decides that itself.
    if cohort and not config.scheduler.fair_sharing:
        threshold = BORROW_PREEMPTS_UP_TO.get(team.priority)
        policy["borrowWithinCohort"] = ({"policy": "LowerPriority", "maxPriorityThreshold": threshold}
                                        if threshold is not None else {"policy": "Never"})
    return policy


def cluster_queue_spec(config: PlatformConfig, team: Team) -> dict[str, Any]:
    """The team's ClusterQueue: its namespace only, its pools as flavors, the shared cohort when there is one."""
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {TEAM_LABEL: team.name}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": resource_groups(team_shares(config, team)),
        "preemption": preemption(config, team),
    }
    checks = provisioning.admission_checks(config, team)
    if checks:
        spec["admissionChecksStrategy"] = checks
    if has_cohort(config):
        spec["cohortName"] = COHORT
        if config.scheduler.fair_sharing:
            spec["fairSharing"] = {"weight": team_weight(config, team)}
    return spec


class WorkloadPriorityClass(pulumi.CustomResource):
    """A Kueue WorkloadPriorityClass: its `value` sits beside metadata, where CustomResource (spec only) cannot."""

    def __init__(self, name: str, class_name: str, value: int, description: str,
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(f"kubernetes:{API}:WorkloadPriorityClass", name, {
            "apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": class_name},
            "value": value, "description": description}, opts)


@dataclass
class KueueArgs:
    """Kueue's manager configuration and the queue objects of every GPU pool and team."""

    manager_config: dict[str, Any]
    """The controller's Configuration (kueue.x-k8s.io/v1beta2), written into the chart's managerConfig."""
    flavors: dict[str, Any]
    """ResourceFlavor specs by name (one per GPU pool)."""
    cluster_queues: dict[str, Any]
    """ClusterQueue specs by team name; each team also gets a `default` LocalQueue in its namespace."""
    namespaces: dict[str, pulumi.Input[str]]
    """Each team's namespace name by team name (pass the Team component's namespace to order after it)."""
    topologies: Optional[dict[str, Any]] = field(default_factory=dict)
    """Topology specs by name, for topology-aware scheduling; empty for none."""
    cohort: Optional[bool] = False
    """Create the shared Cohort the ClusterQueues lend and borrow quota in."""
    team_groups: Optional[dict[str, list[str]]] = field(default_factory=dict)
    """Groups bound to Kueue's batch-user role in each team's namespace, by team name."""
    protect: Optional[bool] = False
    """Protect each team's queues and binding like its namespace."""
    provisioning_class: Optional[str] = None
    """The cloud's ProvisioningRequest class (queued-provisioning.gke.io) when a pool is provisioned on admission."""

    def __post_init__(self) -> None:
        fill_defaults(self)

    @classmethod
    def from_config(cls, config: PlatformConfig, namespaces: dict[str, pulumi.Input[str]]) -> "KueueArgs":
        """The args the stack program passes: queue specs from the validated config, namespaces from the teams."""
        return cls(
            manager_config=manager_config(config),
            flavors={pool.name: flavor_spec(config, pool) for pool in config.gpu_pools},
            cluster_queues={team.name: cluster_queue_spec(config, team) for team in config.teams},
            namespaces=namespaces,
            topologies={name: topology.topology_spec(levels) for name, levels in topology.topologies(config).items()},
            cohort=has_cohort(config),
            team_groups={team.name: list(team.groups) for team in config.teams if team.groups},
            protect=config.protected,
            provisioning_class=(profile(config.cloud).queued_provisioning_class
                                if provisioning.queued_pools(config) else None),
        )


class Kueue(pulumi.ComponentResource):
    """Kueue and every queue object the teams need."""

    TYPE = "gpu-platform:scheduling:Kueue"

    release_name: pulumi.Output[str]
    """Kueue's Helm release, once installed: jobs submitted before its webhook is up skip admission."""

    def __init__(self, name: str, args: KueueArgs, opts: Optional[pulumi.ResourceOptions] = None):
        check_args(args)  # every problem at once, before any child exists
        conf = args.manager_config
        super().__init__(self.TYPE, name, {"chart": CHART, "version": VERSION, "namespace": NAMESPACE,
                                           "teams": list(args.cluster_queues)}, opts)
        self.release = Release(
            f"{name}-release",
            ReleaseArgs(
                name="kueue", chart=CHART, version=VERSION, namespace=NAMESPACE, create_namespace=True,
                values={
                    "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(conf, sort_keys=False)},
                    # The chart's values.yaml points at a staging image; pin the released one.
                    "controllerManager": {"manager": {"image": {
                        "repository": "registry.k8s.io/kueue/kueue", "tag": f"v{VERSION}",
                        "pullPolicy": "IfNotPresent"}}, "tolerations": tolerating()},
                },
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        after = pulumi.ResourceOptions(parent=self, depends_on=[self.release])

        # A team's queues and binding are protected like its namespace (tenancy/team.py says why).
        team_guard = pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(protect=args.protect))

        def custom(suffix: str, kind: str, metadata: dict[str, Any], spec: dict[str, Any],
                   opts: pulumi.ResourceOptions = after) -> CustomResource:
            return CustomResource(f"{name}-{suffix}", api_version=API, kind=kind, metadata=metadata, spec=spec,
                                  opts=opts)

        for level in LEVELS.values():
            WorkloadPriorityClass(f"{name}-priority-{level.name}", level.name, level.value, level.description,
                                  opts=after)
        for topology_name, spec in args.topologies.items():
            custom(f"topology-{topology_name}", "Topology", {"name": topology_name}, spec)
        for flavor, spec in args.flavors.items():
            custom(f"flavor-{flavor}", "ResourceFlavor", {"name": flavor}, spec)
        if args.cohort:
            custom("cohort", "Cohort", {"name": COHORT}, {})
        if args.provisioning_class:
            # Config first: the check is inactive until the ProvisioningRequestConfig it names exists.
            request_config = custom("provisioning-config", "ProvisioningRequestConfig",
                                    {"name": provisioning.PROVISIONING_CONFIG},
                                    provisioning.provisioning_config_spec(args.provisioning_class))
            custom("admission-check", "AdmissionCheck", {"name": provisioning.ADMISSION_CHECK},
                   provisioning.admission_check_spec(),
                   pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=[request_config])))
        for team, spec in args.cluster_queues.items():
            ns = args.namespaces[team]
            custom(f"queue-{team}", "ClusterQueue", {"name": team}, spec, team_guard)
            custom(f"local-queue-{team}", "LocalQueue", {"name": LOCAL_QUEUE, "namespace": ns},
                   {"clusterQueue": team}, team_guard)
            groups = args.team_groups.get(team)
            if groups:
                rbac.RoleBinding(
                    f"{name}-user-{team}",
                    metadata=meta.ObjectMetaArgs(name="kueue-batch-user", namespace=ns),
                    role_ref=rbac.RoleRefArgs(api_group=RBAC_GROUP, kind="ClusterRole", name=USER_ROLE),
                    subjects=[rbac.SubjectArgs(kind="Group", name=g, api_group=RBAC_GROUP) for g in groups],
                    opts=team_guard,
                )
        self.release_name = self.release.name
        self.register_outputs({"release": self.release.status})


def install(ctx: "Context", teams: "dict[str, TeamNamespace]") -> Release:
    """The scheduling layer's entry (its row in facts.py names it): Kueue, with each team's LocalQueue in its namespace."""
    kueue = Kueue("kueue", KueueArgs.from_config(ctx.config, {name: t.namespace.metadata.name
                                                              for name, t in teams.items()}), opts=ctx.k8s_opts())
    return kueue.release
