"""GPU006: DCGM exporter enabled and scraped, and effective-utilization recording rules exist."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import charts, k8s
from policies.charts import UnknownDefault
from policies.graph import Graph
from policies.prometheus import Prometheus, prometheuses, recording_rules, selects, series
from policies.props import get, mapping
from policies.rule import Report, stack_rule

DCGM_EXPORTER = "dcgm-exporter"
EXPORTER_LABELS = {"app": "nvidia-dcgm-exporter"}  # the operator's dcgm-exporter Service and ServiceMonitor
EFFECTIVE = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")


def _chart_monitors(graph: Graph, report: Report) -> list[dict] | None:
    """Labels of the ServiceMonitor each enabled exporter's chart creates; None when no exporter is enabled
    (a disabled one is reported here)."""
    monitors, enabled = [], False
    for release in charts.releases(graph, charts.GPU_OPERATOR):
        try:
            if release.value("dcgmExporter.enabled") is not True:
                report(f"GPU Operator release {release.resource.name!r} disables dcgmExporter: no per-GPU metrics",
                       release.resource.urn)
                continue
            enabled = True
            if release.value("dcgmExporter.serviceMonitor.enabled") is True:
                extra = mapping(release.value("dcgmExporter.serviceMonitor.additionalLabels"))
                monitors.append({**EXPORTER_LABELS, **{str(k): str(v) for k, v in extra.items()}})
        except UnknownDefault as exc:
            report(str(exc), release.resource.urn)
    for release in charts.releases(graph, DCGM_EXPORTER):
        enabled = True
        if get(release.values, "serviceMonitor.enabled") is True:
            extra = mapping(get(release.values, "serviceMonitor.additionalLabels"))
            monitors.append({**EXPORTER_LABELS, **{str(k): str(v) for k, v in extra.items()}})
    return monitors if enabled else None


def _scraped(graph: Graph, prometheus: Prometheus, monitors: list[dict]) -> bool:
    if any(selects(prometheus.service_monitors, labels) for labels in monitors):
        return True
    # Or a ServiceMonitor of the stack's own that selects the exporter's Service.
    return any(selects(k8s.spec(sm).get("selector", {}), EXPORTER_LABELS)
               and selects(prometheus.service_monitors, k8s.labels(sm))
               for sm in graph.of_type(k8s.SERVICE_MONITOR))


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    if not graph.pools():
        graph.outside_plan(args, "no GPU pools", "GPU pools")
    if not charts.releases(graph, charts.GPU_OPERATOR) and not charts.releases(graph, DCGM_EXPORTER):
        report("no DCGM exporter is installed (GPU Operator dcgmExporter or a dcgm-exporter release): GPU "
               "utilization, health and idle GPUs are invisible")
        return
    monitors = _chart_monitors(graph, report)
    if monitors is None:
        return
    found = prometheuses(graph)
    if not found:
        report("no Prometheus in the stack (kube-prometheus-stack release or an adopted Prometheus): DCGM "
               "metrics are exported but never scraped")
        return
    for prometheus in found:
        if not _scraped(graph, prometheus, monitors):
            report(f"Prometheus {prometheus.name!r} does not scrape the DCGM exporter: no ServiceMonitor for it "
                   "carries the labels its serviceMonitorSelector wants", prometheus.urn)
        records, _ = recording_rules(graph, prometheus)
        if not any(set(EFFECTIVE) & series(expr, records) for expr in records.values()):
            report(f"Prometheus {prometheus.name!r} loads no recording rule over "
                   f"{' / '.join(EFFECTIVE)}: utilization is judged from DCGM_FI_DEV_GPU_UTIL, which reads "
                   "~99% while SMs sit half idle", prometheus.urn)


RULE = stack_rule(
    id="GPU006", slug="dcgm-scraped-and-utilization-rules",
    title="DCGM exporter is enabled and scraped, and effective-utilization recording rules exist",
    rationale=("Capacity decisions, chargeback and idle-GPU alerts all need per-GPU metrics. The GPU "
               "Operator's dcgm-exporter must be enabled, its ServiceMonitor must carry the labels the "
               "Prometheus `serviceMonitorSelector` selects (kube-prometheus-stack selects "
               "`release: <release name>` unless told otherwise; the exporter's serviceMonitor default flipped "
               "to on in gpu-operator v26.7), and some recording rule the Prometheus loads must build on "
               "engine/SM/tensor activity (DCGM_FI_PROF_*), since DCGM_FI_DEV_GPU_UTIL counts allocated time, "
               "not work."),
    severity=Severity.MEDIUM, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Keep `observability.dcgm: true`: the GPU layer enables dcgmExporter with a ServiceMonitor labelled "
        "`release: <observability.prometheus.releaseLabel>`.",
        "With an existing Prometheus, set `observability.prometheus.releaseLabel` to the label its "
        "serviceMonitorSelector and ruleSelector match.",
        "Keep the observability layer's recording rules (pod:gpu_platform_gr_engine_active:max and friends).",
    ),
    config_key="observability",
    check=check,
)
