"""GPU015: every team namespace has a default-deny NetworkPolicy (every pod, both directions, no rules) and no
policy that reopens it to every namespace or address."""
from __future__ import annotations

from collections.abc import Mapping

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import k8s
from policies.graph import Graph
from policies.props import get, items, mapping
from policies.rule import Pending, Report, stack_rule

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
DIRECTIONS = (("Ingress", "ingress", "from"), ("Egress", "egress", "to"))
EVERYWHERE = ("0.0.0.0/0", "::/0")


def _selects_every_pod(policy) -> bool:
    selector = mapping(get(policy.props, "spec.podSelector"))
    return not mapping(selector.get("matchLabels")) and not items(selector.get("matchExpressions"))


def _denies_every_pod(policy) -> bool:
    """A pure deny: selects every pod and allows nothing, so isolation never depends on an allow policy's selector."""
    return _selects_every_pod(policy) and not any(items(get(policy.props, f"spec.{field}"))
                                                  for _, field, _ in DIRECTIONS)


def _types(policy) -> set[str]:
    """policyTypes as Kubernetes defaults them: Ingress always, Egress when egress rules exist."""
    declared = items(get(policy.props, "spec.policyTypes"))
    if declared:
        return {str(t) for t in declared}
    return {"Ingress", *(["Egress"] if items(get(policy.props, "spec.egress")) else [])}


def _opens(peer: Mapping) -> bool:
    """A peer matching every pod in every namespace, or every address."""
    if "namespaceSelector" in peer and not mapping(peer["namespaceSelector"]):
        return True
    block = mapping(peer.get("ipBlock"))
    return str(block.get("cidr")) in EVERYWHERE and not items(block.get("except"))


def _open_rules(policy) -> list[str]:
    found = []
    for kind, field, peers in DIRECTIONS:
        if kind not in _types(policy):
            continue
        for rule in items(get(policy.props, f"spec.{field}")):
            listed = items(get(rule, peers))
            if not listed:
                found.append(f"{field} rule without `{peers}` (every peer)")
            elif any(_opens(mapping(p)) for p in listed):
                found.append(f"{field} rule reaching every namespace or address")
    return found


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    teams = k8s.team_namespaces(graph)
    if not teams:
        args.not_applicable("no team namespaces (Namespaces labelled gpu-platform.io/team)")
    by_namespace: dict[str, list] = {}
    for policy in graph.of_type(NETWORK_POLICY):
        by_namespace.setdefault(k8s.namespace(policy), []).append(policy)
    pending = Pending()
    for name, resource in sorted(teams.items()):
        with pending.each():
            policies = by_namespace.get(name, [])
            denied = {t for p in policies if _denies_every_pod(p) for t in _types(p)}
            missing = [kind for kind, _, _ in DIRECTIONS if kind not in denied]
            if missing:
                report(f"team namespace {name!r} has no default-deny NetworkPolicy (every pod, no rules) for "
                       f"{' and '.join(missing)}: what it allows then rests on every other policy selecting "
                       "exactly the right pods, and without any policy its pods talk to every other team's",
                       resource.urn)
            for policy in policies:
                for problem in _open_rules(policy):
                    report(f"NetworkPolicy {name}/{k8s.name(policy)} has an {problem}: it undoes the team's "
                           "default deny", policy.urn)
    pending.finish()


RULE = stack_rule(
    id="GPU015", slug="team-default-deny",
    title="Every team namespace has a default-deny NetworkPolicy for ingress and egress",
    rationale=("Without a policy selecting every pod, a namespace's pods take connections from any pod in the "
               "cluster and reach every other team's services, training rendezvous ports and notebooks. Deny "
               "both directions by default and allow only DNS, the team's own namespace, Prometheus scrapes and, "
               "if chosen, public addresses; an allowance matching every namespace or address reopens it all."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Create team namespaces with the tenancy layer (`teams[]`): it adds `default-deny` (podSelector {}, "
        "policyTypes Ingress and Egress) and one NetworkPolicy per allowance; `teams[].egress: none` drops "
        "internet egress.",
        "For namespaces created elsewhere, add a NetworkPolicy with `podSelector: {}` and `policyTypes: [Ingress, "
        "Egress]`, and give every allowance explicit peers (no empty `namespaceSelector`, no bare 0.0.0.0/0).",
    ),
    config_key="teams",
    check=check,
)
