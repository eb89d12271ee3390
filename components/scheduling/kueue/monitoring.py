"""Kueue's metrics as the observability layer uses them: per-ClusterQueue workload and quota series.

Kueue's ClusterQueues are named after teams and its ResourceFlavors after pools.
"""
from __future__ import annotations

from typing import Any

from components.observability.dashboard import panel, query
from components.observability.rules import GPU_RESOURCES, by_team, record

# The metrics service shares the controller's labels with the webhook and visibility services. Kueue serves metrics
# over HTTPS behind authn/authz with a self-signed certificate (its chart's own ServiceMonitor does the same):
# Prometheus authenticates with its ServiceAccount token.
SCRAPE: dict[str, Any] = {
    "selector": {"matchLabels": {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"},
                 "matchExpressions": [{"key": "app.kubernetes.io/component", "operator": "NotIn",
                                       "values": ["webhook-service", "visibility-service"]}]},
    "endpoints": [{"port": "https", "scheme": "https", "path": "/metrics", "interval": "30s",
                   "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                   "tlsConfig": {"insecureSkipVerify": True}}],
}


def recording_rules() -> list[dict[str, Any]]:
    def by_queue(expr: str) -> str:
        return by_team(expr, "cluster_queue")

    def quota(metric: str) -> str:
        return by_queue(f'label_replace(sum by (cluster_queue, flavor) ({metric}{{resource=~"{GPU_RESOURCES}"}}), '
                        '"pool", "$1", "flavor", "(.+)")')

    def wait(q: float) -> str:
        return by_queue(f"histogram_quantile({q:g}, sum by (cluster_queue, le) "
                        "(rate(kueue_admission_wait_time_seconds_bucket[15m])))")

    return [
        record("cluster_queue:gpu_platform_pending_workloads:sum",
               by_queue("sum by (cluster_queue) (kueue_pending_workloads)")),
        record("cluster_queue:gpu_platform_admission_wait_seconds:p50", wait(0.5)),
        record("cluster_queue:gpu_platform_admission_wait_seconds:p90", wait(0.9)),
        record("cluster_queue_pool:gpu_platform_quota_used_gpus:sum", quota("kueue_cluster_queue_resource_usage")),
        record("cluster_queue_pool:gpu_platform_nominal_quota_gpus:sum", quota("kueue_cluster_queue_nominal_quota")),
    ]


def pending_alert(minutes: int) -> tuple[str, str, str]:
    """GPUWorkloadsPendingTooLong: a ClusterQueue with pending workloads that admitted none."""
    expr = ("cluster_queue:gpu_platform_pending_workloads:sum > 0\n"
            "unless on (cluster_queue) (sum by (cluster_queue) (increase(kueue_admitted_workloads_total[5m])) > 0)")
    description = ("ClusterQueue {{ $labels.cluster_queue }} of team {{ $labels.team }} has had pending "
                   f"workloads for {minutes} minutes and admitted none of them.")
    runbook = ("kubectl get workloads -n <team> and describe the pending ones: an Inadmissible condition names "
               "the missing quota or flavor. Check the ClusterQueue's usage against its nominal quota and "
               "borrowing limit, and whether the GPU pool can scale up.")
    return expr, description, runbook


def dashboard_panels() -> list[dict[str, Any]]:
    """The workload and quota series the recording rules keep."""
    return [
        panel("Admission wait (p50 / p90)", "timeseries", [
            query("cluster_queue:gpu_platform_admission_wait_seconds:p50", "{{team}} p50"),
            query("cluster_queue:gpu_platform_admission_wait_seconds:p90", "{{team}} p90")], unit="s"),
        panel("Pending workloads per team", "timeseries", [
            query("cluster_queue:gpu_platform_pending_workloads:sum", "{{team}}")]),
        panel("Quota used vs nominal per team and pool", "timeseries", [
            query("cluster_queue_pool:gpu_platform_quota_used_gpus:sum", "{{team}}/{{pool}} used"),
            query("cluster_queue_pool:gpu_platform_nominal_quota_gpus:sum", "{{team}}/{{pool}} nominal")]),
    ]
