"""GPU014: every team namespace enforces Pod Security `baseline` or `restricted`, or is held to baseline by the
platform's own admission policy (teams[].podSecurity: fabric-sidecar)."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import k8s
from policies.baseline_admission import POLICY_LABEL, missing_baseline
from policies.graph import Graph
from policies.rule import Pending, Report, stack_rule

ENFORCE = "pod-security.kubernetes.io/enforce"
STRICT_ENOUGH = ("baseline", "restricted")


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    teams = k8s.team_namespaces(graph)
    if not teams:
        args.not_applicable("no team namespaces (Namespaces labelled gpu-platform.io/team)")
    namespaces = {k8s.name(ns): ns for ns in graph.of_type(k8s.NAMESPACE)}
    pending = Pending()
    for name, found in sorted(teams.items()):
        with pending.each():
            namespace = namespaces.get(name)
            if namespace is None:
                report(f"team namespace {name!r} has no Namespace object in this stack, so nothing shows it enforces "
                       "Pod Security: its pods may be privileged on shared GPU nodes", found.urn)
                continue
            labels = k8s.labels(namespace)
            level = labels.get(ENFORCE)
            if level == "privileged" and POLICY_LABEL in labels:
                # teams[].podSecurity: fabric-sidecar: the platform's admission policy enforces baseline instead.
                if problem := missing_baseline(name, labels, graph):
                    report(f"team namespace {name!r} enforces 'privileged' and {problem}: its pods can run "
                           "privileged and mount host paths on shared GPU nodes", namespace.urn)
                continue
            if level not in STRICT_ENOUGH:
                what = f"enforces {level!r}" if level else f"has no {ENFORCE} label (the cluster default admits all)"
                report(f"team namespace {name!r} {what}: its pods can run privileged, share the node's PID and "
                       "network namespaces and mount host paths on shared GPU nodes", namespace.urn)
    pending.finish()


RULE = stack_rule(
    id="GPU014", slug="team-pod-security",
    title="Every team namespace enforces Pod Security baseline or restricted",
    rationale=("Tenants are untrusted: a privileged pod, a hostPath mount or the host's PID or network namespace "
               "on a GPU node reads other teams' data and GPU memory and takes the node's credentials. Pod "
               "Security Admission `baseline` refuses all of these and still admits GPU pods (the device plugin "
               "hands devices over without privilege or host paths). A GKE GPUDirect team's namespace may enforce "
               "`privileged` only when it names, in label gpu-platform.io/pod-security-policy, a ValidatingAdmissionPolicy "
               "of the stack that fails closed, reads every baseline field and is bound with Deny to that namespace: "
               "it enforces baseline with the fabric sidecar as its one exception."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Create team namespaces with the tenancy layer (`teams[]`): it labels them "
        "`pod-security.kubernetes.io/enforce: baseline` and audits and warns on `restricted`, pinned to the "
        "cluster's minor version.",
        "For namespaces created elsewhere, add the label `pod-security.kubernetes.io/enforce: baseline` (or "
        "`restricted`) with `pod-security.kubernetes.io/enforce-version`.",
    ),
    config_key="teams",
    check=check,
)
