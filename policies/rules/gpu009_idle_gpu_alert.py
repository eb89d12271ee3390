"""GPU009: an alert fires on GPUs that are allocated but idle (hoarding)."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

import re
from collections.abc import Mapping

from policies.graph import Graph
from policies.prometheus import prometheuses, recording_rules, series
from policies.props import get
from policies.rule import Report, stack_rule

ACTIVITY = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            "DCGM_FI_DEV_GPU_UTIL")
ALLOCATION = ("kube_pod_container_resource_requests", "kube_pod_resource_request")
_BELOW = re.compile(r"<(?!=\s*bool)|<=")
_PER_POD = re.compile(r"\bby\s*\([^)]*\bpod\b|\bpod:[A-Za-z_]")


def chain(expr: str, records: Mapping[str, str]) -> list[str]:
    """`expr` and every recorded expression it reads, transitively."""
    return [expr, *(records[name] for name in series(expr, records) if name in records)]


def idle_pods(alert: Mapping, records: Mapping[str, str]) -> bool:
    """An alert held for a while on pods whose GPUs are requested while their activity sits below a threshold."""
    expr = str(get(alert, "expr", ""))
    if not get(alert, "for") or not set(ALLOCATION) & series(expr, records):
        return False
    return any(_BELOW.search(e) and _PER_POD.search(e) and set(ACTIVITY) & series(e, records)
               for e in chain(expr, records))


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    if not graph.pools():
        graph.outside_plan(args, "no GPU pools", "GPU pools")
    found = prometheuses(graph)
    if not found:
        report("no Prometheus in the stack, so no alert can catch allocated but idle GPUs")
        return
    for prometheus in found:
        records, alerts = recording_rules(graph, prometheus)
        hoarding = [a for a in alerts if idle_pods(a, records)]
        if not hoarding:
            report(f"Prometheus {prometheus.name!r} loads no alert on allocated-but-idle GPUs: an alert held "
                   f"`for:` a while, reading GPU requests ({' or '.join(ALLOCATION)}) and comparing per-pod "
                   f"engine activity ({', '.join(ACTIVITY[:2])}, ...) below a threshold",
                   prometheus.urn)


RULE = stack_rule(
    id="GPU009", slug="idle-gpu-alert",
    title="Idle-allocated GPU (hoarding) alerting is configured",
    rationale=("The most expensive GPU is one a pod holds and does not use: a finished notebook, a job stuck "
               "on input, a crashed worker still allocated. Some alert the stack's Prometheus loads must read "
               "allocation (kube-state-metrics GPU requests), compare per-pod activity (DCGM engine/SM activity, "
               "`by (pod)` or `pod:` series) below a threshold, and hold for a duration. Recording rules are "
               "followed back to their expressions; team-level utilization SLOs do not count. Advisory."),
    severity=Severity.MEDIUM, enforcement=EnforcementLevel.ADVISORY,
    remediation=(
        "Keep the observability layer's `GPUIdleAllocated` alert (threshold and window from "
        "`observability.slo.idleMinutes`).",
        "With your own rules, alert on pods whose requested GPUs show engine activity below a few percent for "
        "N minutes.",
    ),
    config_key="observability",
    check=check,
)
