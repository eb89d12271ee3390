"""One team's slice of the cluster: its namespace, GPU quota, container defaults, isolation (Pod Security and
NetworkPolicies, see isolation.py) and who may edit inside it.

Teams get the built-in `edit` ClusterRole through a RoleBinding in their own namespace only. `edit` can read
but not change ResourceQuotas, LimitRanges and the Namespace object (so a team cannot relabel itself into
another team's queue), and a RoleBinding cannot grant cluster-scoped objects such as PriorityClasses,
ClusterQueues or Volcano Queues.
"""
from dataclasses import dataclass, field
from typing import Any, Optional

import pulumi
import pulumi_kubernetes.core.v1 as core
import pulumi_kubernetes.meta.v1 as meta
import pulumi_kubernetes.networking.v1 as networking
import pulumi_kubernetes.rbac.v1 as rbac

from components.args import fill_defaults
from components.args_checks import check_args
from components.config.labels import LABEL_PREFIX, RECLAIM_ENABLED, RECLAIM_LABEL
from components.config.model import PlatformConfig, Prometheus, Team as TeamConfig
from components.config.priority_levels import forbidden_classes
from components.config.shares import team_ceiling
from components.tenancy.compute_quota import compute_hard
from components.tenancy.isolation import AUDITED, ENFORCED, PSA, isolating_policies, network_policies, team_pod_security

TEAM_LABEL = f"{LABEL_PREFIX}/team"  # the ClusterQueue namespaceSelector and Kueue's managed namespaces match it
PRIORITY_LABEL = f"{LABEL_PREFIX}/priority"
RBAC_GROUP = "rbac.authorization.k8s.io"
# Requests for containers that set none, so CPU and memory are accounted on shared GPU nodes. No default limits
# (a surprise memory limit OOM-kills training) and no GPU default: every container, sidecars and init containers
# included, would then hold a GPU and burn the team's quota.
DEFAULT_REQUEST = {"cpu": "500m", "memory": "1Gi"}


def namespace_labels(team: TeamConfig) -> dict[str, str]:
    """Labels that tie a namespace to its team's queue, and its opt-in to idle-GPU reclaim (teams[].reclaim)."""
    labels = {TEAM_LABEL: team.name, PRIORITY_LABEL: team.priority}
    if team.reclaim:
        labels[RECLAIM_LABEL] = RECLAIM_ENABLED
    return labels


def quota_hard(config: PlatformConfig, team: TeamConfig) -> dict[str, str]:
    """`requests.<resource>` caps: nominal quota plus borrowing limit per GPU resource name, 0 where none."""
    return {f"requests.{name}": str(amount) for name, amount in team_ceiling(config, team).items()}


@dataclass
class TeamArgs:
    """One team's namespace, quota, priority ceiling, isolation and editors."""

    team: str
    """The team's name: also its namespace's name and its queue's name."""
    priority: str
    """The team's priority level (low, normal, high): the highest PriorityClass its pods may use."""
    gpu_quota: dict[str, str]
    """ResourceQuota `hard` caps, e.g. {"requests.nvidia.com/gpu": "8"}."""
    compute_quota: Optional[dict[str, str]] = field(default_factory=dict)
    """ResourceQuota `hard` caps on requests.cpu, requests.memory and pods (compute_quota.py); empty for none."""
    groups: Optional[list[str]] = field(default_factory=list)
    """Identity-provider groups bound to the built-in `edit` ClusterRole in the namespace."""
    egress: Optional[str] = "internet"
    """What the team's pods may reach outside the cluster: `internet` or `none` (recorded; policies are below)."""
    labels: Optional[dict[str, str]] = field(default_factory=dict)
    """Namespace labels over the defaults: the team and priority labels queues select on, Pod Security enforcing
    baseline and auditing and warning on restricted."""
    annotations: Optional[dict[str, str]] = field(default_factory=dict)
    """Namespace annotations (e.g. Volcano's default queue); empty for none."""
    network_policies: Optional[dict[str, Any]] = None
    """NetworkPolicy specs by object name, created in order; unset: deny all but DNS, the namespace itself,
    scraping from `monitoring` and, with egress internet, public addresses; {} for none at all."""
    protect: Optional[bool] = False
    """Protect the namespace and its guards, so removing a team takes a deliberate unprotect."""

    def __post_init__(self) -> None:
        fill_defaults(self)
        # Secure unless said otherwise: a Team used alone isolates like one the stack program configures.
        self.labels = {**self.default_labels(), **self.labels}
        if self.network_policies is None:
            self.network_policies = isolating_policies(self.egress, Prometheus.namespace)

    def default_labels(self) -> dict[str, str]:
        """The labels every team namespace carries unless the Args say otherwise."""
        labels = {TEAM_LABEL: self.team, PRIORITY_LABEL: self.priority, f"{PSA}/enforce": ENFORCED,
                  f"{PSA}/audit": AUDITED, f"{PSA}/warn": AUDITED}
        # A missing or malformed team or priority is the Args check's to report, not a label's.
        return {key: value for key, value in labels.items() if isinstance(value, str)}

    @classmethod
    def from_config(cls, config: PlatformConfig, team: TeamConfig, annotations: dict[str, str]) -> "TeamArgs":
        """The args the stack program passes for one configured team."""
        return cls(team=team.name, priority=team.priority, gpu_quota=quota_hard(config, team),
                   compute_quota=compute_hard(config, team),
                   groups=list(team.groups), egress=team.egress,
                   labels={**namespace_labels(team), **team_pod_security(config, team)}, annotations=annotations,
                   network_policies=network_policies(config, team), protect=config.protected)


