"""GPU015: every team namespace has a default-deny NetworkPolicy (every pod, both directions, no rules) and no
policy that reopens it to every namespace or address."""
from __future__ import annotations

from collections.abc import Mapping

from pulumi_policy import EnforcementLevel, PolicyResource, Severity, StackValidationArgs

from policies import cidrs, k8s
from policies.graph import Graph
from policies.props import get, items, mapping
from policies.rule import Report, check_each, stack_rule

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
DIRECTIONS = (("Ingress", "ingress", "from"), ("Egress", "egress", "to"))
# An allowance may reach a few cluster-internal addresses (a database, a license server): up to a /24's worth,
# less than one node subnet, so never every team's pods. More is "every address" whatever its spelling (one
# VPC CIDR, split halves, 0.0.0.0/0 except one token /32).
INTERNAL_LIMIT = 256
# The networks a cluster's nodes and pods live in, when the stack creates them: (type, fields holding CIDRs).
NETWORKS = (("aws:ec2/vpc:Vpc", ("cidrBlock",)), ("aws:ec2/subnet:Subnet", ("cidrBlock",)),
            ("oci:Core/vcn:Vcn", ("cidrBlocks", "cidrBlock")),
            ("gcp:compute/subnetwork:Subnetwork", ("ipCidrRange", "secondaryIpRanges.ipCidrRange")),
            ("azure-native:network:VirtualNetwork", ("addressSpace.addressPrefixes",)))
ANY_NAMESPACE = "\x00a namespace created later"  # a name no selector value equals


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


def _opens(peer: Mapping, own: str, teams: Mapping) -> bool:
    """A peer reaching beyond the team: a namespaceSelector that also matches a namespace created later with no
    labels but its name (an empty one, `Exists` on the name label, `NotIn`, `DoesNotExist`), or another team's
    namespace. A selector it cannot read (an unknown operator) matches, as nothing narrows it."""
    if "namespaceSelector" not in peer:
        return False
    selector = mapping(peer["namespaceSelector"])
    probe = {k8s.NAME_LABEL: ANY_NAMESPACE}
    return k8s.selects(selector, probe) or any(
        k8s.selects(selector, k8s.namespace_labels(name, r)) for name, r in teams.items() if name != own)


def _blocks(policy, field: str, peers: str) -> tuple[dict[int, list], list[str]]:
    """The addresses a policy's ipBlocks allow in one direction (each cidr minus its except list), per family,
    and entries that are not CIDRs."""
    allowed: dict[int, list] = {4: [], 6: []}
    invalid: list[str] = []
    for rule in items(get(policy.props, f"spec.{field}")):
        for peer in items(get(rule, peers)):
            block = mapping(get(peer, "ipBlock"))
            if not block:
                continue
            found, bad = cidrs.parse([block.get("cidr")])
            holes, bad_holes = cidrs.parse(items(block.get("except")))
            invalid += bad + bad_holes
            for version, networks in found.items():
                allowed[version] += cidrs.subtract(networks, holes[version])
    return allowed, invalid


def _internal(graph: Graph) -> dict[int, list]:
    """Where the cluster's own addresses are: private ranges, and the stack's VPC/VCN/subnet CIDRs."""
    found, _ = cidrs.parse(str(c) for type_, fields in NETWORKS for r in graph.of_type(type_) for f in fields
                           for c in _values(r.props, f))
    return {v: [*cidrs.INTERNAL[v], *found[v]] for v in found}


def _values(props, path: str) -> list:
    head, _, rest = path.partition(".")
    value = get(props, head)
    if rest:
        return [v for item in items(value) for v in _values(item, rest)]
    return items(value) if items(value) else ([value] if value is not None else [])


def _open_rules(policy, own: str, teams: Mapping) -> list[str]:
    found = []
    for kind, field, peers in DIRECTIONS:
        if kind not in _types(policy):
            continue
        for rule in items(get(policy.props, f"spec.{field}")):
            listed = items(get(rule, peers))
            if not listed:
                found.append(f"{field} rule without `{peers}` (every peer)")
            elif any(_opens(mapping(p), own, teams) for p in listed):
                found.append(f"{field} rule reaching every namespace or address (a namespaceSelector matching "
                             "other teams' or future namespaces)")
    return found


