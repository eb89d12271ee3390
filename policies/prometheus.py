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
_NUMBER = re.compile(r"[0-9.][0-9A-Za-z_.]*")  # numbers, hex, exponents, durations (5m, 1h30m)
_OPERATORS = set("+-*/%^=!<>~,@")
_PAIRS = {"(": ")", "{": "}", "[": "]"}
# Names that are never metrics: binary operators and modifiers, and the number literals Inf and NaN.
_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
             "inf", "nan"}
_LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}  # followed by (label, ...)


class PromQLError(ValueError):
    """Text the lexer does not understand: read as naming no metric (fail closed)."""


def _tokens(expr: str) -> list[tuple[str, str]]:
    """PromQL tokens as (kind, text): name, string, number, open, close, op. Comments and whitespace are
    dropped; an unterminated string, an unbalanced bracket or a character PromQL has no use for raises."""
    tokens, stack, i = [], [], 0
    while i < len(expr):
        c = expr[i]
        if c.isspace():
            i += 1
        elif c == "#":  # a comment runs to the end of the line
            end = expr.find("\n", i)
            i = len(expr) if end < 0 else end
        elif c in "\"'`":
            j = i + 1
            while j < len(expr) and expr[j] != c:
                j += 2 if expr[j] == "\\" and c != "`" else 1
            if j >= len(expr):
                raise PromQLError(f"unterminated string at {i}")
            tokens.append(("string", expr[i + 1:j]))
            i = j + 1
        elif match := _IDENTIFIER.match(expr, i):
            tokens.append(("name", match.group()))
            i = match.end()
        elif match := _NUMBER.match(expr, i):
            tokens.append(("number", match.group()))
            i = match.end()
        elif c in _PAIRS:
            stack.append(_PAIRS[c])
            tokens.append(("open", c))
            i += 1
        elif c in _PAIRS.values():
            if not stack or stack.pop() != c:
                raise PromQLError(f"unbalanced {c!r} at {i}")
            tokens.append(("close", c))
            i += 1
        elif c in _OPERATORS:
            tokens.append(("op", c))
            i += 1
        else:
            raise PromQLError(f"unexpected {c!r} at {i}")
    if stack:
        raise PromQLError("unclosed bracket")
    return tokens


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects, read from its tokens: not functions, label names, label
    values, keywords or anything in a comment; `{__name__="x"}` selects x. Text the lexer refuses selects
    nothing, so a rule looking for a metric fails on it rather than trusting a look-alike."""
    try:
        tokens = _tokens(expr)
    except PromQLError:
        return set()
    names: set[str] = set()
    depth = {"{": 0, "[": 0}
    skip_list = False
    for i, (kind, text) in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ("", "")
        if kind in ("open", "close") and text in "{}[]":
            opening = "{" if text in "{}" else "["
            depth[opening] += 1 if kind == "open" else -1
            continue
        if skip_list:  # the label list after by/without/on/ignoring/group_left/group_right
            skip_list = not (kind == "close" and text == ")")
            continue
        if depth["{"]:
            if kind == "name" and text == "__name__" and following == ("op", "=") and i + 2 < len(tokens) \
                    and tokens[i + 2][0] == "string":
                names.add(tokens[i + 2][1])
            continue
        if depth["["] or kind != "name":
            continue
        if text.lower() in _LABEL_LISTS and following == ("open", "("):
            skip_list = True
        elif text.lower() not in _KEYWORDS and following != ("open", "(") and \
                following not in (("name", "by"), ("name", "without")):  # `sum by (pod) (...)`: an aggregation
            names.add(text)
    return names


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
        for name in metric_names(pending.pop()):
            if name not in seen:
                seen.add(name)
                if name in records:
                    pending.append(records[name])
    return seen
