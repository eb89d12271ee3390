"""A team's GPU pods go through its queue, whoever it claims owns them.

Kueue's pod webhook gates every pod of a team namespace until Kueue admits it, except a pod whose controller owner
is a kind Kueue manages itself (a Job, a JobSet, ...): that pod's owner was queued, so the webhook leaves it alone.
`ownerReferences` are the creator's to write, so a team member creating a GPU pod with `{kind: Job, controller:
true}` naming one of its team's finished Jobs runs it ungated, limited only by the namespace ResourceQuota, which
sums every pool (pool_admission.py). This ValidatingAdmissionPolicy refuses a GPU pod in a team namespace that a
team identity creates without Kueue's admission gate (the webhook adds it before validation runs), and refuses a
team identity lifting that gate: only Kueue does, when it admits the pod.

Who is not a team identity: the workload controllers, the only creators of the pods Kueue rightly skips. They run
as service accounts of platform namespaces (kube-system's controllers, the scheduler's, each installed framework's
operator), which the config keeps out of team names (config/teams.py RESERVED_NAMESPACES), or as the
controller-manager's own user where it does not use service-account credentials. Everyone else is a team
identity, including service accounts of a team namespace: `edit` lets a team create them, run pods as them and
impersonate them.

Volcano has no admission gate: its pods reach the scheduler ungated and the same owner trick is not needed there
(docs/tenancy.md says what holds Volcano teams).

A scheduler that places pods itself (its row has `scheduler_name`, KAI) gates nothing: a pod naming another
scheduler, or none, is placed by the default scheduler outside every queue. There the policy holds every GPU pod of
a team namespace, whoever creates it, to the scheduler's name and to the team's own queue label: a Job's pods are
written by the Job controller but copied from the team's template, so the creator says nothing about them. KAI's
pod-grouper (pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go, CalcPodGroupQueue) takes the
queue from the label on the pod's top owner before the pod's own, so a Job labelled with another team's queue would
send pods labelled with the team's own there: every object of a team namespace carrying the queue label must name
the team's queue, and a hand-made PodGroup's spec.queue too (the grouper's own PodGroups copy the checked labels).
"""
from __future__ import annotations

import json
from typing import Any

import pulumi

from components.config.model import PlatformConfig
from components.namespaces import KUBE_SYSTEM
from components.scheduling.framework_catalog import FRAMEWORKS, kueue_integrations
from components.scheduling.kinds import scheduler_kind
from components.tenancy.deny_policy import deny_policy
from components.tenancy.pool_admission import gpu_variables

POLICY = "gpu-platform-gpu-queue-gate"
CONTROLLER_MANAGER = "system:kube-controller-manager"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


def gates_pods(config: PlatformConfig) -> bool:
    """Whether the stack's scheduler holds the pods of team namespaces: it gates them until it admits them, or only
    the pods naming it reach its queues."""
    kind = scheduler_kind(config.scheduler.kind)
    return (kind.admission_gate is not None and "pod" in kueue_integrations(config.scheduler.frameworks)) or \
        kind.scheduler_name is not None


def controller_namespaces(config: PlatformConfig) -> list[str]:
    """Namespaces whose service accounts create the pods of team workloads."""
    kind = scheduler_kind(config.scheduler.kind)
    return sorted({KUBE_SYSTEM, kind.namespace, *(FRAMEWORKS[name].namespace for name in config.scheduler.frameworks)})


def _team_writes(team_label: str, groups: list[str], versions: list[str], resources: list[str]) -> dict[str, Any]:
    """Creates and updates of these resources in team namespaces."""
    return {
        "namespaceSelector": {"matchExpressions": [{"key": team_label, "operator": "Exists"}]},
        "resourceRules": [{"apiGroups": groups, "apiVersions": versions, "operations": ["CREATE", "UPDATE"],
                           "resources": resources, "scope": "Namespaced"}],
    }


