"""GPU020: every team namespace has an unscoped ResourceQuota capping CPU, memory and pods."""
from __future__ import annotations

from collections.abc import Mapping

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import k8s
from policies.graph import Graph
from policies.props import get
from policies.quantity import QuantityError, parse
from policies.rule import Pending, Report, stack_rule

# Each cap and the quota keys that hold it: Kubernetes reads `cpu` and `memory` as `requests.*`.
CAPS = {"cpu": ("requests.cpu", "cpu"), "memory": ("requests.memory", "memory"), "pods": ("pods",)}


def _problems(namespace: str, quotas: list) -> list[str]:
    """What the namespace's unscoped quotas leave uncapped or unreadable (read fail closed)."""
    hard: dict[str, object] = {}
    unreadable = []
    for quota in quotas:
        spec_hard = get(quota.props, "spec.hard")
        if not isinstance(spec_hard, Mapping):
            unreadable.append(f"{namespace}/{get(quota.props, 'metadata.name', quota.name)} spec.hard is not a map")
            continue
        hard.update({str(k): v for k, v in spec_hard.items()})
    missing = []
    for cap, keys in CAPS.items():
        values = [(key, hard[key]) for key in keys if key in hard]
        if not values:
            missing.append(cap)
        for key, value in values:
            try:
                parse(value)
            except QuantityError:
                unreadable.append(f"{key}: {value!r} is not a Kubernetes quantity")
    return ([f"no cap on {', '.join(missing)}"] if missing else []) + unreadable


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    teams = k8s.team_namespaces(graph)
    if not teams:
        args.not_applicable("no team namespaces (Namespaces labelled gpu-platform.io/team)")
    # A scoped quota only limits the pods its scope selects (the priority ceiling's pods: 0 is one): never a cap.
    unscoped: dict[str, list] = {}
    for quota in graph.of_type(k8s.RESOURCE_QUOTA):
        if not get(quota.props, "spec.scopeSelector") and not get(quota.props, "spec.scopes"):
            unscoped.setdefault(k8s.namespace(quota), []).append(quota)
    pending = Pending()
    for namespace, resource in sorted(teams.items()):
        with pending.each():
            if problems := _problems(namespace, unscoped.get(namespace, [])):
                report(f"team namespace {namespace!r} has no readable CPU, memory and pod caps ({'; '.join(problems)})"
                       ": one team's CPU pods can take the system pool where Kueue, Prometheus and the autoscaler "
                       "run", resource.urn)
    pending.finish()


RULE = stack_rule(
    id="GPU020", slug="team-compute-quota",
    title="Every team namespace has a ResourceQuota capping CPU, memory and pods",
    rationale=("GPU quota does not bound CPU work: without CPU, memory and pod caps one team's Deployment can "
               "fill the system pool and starve Kueue, Prometheus and the autoscaler, which every team needs. "
               "Every team namespace needs unscoped `hard` caps on `requests.cpu` (or `cpu`), `requests.memory` "
               "(or `memory`) and `pods`, each a valid Kubernetes quantity; a quota the pack cannot read (a "
               "`hard` that is not a map, a value that is not a quantity) fails, as does a scoped quota alone."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Keep the tenancy layer's `compute-quota` ResourceQuota (set `teams[].limits` to hold a team tighter "
        "than the default derived from its pools).",
        "For namespaces created elsewhere, add an unscoped ResourceQuota with `spec.hard` keys `requests.cpu`, "
        "`requests.memory` and `pods`.",
    ),
    config_key="teams",
    check=check,
)
