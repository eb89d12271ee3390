"""Whether a team namespace enforcing Pod Security `privileged` is held to baseline by the platform's own admission
policy instead (teams[].podSecurity: fabric-sidecar), read from the plan for GPU014.

Fail closed: the namespace must name the policy in its label, the policy must exist, fail closed itself, match pod
creation and update (ephemeral containers too), carry no match conditions that could skip pods, and test every field
the baseline profile controls; its binding must deny and select exactly this namespace by its name label. The CEL
itself is tested in tests/clouds/test_fabric_baseline.py; here only its shape can be read.
"""
from __future__ import annotations

from collections.abc import Mapping

from policies import k8s
from policies.graph import Graph
from policies.props import get

POLICY_LABEL = "gpu-platform.io/pod-security-policy"
NAME_LABEL = "kubernetes.io/metadata.name"
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
# Fields of the baseline profile (Pod Security Standards) a policy's expressions must read.
BASELINE_FIELDS = ("hostNetwork", "hostPID", "hostIPC", "privileged", "capabilities", "hostPath", "hostPort",
                   "seLinuxOptions", "seccompProfile", "appArmorProfile", "procMount", "sysctls", "hostProcess",
                   "ephemeralContainers", "initContainers")


def _named(graph: Graph, type_: str, name: str) -> list:
    return [r for r in graph.of_type(type_) if k8s.name(r) == name]


def missing_baseline(namespace_name: str, labels: Mapping, graph: Graph) -> str | None:
    """None when an admission policy enforces baseline on the namespace, else what is missing."""
    policy_name = labels.get(POLICY_LABEL)
    if not policy_name:
        return f"no {POLICY_LABEL} label names an admission policy holding it to baseline"
    policies = _named(graph, VAP, policy_name)
    if len(policies) != 1:
        return f"its label names admission policy {policy_name!r}, which this stack does not create"
    spec = k8s.spec(policies[0])
    if get(spec, "failurePolicy") != "Fail":
        return f"admission policy {policy_name!r} does not set failurePolicy: Fail"
    if get(spec, "matchConditions"):
        return f"admission policy {policy_name!r} has matchConditions, which can skip pods"
    rules = get(spec, "matchConstraints.resourceRules", []) or []
    covered = {(res, op) for rule in rules if "" in (get(rule, "apiGroups") or [])
               for res in get(rule, "resources", []) or [] for op in get(rule, "operations", []) or []}
    for needed in (("pods", "CREATE"), ("pods", "UPDATE"), ("pods/ephemeralcontainers", "UPDATE")):
        if needed not in covered and (needed[0], "*") not in covered:
            return f"admission policy {policy_name!r} does not match {needed[1]} of {needed[0]}"
    text = " ".join(str(get(v, "expression", "")) for v in (get(spec, "validations", []) or []))
    text += " ".join(str(get(v, "expression", "")) for v in (get(spec, "variables", []) or []))
    unread = [f for f in BASELINE_FIELDS if f not in text]
    if unread:
        return f"admission policy {policy_name!r} does not check {', '.join(unread)}"
    selects = {NAME_LABEL: namespace_name}
    for binding in graph.of_type(BINDING):
        b = k8s.spec(binding)
        if (get(b, "policyName") == policy_name and "Deny" in (get(b, "validationActions", []) or [])
                and not get(b, "paramRef")
                and get(b, "matchResources.namespaceSelector") == {"matchLabels": selects}):
            return None
    return (f"no binding of admission policy {policy_name!r} denies in namespace {namespace_name!r} "
            f"(validationActions [Deny], namespaceSelector matchLabels {NAME_LABEL}: {namespace_name})")
