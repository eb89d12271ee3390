"""Kueue: the pinned chart with gang admission and fair sharing, a ResourceFlavor per GPU pool, and a
ClusterQueue plus a `default` LocalQueue per team, all in `kueue.x-k8s.io/v1beta2`.

Queues count only GPU resources: CPU, memory and storage are excluded from Kueue's quota check, so a GPU job is
never blocked on a resource no queue declares, and a CPU-only job is admitted without pinning a GPU pool.
"""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes.meta.v1 as meta
import pulumi_kubernetes.rbac.v1 as rbac
import yaml
from pulumi_kubernetes.apiextensions import CustomResource
from pulumi_kubernetes.helm.v3 import Release, ReleaseArgs

from components.clouds.labels import POOL_LABEL, pool_taints
from components.clouds.profiles import profile
from components.config.model import GpuPool, PlatformConfig, Team
from components.scheduling import provisioning, topology
from components.scheduling.frameworks import kueue_integrations
from components.scheduling.priorities import LEVELS
from components.scheduling.shares import COHORT, PoolShare, has_cohort, team_shares, team_weight
from components.tenancy.team import RBAC_GROUP, TEAM_LABEL

CHART = "oci://registry.k8s.io/kueue/charts/kueue"
VERSION = "0.19.2"
NAMESPACE = "kueue-system"
API = "kueue.x-k8s.io/v1beta2"
LOCAL_QUEUE = "default"  # Kueue's LocalQueue defaulting sends unlabeled jobs of a namespace to this queue
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
        "integrations": {"frameworks": kueue_integrations(config)},
        "resources": {"excludeResourcePrefixes": list(NOT_QUEUED)},
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
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"kubernetes:{API}:WorkloadPriorityClass", name, {
            "apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": class_name},
            "value": value, "description": description}, opts)


class Kueue(pulumi.ComponentResource):
    """Kueue and every queue object the teams need."""

    TYPE = "gpu-platform:scheduling:Kueue"

    def __init__(self, name: str, config: PlatformConfig, namespaces: dict[str, pulumi.Output[str]],
                 opts: pulumi.ResourceOptions | None = None):
        conf = manager_config(config)
        super().__init__(self.TYPE, name, {"chart": CHART, "version": VERSION, "namespace": NAMESPACE,
                                           "teams": [t.name for t in config.teams]}, opts)
        self.release = Release(
            f"{name}-release",
            ReleaseArgs(
                name="kueue", chart=CHART, version=VERSION, namespace=NAMESPACE, create_namespace=True,
                values={
                    "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(conf, sort_keys=False)},
                    # The chart's values.yaml points at a staging image; pin the released one.
                    "controllerManager": {"manager": {"image": {
                        "repository": "registry.k8s.io/kueue/kueue", "tag": f"v{VERSION}",
                        "pullPolicy": "IfNotPresent"}}},
                },
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        after = pulumi.ResourceOptions(parent=self, depends_on=[self.release])

        # A team's queues and binding are protected like its namespace (tenancy/team.py says why).
        team_guard = pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(protect=config.protected))

        def custom(suffix: str, kind: str, metadata: dict[str, Any], spec: dict[str, Any],
                   opts: pulumi.ResourceOptions = after) -> CustomResource:
            return CustomResource(f"{name}-{suffix}", api_version=API, kind=kind, metadata=metadata, spec=spec,
                                  opts=opts)

        for level in LEVELS.values():
            WorkloadPriorityClass(f"{name}-priority-{level.name}", level.name, level.value, level.description,
                                  opts=after)
        for topology_name, levels in topology.topologies(config).items():
            custom(f"topology-{topology_name}", "Topology", {"name": topology_name}, topology.topology_spec(levels))
        for pool in config.gpu_pools:
            custom(f"flavor-{pool.name}", "ResourceFlavor", {"name": pool.name}, flavor_spec(config, pool))
        if has_cohort(config):
            custom("cohort", "Cohort", {"name": COHORT}, {})
        if provisioning.queued_pools(config):
            # Config first: the check is inactive until the ProvisioningRequestConfig it names exists.
            request_config = custom("provisioning-config", "ProvisioningRequestConfig",
                                    {"name": provisioning.PROVISIONING_CONFIG},
                                    provisioning.provisioning_config_spec(
                                        profile(config.cloud).queued_provisioning_class))
            custom("admission-check", "AdmissionCheck", {"name": provisioning.ADMISSION_CHECK},
                   provisioning.admission_check_spec(),
                   pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=[request_config])))
        for team in config.teams:
            ns = namespaces[team.name]
            custom(f"queue-{team.name}", "ClusterQueue", {"name": team.name}, cluster_queue_spec(config, team),
                   team_guard)
            custom(f"local-queue-{team.name}", "LocalQueue", {"name": LOCAL_QUEUE, "namespace": ns},
                   {"clusterQueue": team.name}, team_guard)
            if team.groups:
                rbac.RoleBinding(
                    f"{name}-user-{team.name}",
                    metadata=meta.ObjectMetaArgs(name="kueue-batch-user", namespace=ns),
                    role_ref=rbac.RoleRefArgs(api_group=RBAC_GROUP, kind="ClusterRole", name=USER_ROLE),
                    subjects=[rbac.SubjectArgs(kind="Group", name=g, api_group=RBAC_GROUP) for g in team.groups],
                    opts=team_guard,
                )
        self.register_outputs({"release": self.release.status})
