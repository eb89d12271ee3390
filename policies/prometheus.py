"""What the stack's Prometheus picks up: its ServiceMonitor and rule selectors, and the rules it evaluates."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from policies import charts, k8s
from policies.graph import Graph
from policies.k8s import selects
from policies.props import get, items, mapping

PROMETHEUS_COMPONENT = "gpu-platform:observability:Prometheus"
_SPEC = "prometheus.prometheusSpec"
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


@dataclass
class Prometheus:
    """One Prometheus the stack installs or adopts, by its selectors (None: it selects nothing we know of)."""

    name: str
    urn: str
    service_monitors: Mapping
    rules: Mapping


def _selector(release: charts.Release, kind: str) -> Mapping:
    selector = mapping(release.value(f"{_SPEC}.{kind}Selector"))
    if selector or not release.value(f"{_SPEC}.{kind}SelectorNilUsesHelmValues"):
        return selector
    return {"matchLabels": {"release": release.release_name}}


def prometheuses(graph: Graph) -> list[Prometheus]:
    """kube-prometheus-stack releases by their values; else an adopted Prometheus by its declared selector."""
    found = [Prometheus(r.resource.name, r.resource.urn, _selector(r, "serviceMonitor"), _selector(r, "rule"))
             for r in charts.releases(graph, charts.KUBE_PROMETHEUS_STACK)]
    if not found:
        for component in graph.of_type(PROMETHEUS_COMPONENT):
            selector = {"matchLabels": dict(mapping(get(component.props, "selector")))}
            found.append(Prometheus(component.name, component.urn, selector, selector))
    return found


def recording_rules(graph: Graph, prometheus: Prometheus) -> tuple[dict[str, str], list[Mapping]]:
    """Recorded series -> expression, and alerting rules, of the PrometheusRules `prometheus` loads."""
    records: dict[str, str] = {}
    alerts: list[Mapping] = []
    for rule_object in graph.of_type(k8s.PROMETHEUS_RULE):
        if not selects(prometheus.rules, k8s.labels(rule_object)):
            continue
        for group in items(get(rule_object.props, "spec.groups")):
            for rule in items(get(group, "rules")):
                if get(rule, "record"):
                    records[str(get(rule, "record"))] = str(get(rule, "expr", ""))
                elif get(rule, "alert"):
                    alerts.append(rule)
    return records, alerts


def series(expr: str, records: Mapping[str, str]) -> set[str]:
    """Every metric name `expr` reads, following recorded series back to the expressions that define them."""
    seen: set[str] = set()
    pending = [expr]
    while pending:
        for name in _IDENTIFIER.findall(pending.pop()):
            if name not in seen:
                seen.add(name)
                if name in records:
                    pending.append(records[name])
    return seen
