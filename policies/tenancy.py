"""Which teams can place GPU work on which pool, from what the scheduler and quotas in the graph allow.

With Kueue the ClusterQueues decide: a team uses a pool when a queue its namespace may submit to (the queue's
namespaceSelector, evaluated on the planned team Namespaces' labels) lists a ResourceFlavor selecting the pool
(by any node label the pool's nodes carry, instance type included; a label GPU feature discovery adds at run
time matches whatever its value; a flavor without nodeLabels selects every pool) with quota, or may borrow it through a cohort. Without Kueue any team namespace whose quota admits the pool's
resources can use it (taints are tolerated per pod, so nothing else keeps a team off a pool).
"""
from __future__ import annotations

from pulumi_policy import PolicyResource

from policies import k8s
from policies.graph import Graph, Pool
from policies.props import get, items, mapping


# Labels GPU feature discovery and node-feature-discovery put on nodes at run time (product name, memory, count,
# driver and CUDA versions, sharing strategy): the graph holds none of their values.
DISCOVERED = ("nvidia.com/", "feature.node.kubernetes.io/")


def _flavor_selects(flavor: PolicyResource, pool: Pool) -> bool:
    # Kueue adds a flavor's nodeLabels as a node selector; without any, admitted pods may land on every pool.
    wanted = mapping(get(flavor.props, "spec.nodeLabels"))
    return all(_may_carry(pool, str(k), str(v)) for k, v in wanted.items())


def _may_carry(pool: Pool, key: str, value: str) -> bool:
    """Whether the pool's nodes can carry label key=value. A discovered label the pool does not set itself may
    have any value, so it is taken to match: a flavor selecting `nvidia.com/gpu.product` selects every GPU pool
    until the graph says otherwise."""
    known = pool.label_values(key)
    return value in known or (not known and key.startswith(DISCOVERED))


def queue_tenants(queue: PolicyResource, teams: dict[str, PolicyResource]) -> list[str]:
    """The team namespaces whose workloads a ClusterQueue admits; the queue itself when it matches none of them
    (someone outside the planned teams uses it)."""
    selector = get(queue.props, "spec.namespaceSelector")
    # Kueue: an absent selector admits no namespace, an empty one admits every namespace.
    matched = [] if selector is None else [
        ns for ns, r in teams.items() if k8s.selects(selector, k8s.namespace_labels(ns, r))]
    return sorted(matched) or [f"queue:{k8s.name(queue)}"]


def _queue_uses(queue: PolicyResource, flavors: set[str]) -> bool:
    cohort = get(queue.props, "spec.cohortName") or get(queue.props, "spec.cohort")
    for group in items(get(queue.props, "spec.resourceGroups")):
        for flavor in items(get(group, "flavors")):
            if str(get(flavor, "name")) not in flavors:
                continue
            for resource in items(get(flavor, "resources")):
                borrowing = get(resource, "borrowingLimit")
                if k8s.positive(get(resource, "nominalQuota", 0)) or \
                        (cohort and (borrowing is None or k8s.positive(borrowing))):
                    return True
    return False


def _quota_admits(graph: Graph, namespace: str, resources: list[str]) -> bool:
    quotas = [q for q in graph.of_type(k8s.RESOURCE_QUOTA) if k8s.namespace(q) == namespace
              and not get(q.props, "spec.scopeSelector") and not get(q.props, "spec.scopes")]
    for resource in resources:
        caps = [mapping(get(q.props, "spec.hard")).get(f"requests.{resource}") for q in quotas]
        caps = [c for c in caps if c is not None]
        if not caps or all(k8s.positive(c) for c in caps):
            return True
    return False


def pool_teams(graph: Graph, pool: Pool) -> list[str]:
    """The teams (namespaces, or Kueue ClusterQueues) that can run GPU work on `pool`."""
    flavors = {k8s.name(f) for f in graph.of_type(*k8s.RESOURCE_FLAVORS) if _flavor_selects(f, pool)}
    queues = graph.of_type(*k8s.CLUSTER_QUEUES)
    if queues and flavors:
        teams = k8s.team_namespaces(graph)
        return sorted({t for q in queues if _queue_uses(q, flavors) for t in queue_tenants(q, teams)})
    advertised = list(mapping(pool.declared("advertised"))) or ["nvidia.com/gpu"]
    return sorted(ns for ns in k8s.team_namespaces(graph) if _quota_admits(graph, ns, advertised))
