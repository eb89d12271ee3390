"""GPU003: every team namespace has a ResourceQuota capping every GPU resource the pools advertise."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import k8s
from policies.graph import Graph
from policies.props import get, mapping
from policies.rule import Pending, Report, stack_rule

GPU_RESOURCE = "nvidia.com/gpu"


def advertised(graph: Graph) -> list[str]:
    """Every GPU resource some pool advertises (whole GPUs, or MIG slices such as nvidia.com/mig-1g.10gb)."""
    names = {GPU_RESOURCE}
    for pool in graph.pools():
        names.update(str(k) for k in mapping(pool.declared("advertised")))
    return sorted(names)


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    teams = k8s.team_namespaces(graph)
    if not teams:
        args.not_applicable("no team namespaces (Namespaces labelled gpu-platform.io/team)")
    resources = advertised(graph)
    unscoped = k8s.unscoped_quotas(graph)  # the cap must hold for every pod
    pending = Pending()
    for namespace, resource in sorted(teams.items()):
        with pending.each():
            hard: dict[str, object] = {}
            for quota in unscoped.get(namespace, ()):
                hard.update({str(k): v for k, v in mapping(get(quota.props, "spec.hard")).items()})
            missing = [r for r in resources if f"requests.{r}" not in hard]
            if missing:
                report(f"team namespace {namespace!r} has no ResourceQuota capping "
                       f"{', '.join(f'requests.{r}' for r in missing)}: its pods can take every such GPU in the "
                       "cluster", resource.urn)
    pending.finish()


RULE = stack_rule(
    id="GPU003", slug="team-gpu-quota",
    title="Every team namespace has a ResourceQuota capping GPUs, MIG resources included",
    rationale=("A queue limits what the scheduler admits, but a pod created outside it (or a scheduler "
               "outage) is only stopped by the namespace's ResourceQuota. Every team namespace needs an "
               "unscoped quota on `requests.nvidia.com/gpu` and on every MIG resource a pool advertises "
               "(`requests.nvidia.com/mig-<profile>` with the mixed strategy), or MIG slices are unlimited."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Give every team quotas (`teams[].quotas`): the tenancy layer writes one ResourceQuota per team "
        "namespace with a cap for each GPU resource its pools advertise.",
        "For namespaces created elsewhere, add a ResourceQuota with `spec.hard` keys `requests.nvidia.com/gpu` "
        "and each `requests.nvidia.com/mig-<profile>`, without scopes.",
    ),
    config_key="teams.quotas",
    check=check,
)
