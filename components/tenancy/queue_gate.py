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
    """Whether the stack's scheduler gates the pods of team namespaces until it admits them."""
    kind = scheduler_kind(config.scheduler.kind)
    return kind.admission_gate is not None and "pod" in kueue_integrations(config.scheduler.frameworks)


def controller_namespaces(config: PlatformConfig) -> list[str]:
    """Namespaces whose service accounts create the pods of team workloads."""
    kind = scheduler_kind(config.scheduler.kind)
    return sorted({KUBE_SYSTEM, kind.namespace, *(FRAMEWORKS[name].namespace for name in config.scheduler.frameworks)})


def gate_rules(config: PlatformConfig, team_label: str) -> dict[str, Any]:
    kind = scheduler_kind(config.scheduler.kind)
    gate = json.dumps(kind.admission_gate)
    prefixes = json.dumps([f"{SERVICE_ACCOUNT_PREFIX}{ns}:" for ns in controller_namespaces(config)])

    def gated(obj: str) -> str:
        return f"(has({obj}.spec.schedulingGates) && {obj}.spec.schedulingGates.exists(g, g.name == {gate}))"

    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": team_label, "operator": "Exists"}]},
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                               "resources": ["pods"], "scope": "Namespaced"}],
        },
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


class QueueGate(pulumi.ComponentResource):
    """The admission policy keeping team-created GPU pods behind the scheduler's admission gate, and its binding."""

    TYPE = "gpu-platform:tenancy:QueueGate"

    def __init__(self, name: str, config: PlatformConfig, team_label: str,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"policy": POLICY}, opts)
        deny_policy(name, POLICY, gate_rules(config, team_label), self)
        self.register_outputs({"policy": POLICY})