def gate_rules(config: PlatformConfig, team_label: str) -> dict[str, Any]:
    kind = scheduler_kind(config.scheduler.kind)
    gate = json.dumps(kind.admission_gate)
    prefixes = json.dumps([f"{SERVICE_ACCOUNT_PREFIX}{ns}:" for ns in controller_namespaces(config)])

    def gated(obj: str) -> str:
        return f"(has({obj}.spec.schedulingGates) && {obj}.spec.schedulingGates.exists(g, g.name == {gate}))"

    return {
        "failurePolicy": "Fail",
        "matchConstraints": _team_writes(team_label, [""], ["v1"], ["pods"]),
        "variables": [
            *gpu_variables(),
            {"name": "controller", "expression": f"request.userInfo.username == {json.dumps(CONTROLLER_MANAGER)} || "
                                                 f"{prefixes}.exists(p, request.userInfo.username.startsWith(p))"},
            {"name": "gated", "expression": gated("object")},
            {"name": "ungating", "expression": f'request.operation == "UPDATE" && {gated("oldObject")} && '
                                               "!variables.gated"},
        ],
        "validations": [{
            "expression": "!variables.gpu || variables.controller || "
                          '(request.operation == "CREATE" ? variables.gated : !variables.ungating)',
            "message": f"a GPU pod in a team namespace is admitted by the team's queue: create it without "
                       f"ownerReferences to a job and with label {kind.queue_label} naming the team's queue "
                       f"(default), so {kind.title} gates it ({kind.admission_gate}) until it admits it; only "
                       f"{kind.title} lifts that gate",
            "reason": "Forbidden",
        }],
    }


def scheduler_rules(config: PlatformConfig, team_label: str) -> dict[str, Any]:
    """For a scheduler that places pods itself: GPU pods name it, and nothing in a team namespace names another
    team's queue (a label on any object, the queue field of a gang object)."""
    kind = scheduler_kind(config.scheduler.kind)
    assert kind.scheduler_name and kind.queue_label, f"{kind.name}: no scheduler name or queue label to hold pods to"
    label = json.dumps(kind.queue_label)
    # A team's queue has the team's name where the scheduler keeps no queue inside the namespace.
    own_queue = json.dumps(kind.local_queue) if kind.local_queue else "variables.team"

    def resource_is(group: str, resource: str) -> str:
        return f"request.resource.group == {json.dumps(group)} && request.resource.resource == {json.dumps(resource)}"

    group_rule = []
    if kind.group_queue_field:
        group, resource, field = kind.group_queue_field
        group_rule = [{
            "expression": f"!({resource_is(group, resource)}) || (has(object.spec) && has(object.spec.{field}) && "
                          f"object.spec.{field} == variables.queue)",
            "message": f"a {resource} object in a team namespace names the team's own queue in spec.{field}",
            "reason": "Forbidden",
        }]
    return {
        "failurePolicy": "Fail",
        # Every kind: the pod-grouper reads the queue label from whatever kind tops a pod's owners.
        "matchConstraints": _team_writes(team_label, ["*"], ["*"], ["*"]),
        "variables": [
            {"name": "team", "expression": f"namespaceObject.metadata.labels[{json.dumps(team_label)}]"},
            {"name": "queue", "expression": own_queue},
            {"name": "labels", "expression": "has(object.metadata.labels) ? object.metadata.labels : {}"},
            {"name": "pod", "expression": resource_is("", "pods")},
            *gpu_variables(),
        ],
        "validations": [
            {
                "expression": f"!({label} in variables.labels) || variables.labels[{label}] == variables.queue",
                "message": f"an object in a team namespace may name only the team's own queue in label "
                           f"{kind.queue_label}",
                "reason": "Forbidden",
            },
            {
                # `pod` first: the GPU variables read a pod's containers, which other kinds do not have.
                "expression": f"!variables.pod || !variables.gpu || (has(object.spec.schedulerName) && "
                              f"object.spec.schedulerName == {json.dumps(kind.scheduler_name)} && "
                              f"{label} in variables.labels)",
                "message": f"a GPU pod in a team namespace is placed by {kind.title}: set spec.schedulerName "
                           f"{kind.scheduler_name} and label {kind.queue_label} naming the team's queue",
                "reason": "Forbidden",
            },
            *group_rule,
        ],
    }


class QueueGate(pulumi.ComponentResource):
    """The admission policy keeping a team's GPU pods in the team's queue, and its binding."""

    TYPE = "gpu-platform:tenancy:QueueGate"

    def __init__(self, name: str, config: PlatformConfig, team_label: str,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"policy": POLICY}, opts)
        rules = scheduler_rules if scheduler_kind(config.scheduler.kind).scheduler_name else gate_rules
        deny_policy(name, POLICY, rules(config, team_label), self)
        self.register_outputs({"policy": POLICY})
