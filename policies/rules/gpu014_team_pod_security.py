"""GPU014: every team namespace enforces Pod Security `baseline` or `restricted`, or is held to baseline by the
platform's own admission policy (teams[].podSecurity: fabric-sidecar); one enforcing `privileged` either way is the
single tenant of every pool it can use."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import k8s
from policies.baseline_admission import POLICY_LABEL, missing_baseline
from policies.graph import Graph
from policies.rule import Pending, Report, stack_rule
from policies.tenancy import pool_teams

ENFORCE = "pod-security.kubernetes.io/enforce"
STRICT_ENOUGH = ("baseline", "restricted")


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    teams = k8s.teams_or_not_applicable(args, graph)
    namespaces = {k8s.name(ns): ns for ns in graph.of_type(k8s.NAMESPACE)}
    pending = Pending()
    host_access = []
    for name, found in sorted(teams.items()):
        with pending.each():
            namespace = namespaces.get(name)
            if namespace is None:
                report(f"team namespace {name!r} has no Namespace object in this stack, so nothing shows it enforces "
                       "Pod Security: its pods may be privileged on shared GPU nodes", found.urn)
                continue
            labels = k8s.labels(namespace)
            level = labels.get(ENFORCE)
            if level == "privileged":
                host_access.append(name)
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
    _single_tenant(graph, host_access, report, pending)
    pending.finish()


def _single_tenant(graph: Graph, host_access: list[str], report: Report, pending: Pending) -> None:
    """Reported on the pool, not the namespace: an exemption for a privileged namespace never covers sharing a pool
    (with fabric-sidecar, `edit`'s pods/exec into the sidecar reaches its host mounts)."""
    for pool in graph.pools():
        with pending.each():
            tenants = pool_teams(graph, pool)
            for name in host_access:
                others = [t for t in tenants if t != name]
                if name in tenants and others:
                    report(f"team namespace {name!r} enforces 'privileged' (its pods can reach the host) on pool "
                           f"{pool.name!r}, which {', '.join(others)} can also use: it is root on their nodes; only a "
                           "pool's single tenant may run privileged there", pool.resource.urn)


RULE = stack_rule(
    id="GPU014", slug="team-pod-security",
    title="Every team namespace enforces Pod Security baseline or restricted",
    rationale=("Tenants are untrusted: a privileged pod, a hostPath mount or the host's PID or network namespace "
               "on a GPU node reads other teams' data and GPU memory and takes the node's credentials. Pod "
               "Security Admission `baseline` refuses all of these and still admits GPU pods (the device plugin "
               "hands devices over without privilege or host paths). A GKE GPUDirect team's namespace may enforce "
               "`privileged` only when it names, in label gpu-platform.io/pod-security-policy, a ValidatingAdmissionPolicy "
               "of the stack that fails closed, reads every baseline field and is bound with Deny to that namespace: "
               "it enforces baseline with the fabric sidecar as its one exception. A namespace enforcing "
               "`privileged` either way must be the only team able to use each of its pools (Kueue queues or "
               "quotas): otherwise its pods own nodes other teams' pods run on."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Create team namespaces with the tenancy layer (`teams[]`): it labels them "
        "`pod-security.kubernetes.io/enforce: baseline` and audits and warns on `restricted`, pinned to the "
        "cluster's minor version.",
        "For namespaces created elsewhere, add the label `pod-security.kubernetes.io/enforce: baseline` (or "
        "`restricted`) with `pod-security.kubernetes.io/enforce-version`.",
        "Give each pool a `privileged` or `fabric-sidecar` team uses to that team alone (`teams[].quotas`).",
    ),
    config_key="teams",
    check=check,
)