class Team(pulumi.ComponentResource):
    """A team's namespace with its GPU ResourceQuota, priority ceiling, LimitRange and RoleBinding."""

    TYPE = "gpu-platform:tenancy:Team"

    namespace_name: pulumi.Output[str]
    """The team's namespace, once created: its workloads and its queue live there."""

    def __init__(self, name: str, args: TeamArgs, opts: Optional[pulumi.ResourceOptions] = None):
        check_args(args)  # every problem at once, before any child exists
        hard = dict(args.gpu_quota)
        super().__init__(self.TYPE, name, {
            "team": args.team, "namespace": args.team, "priority": args.priority, "groups": list(args.groups),
            "gpuQuota": hard, "egress": args.egress,
        }, opts)
        self.namespace = core.Namespace(
            f"{name}-namespace",
            metadata=meta.ObjectMetaArgs(name=args.team, labels=dict(args.labels),
                                         annotations=args.annotations or None),
            # Deleting a namespace deletes every workload in it: in production (and staging), removing a team takes
            # a deliberate unprotect.
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        ns = self.namespace.metadata.name
        # The guards are protected with the namespace: they are deleted before it (they depend on it), so a
        # refused namespace delete would otherwise leave its workloads running without quota, ceiling or defaults.
        child = pulumi.ResourceOptions(parent=self, protect=args.protect)
        core.ResourceQuota(f"{name}-gpu-quota", metadata=meta.ObjectMetaArgs(name="gpu-quota", namespace=ns),
                           spec=core.ResourceQuotaSpecArgs(hard=hard), opts=child)
        # Its own object, so the GPU quota (and every check reading it) stays as it was.
        if args.compute_quota:
            core.ResourceQuota(f"{name}-compute-quota",
                               metadata=meta.ObjectMetaArgs(name="compute-quota", namespace=ns),
                               spec=core.ResourceQuotaSpecArgs(hard=dict(args.compute_quota)), opts=child)
        # Team priority is a ceiling: pods may not use the classes above it (or the system ones). Quota scopes only
        # see pods; the Priorities admission policy holds Kueue priority labels and PodGroups to the same ceiling.
        core.ResourceQuota(
            f"{name}-priority-ceiling",
            metadata=meta.ObjectMetaArgs(name="priority-ceiling", namespace=ns),
            spec=core.ResourceQuotaSpecArgs(
                hard={"pods": "0"},
                scope_selector=core.ScopeSelectorArgs(match_expressions=[core.ScopedResourceSelectorRequirementArgs(
                    scope_name="PriorityClass", operator="In", values=forbidden_classes(args.priority))]),
            ),
            opts=child,
        )
        core.LimitRange(f"{name}-defaults", metadata=meta.ObjectMetaArgs(name="defaults", namespace=ns),
                        spec=core.LimitRangeSpecArgs(limits=[
                            core.LimitRangeItemArgs(type="Container", default_request=DEFAULT_REQUEST)]),
                        opts=child)
        for policy, spec in args.network_policies.items():
            networking.NetworkPolicy(f"{name}-{policy}", metadata=meta.ObjectMetaArgs(name=policy, namespace=ns),
                                     spec=spec, opts=child)
        if args.groups:
            rbac.RoleBinding(
                f"{name}-edit",
                metadata=meta.ObjectMetaArgs(name="team-edit", namespace=ns),
                role_ref=rbac.RoleRefArgs(api_group=RBAC_GROUP, kind="ClusterRole", name="edit"),
                subjects=[rbac.SubjectArgs(kind="Group", name=group, api_group=RBAC_GROUP) for group in args.groups],
                opts=child,
            )
        self.namespace_name = ns
        self.register_outputs({"namespace": ns})
