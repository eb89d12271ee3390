"""GPU020: team CPU work cannot starve the platform: every team namespace has an unscoped ResourceQuota capping CPU,
memory and pods, and every pool that is not a GPU pool (the system pool) is tainted so team pods stay off it."""
from __future__ import annotations

from collections.abc import Mapping

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import k8s
from policies.graph import Graph
from policies.props import get, items
from policies.quantity import QuantityError, parse
from policies.shapes import SHAPES
from policies.taints import taint_from_string
from policies.rule import Pending, Report, stack_rule

# Cloud node pools a system pool can be (Karpenter NodePools and OKE cluster networks are only ever GPU capacity here).
SYSTEM_POOL_TYPES = ("aws:eks/nodeGroup:NodeGroup", "gcp:container/nodePool:NodePool",
                     "oci:ContainerEngine/nodePool:NodePool", "azure-native:containerservice:AgentPool")
AKS_CLUSTER = "azure-native:containerservice:ManagedCluster"
REPELS = ("NoSchedule", "NoExecute")
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


def _untainted_system_pools(graph: Graph, pending: Pending) -> list[tuple[str, object, str]]:
    """(name, resource, why) of every pool outside the GPU pools that team pods could schedule onto."""
    gpu = {p.node_pool.urn for p in graph.pools() if p.node_pool is not None}
    found = []
    for pool in graph.of_type(*SYSTEM_POOL_TYPES):
        with pending.each():
            if pool.urn in gpu or graph.has_gpus(pool):
                continue
            shape = SHAPES[pool.resource_type]
            props = graph.node_pool_props(pool)
            if not any(t.effect in REPELS for t in [*shape.taints(props), *shape.implicit_taints(props)]):
                found.append((pool.name, pool, f"{shape.taint_field} has no NoSchedule taint"))
    for cluster in graph.of_type(AKS_CLUSTER):  # the AKS system pool is an entry of the cluster itself
        with pending.each():
            for entry in items(get(cluster.props, "agentPoolProfiles")):
                taints = [str(t) for t in items(get(entry, "nodeTaints"))]
                parsed = [taint_from_string(t) for t in taints]
                name = f"{cluster.name} agentPoolProfiles[{get(entry, 'name', '?')}]"
                if None in parsed:
                    found.append((name, cluster, f"nodeTaints {taints} has an entry that is not key=value:Effect"))
                elif not any(t.effect in REPELS for t in parsed):
                    found.append((name, cluster, "nodeTaints has no NoSchedule taint"))
    return found


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    teams = k8s.team_namespaces(graph)
    if not teams:
        args.not_applicable("no team namespaces (Namespaces labelled gpu-platform.io/team)")
    unscoped = k8s.unscoped_quotas(graph)
    pending = Pending()
    for namespace, resource in sorted(teams.items()):
        with pending.each():
            if problems := _problems(namespace, unscoped.get(namespace, [])):
                report(f"team namespace {namespace!r} has no readable CPU, memory and pod caps ({'; '.join(problems)})"
                       ": one team's CPU pods can take the system pool where Kueue, Prometheus and the autoscaler "
                       "run", resource.urn)
    for name, pool, why in _untainted_system_pools(graph, pending):
        report(f"system pool {name!r} is open to team pods ({why}): a team's CPU pods can land beside Kueue, "
               "Prometheus and the autoscaler and starve them; taint it CriticalAddonsOnly=true:NoSchedule",
               pool.urn)
    pending.finish()


RULE = stack_rule(
    id="GPU020", slug="team-compute-quota",
    title="Team CPU work cannot starve the platform: CPU, memory and pod caps, and a tainted system pool",
    rationale=("GPU quota does not bound CPU work: without CPU, memory and pod caps one team's Deployment can "
               "fill the system pool and starve Kueue, Prometheus and the autoscaler, which every team needs. "
               "Every team namespace needs unscoped `hard` caps on `requests.cpu` (or `cpu`), `requests.memory` "
               "(or `memory`) and `pods`, each a valid Kubernetes quantity; a quota the pack cannot read (a "
               "`hard` that is not a map, a value that is not a quantity) fails, as does a scoped quota alone. "
               "The caps bound how much, not where: every node pool that is not a GPU pool (the system pool, an AKS "
               "cluster's `agentPoolProfiles` entries included) must carry a NoSchedule or NoExecute taint, "
               "read in each cloud's spelling; a taint the pack cannot parse fails."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Keep the tenancy layer's `compute-quota` ResourceQuota (set `teams[].limits` to hold a team tighter "
        "than the default derived from its pools).",
        "For namespaces created elsewhere, add an unscoped ResourceQuota with `spec.hard` keys `requests.cpu`, "
        "`requests.memory` and `pods`.",
        "Keep the system pool's `CriticalAddonsOnly=true:NoSchedule` taint (EKS node group `taints`, AKS "
        "`nodeTaints`, GKE `nodeConfig.taints`, OKE `--register-with-taints`) and tolerate it in platform charts.",
    ),
    config_key="teams",
    check=check,
)
