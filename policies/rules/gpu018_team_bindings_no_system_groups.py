"""GPU018: no RoleBinding in a team namespace grants a Kubernetes built-in (`system:`) group."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyResource, Severity, StackValidationArgs

from policies import k8s
from policies.graph import Graph
from policies.props import get, items
from policies.rule import Report, check_each, stack_rule

ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
SYSTEM_GROUP_PREFIX = "system:"


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    teams = k8s.teams_or_not_applicable(args, graph)

    def check_binding(binding: PolicyResource) -> None:
        namespace = k8s.namespace(binding)
        if namespace not in teams:
            return
        # RBAC compares names exactly: only a subject spelled system:* is one of the built-in groups.
        groups = sorted({str(get(s, "name")) for s in items(get(binding.props, "subjects"))
                         if get(s, "kind") == "Group" and str(get(s, "name", "")).startswith(SYSTEM_GROUP_PREFIX)})
        if groups:
            role = get(binding.props, "roleRef.name", "?")
            report(f"RoleBinding {namespace}/{k8s.name(binding)} grants {role!r} in team namespace "
                   f"{namespace!r} to built-in group(s) {', '.join(groups)}: every identity, every service "
                   "account or the cluster admins, not the team", binding.urn)

    check_each(graph.of_type(ROLE_BINDING), check_binding)


RULE = stack_rule(
    id="GPU018", slug="team-bindings-no-system-groups",
    title="No RoleBinding in a team namespace grants a built-in system: group",
    rationale=("Kubernetes puts identities in built-in groups by itself: every authenticated user in "
               "`system:authenticated`, every service account of every namespace in `system:serviceaccounts`, "
               "cluster admins in `system:masters`. A team namespace's RoleBinding naming one of them (its `edit` "
               "binding, or its Kueue queue user binding) gives that role in the namespace to everyone in the "
               "group, so any other tenant can run pods on the team's GPU quota and read its Secrets. The config "
               "refuses such groups in `teams[].groups`; this checks the plan as written."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "List only your identity provider's groups for the team (`teams[].groups`), never a `system:` group.",
        "For RoleBindings made elsewhere, replace the built-in group subject with the team's own group.",
    ),
    config_key="teams",
    check=check,
)
