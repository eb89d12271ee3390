"""Which teams can place GPU work on which pool, from what the scheduler and quotas in the graph allow.

With Kueue the ClusterQueues decide: a team uses a pool when its queue lists the pool's ResourceFlavor with
quota, or may borrow it through a cohort. Without Kueue any team namespace whose quota admits the pool's
resources can use it (taints are tolerated per pod, so nothing else keeps a team off a pool).
"""
from __future__ import annotations

from pulumi_policy import PolicyResource

from policies import k8s
from policies.graph import Graph, Pool
from policies.props import get, items, mapping


def _flavor_selects(flavor: PolicyResource, pool: Pool) -> bool:
    wanted = mapping(get(flavor.props, "spec.nodeLabels"))
    return bool(wanted) and all(pool.label(str(k)) == str(v) for k, v in wanted.items())


def _queue_uses(queue: PolicyResource, flavors: set[str]) -> bool:
    cohort = get(queue.props, "spec.cohortName") or get(queue.props, "spec.cohort")
    for group in items(get(queue.props, "spec.resourceGroups")):
        for flavor in items(get(group, "flavors")):
            if str(get(flavor, "name")) not in flavors:
                continue
            for resource in items(get(flavor, "resources")):
                nominal = k8s.quantity(get(resource, "nominalQuota", 0))
                borrowing = get(resource, "borrowingLimit")
                if nominal > 0 or (cohort and (borrowing is None or k8s.quantity(borrowing) > 0)):
                    return True
    return False


def _quota_admits(graph: Graph, namespace: str, resources: list[str]) -> bool:
    quotas = [q for q in graph.of_type(k8s.RESOURCE_QUOTA) if k8s.namespace(q) == namespace
              and not get(q.props, "spec.scopeSelector") and not get(q.props, "spec.scopes")]
    for resource in resources:
        caps = [mapping(get(q.props, "spec.hard")).get(f"requests.{resource}") for q in quotas]
        caps = [c for c in caps if c is not None]
        if not caps or min(k8s.quantity(c) for c in caps) > 0:
            return True
    return False


def pool_teams(graph: Graph, pool: Pool) -> list[str]:
    """The teams (namespaces, or Kueue ClusterQueues) that can run GPU work on `pool`."""
    flavors = {k8s.name(f) for f in graph.of_type(*k8s.RESOURCE_FLAVORS) if _flavor_selects(f, pool)}
    queues = graph.of_type(*k8s.CLUSTER_QUEUES)
    if queues and flavors:
        return sorted(k8s.name(q) for q in queues if _queue_uses(q, flavors))
    advertised = list(mapping(pool.declared("advertised"))) or ["nvidia.com/gpu"]
    return sorted(ns for ns in k8s.team_namespaces(graph) if _quota_admits(graph, ns, advertised))