def _open_addresses(policies: list, internal: dict[int, list]) -> list[tuple[list, str]]:
    """(policies, problem) per direction whose ipBlocks together reach more cluster-internal addresses than
    INTERNAL_LIMIT, or hold entries that are not CIDRs. Allowances add up across a namespace's policies."""
    found = []
    for kind, field, peers in DIRECTIONS:
        reach: dict[int, list] = {4: [], 6: []}
        involved, invalid = [], []
        for policy in policies:
            if kind not in _types(policy):
                continue
            allowed, bad = _blocks(policy, field, peers)
            inside = {v: cidrs.intersect(allowed[v], internal[v]) for v in allowed}
            if bad or any(inside.values()):
                involved.append(policy)
            invalid += bad
            for v in reach:
                reach[v] += inside[v]
        total = sum(cidrs.count(reach[v]) for v in reach)
        if invalid:
            found.append((involved, f"{field} rule with ipBlock entries that are not CIDRs ({', '.join(invalid)})"))
        elif total > INTERNAL_LIMIT:
            found.append((involved, f"{field} rule reaching every namespace or address ({total:,} cluster-internal "
                                    f"addresses, more than a /24's worth; the cluster's pods live there)"))
    return found


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    teams = k8s.teams_or_not_applicable(args, graph)
    by_namespace: dict[str, list] = {}
    for policy in graph.of_type(NETWORK_POLICY):
        by_namespace.setdefault(k8s.namespace(policy), []).append(policy)
    internal = _internal(graph)

    def check_team(team: tuple[str, PolicyResource]) -> None:
        name, resource = team
        policies = by_namespace.get(name, [])
        denied = {t for p in policies if _denies_every_pod(p) for t in _types(p)}
        missing = [kind for kind, _, _ in DIRECTIONS if kind not in denied]
        if missing:
            report(f"team namespace {name!r} has no default-deny NetworkPolicy (every pod, no rules) for "
                   f"{' and '.join(missing)}: what it allows then rests on every other policy selecting "
                   "exactly the right pods, and without any policy its pods talk to every other team's",
                   resource.urn)
        for policy in policies:
            for problem in _open_rules(policy, name, teams):
                report(f"NetworkPolicy {name}/{k8s.name(policy)} has an {problem}: it undoes the team's "
                       "default deny", policy.urn)
        for involved, problem in _open_addresses(policies, internal):
            report(f"NetworkPolicy {', '.join(f'{name}/{k8s.name(p)}' for p in involved)} has an {problem}: it "
                   "undoes the team's default deny", involved[0].urn)

    check_each(sorted(teams.items()), check_team)


RULE = stack_rule(
    id="GPU015", slug="team-default-deny",
    title="Every team namespace has a default-deny NetworkPolicy for ingress and egress",
    rationale=("Without a policy selecting every pod, a namespace's pods take connections from any pod in the "
               "cluster and reach every other team's services, training rendezvous ports and notebooks. Deny "
               "both directions by default and allow only DNS, the team's own namespace, Prometheus scrapes and, "
               "if chosen, public addresses; an allowance matching every namespace or address reopens it all. "
               "Measured, not matched: a namespaceSelector reopens when it also matches another team's namespace "
               "or one created later (empty, `Exists` on the name label, `NotIn`, `DoesNotExist`), and ipBlocks "
               "(each cidr minus its except list, added up over the namespace's policies) reopen when they reach "
               "more than a /24's worth of the cluster's addresses (private ranges and the stack's VPC, VCN and "
               "subnet CIDRs), however the CIDRs are split."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Create team namespaces with the tenancy layer (`teams[]`): it adds `default-deny` (podSelector {}, "
        "policyTypes Ingress and Egress) and one NetworkPolicy per allowance; `teams[].egress: none` drops "
        "internet egress.",
        "For namespaces created elsewhere, add a NetworkPolicy with `podSelector: {}` and `policyTypes: [Ingress, "
        "Egress]`, and give every allowance explicit peers (namespaces by name, public addresses with the private "
        "ranges excepted).",
    ),
    config_key="teams",
    check=check,
)
