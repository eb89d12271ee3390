"""Kubernetes objects in the graph (typed resources and CRs alike): type tokens and common accessors."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from pulumi_policy import PolicyResource

from policies import quantity
from policies.graph import Graph
from policies.props import get, items, mapping

NAMESPACE = "kubernetes:core/v1:Namespace"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
CLUSTER_QUEUES = ("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue")
RESOURCE_FLAVORS = ("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor",
                    "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor")
VOLCANO_QUEUE = "kubernetes:scheduling.volcano.sh/v1beta1:Queue"
KAI_QUEUE = "kubernetes:scheduling.run.ai/v2:Queue"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
TEAM_COMPONENT = "gpu-platform:tenancy:Team"
TEAM_LABEL = "gpu-platform.io/team"
NAME_LABEL = "kubernetes.io/metadata.name"


def name(resource: PolicyResource) -> str:
    return str(get(resource.props, "metadata.name", resource.name))


def namespace(resource: PolicyResource) -> str:
    return str(get(resource.props, "metadata.namespace", ""))


def labels(resource: PolicyResource) -> Mapping:
    return mapping(get(resource.props, "metadata.labels"))


def spec(resource: PolicyResource) -> Mapping:
    return mapping(get(resource.props, "spec"))


def selects(selector: Mapping, labels: Mapping) -> bool:
    """Kubernetes label selector matching (an empty selector selects everything)."""
    if any(labels.get(k) != v for k, v in mapping(get(selector, "matchLabels")).items()):
        return False
    for expression in items(get(selector, "matchExpressions")):
        key, operator = get(expression, "key"), get(expression, "operator")
        values = [str(v) for v in items(get(expression, "values"))]
        present = key in labels
        if (operator == "In" and labels.get(key) not in values) or (operator == "NotIn" and labels.get(key) in values) \
                or (operator == "Exists" and not present) or (operator == "DoesNotExist" and present):
            return False
    return True


def team_namespaces(graph: Graph) -> dict[str, PolicyResource]:
    """Team namespaces by name: Namespaces labelled as a team's, those Team components declare, and every
    Namespace a Kueue ClusterQueue admits: Kueue reads only the queue's selector, so a namespace it admits runs
    tenant GPU work whether or not it carries the team label, and needs a team's quota, Pod Security and
    default deny."""
    namespaces = {name(ns): ns for ns in graph.of_type(NAMESPACE)}
    found = {n: ns for n, ns in namespaces.items() if TEAM_LABEL in labels(ns)}
    for team in graph.of_type(TEAM_COMPONENT):
        found.setdefault(str(get(team.props, "namespace", team.name)), team)
    for queue in graph.of_type(*CLUSTER_QUEUES):
        selector = get(queue.props, "spec.namespaceSelector")
        if selector is None:
            continue  # Kueue: no selector admits no namespace
        for n, ns in namespaces.items():
            if n not in found and selects(selector, namespace_labels(n, ns)):
                found[n] = ns
    return found


def unscoped_quotas(graph: Graph) -> dict[str, list[PolicyResource]]:
    """ResourceQuotas by namespace, without the scoped ones: a scoped quota only limits the pods its scope selects
    (the priority ceiling's `pods: 0` is one), so it never caps every pod."""
    found: dict[str, list[PolicyResource]] = {}
    for quota in graph.of_type(RESOURCE_QUOTA):
        if not get(quota.props, "spec.scopeSelector") and not get(quota.props, "spec.scopes"):
            found.setdefault(namespace(quota), []).append(quota)
    return found


def namespace_labels(namespace_name: str, resource: PolicyResource) -> dict:
    """A team namespace's labels as selectors see them: the Namespace's own (or, for a Team component, the team
    label it gets) and the name label Kubernetes puts on every namespace."""
    own = dict(labels(resource)) if resource.resource_type == NAMESPACE else \
        {TEAM_LABEL: str(get(resource.props, "team", resource.name))}
    return {**own, NAME_LABEL: namespace_name}


def positive(value: Any) -> bool:
    """Whether a quantity (a quota, a limit, a transformation output) is above zero; one that cannot be read counts
    as positive, so a rule asking "can GPUs be used here" fails closed on it."""
    try:
        return quantity.parse(value) > 0
    except quantity.QuantityError:
        return True


def yaml_text(value: Any) -> Any:
    """A YAML document held in a values string (chart config files), or None when absent or invalid."""
    if not isinstance(value, str):
        return None
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError:
        return None
