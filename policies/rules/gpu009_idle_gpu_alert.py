"""GPU009: an alert fires on GPUs that are allocated but idle (hoarding)."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies.graph import Graph
from policies.prometheus import prometheuses, recording_rules, series
from policies.props import get
from policies.rule import Report, stack_rule

ACTIVITY = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            "DCGM_FI_DEV_GPU_UTIL")
ALLOCATION = ("kube_pod_container_resource_requests", "kube_pod_resource_request")


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    if not graph.pools():
        args.not_applicable("no GPU pools")
    found = prometheuses(graph)
    if not found:
        report("no Prometheus in the stack, so no alert can catch allocated but idle GPUs")
        return
    for prometheus in found:
        records, alerts = recording_rules(graph, prometheus)
        hoarding = [a for a in alerts if get(a, "for")
                    and set(ACTIVITY) & (deps := series(str(get(a, "expr", "")), records)) and set(ALLOCATION) & deps]
        if not hoarding:
            report(f"Prometheus {prometheus.name!r} loads no alert on allocated-but-idle GPUs: an alert with a "
                   f"`for:` duration whose expression (through recording rules) reads both GPU requests "
                   f"({' or '.join(ALLOCATION)}) and engine activity ({', '.join(ACTIVITY[:2])}, ...)")


RULE = stack_rule(
    id="GPU009", slug="idle-gpu-alert",
    title="Idle-allocated GPU (hoarding) alerting is configured",
    rationale=("The most expensive GPU is one a pod holds and does not use: a finished notebook, a job stuck "
               "on input, a crashed worker still allocated. Some alert the stack's Prometheus loads must combine "
               "allocation (kube-state-metrics GPU requests) with activity (DCGM engine/SM activity) and hold "
               "for a duration. Recording rules are followed back to their expressions. Advisory."),
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
