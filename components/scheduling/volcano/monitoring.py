"""Volcano's metrics as the observability layer uses them: per-queue pod and scheduling-latency series.

Volcano Queues are named after teams; it reports scalar resources such as GPUs in thousandths.
"""
from __future__ import annotations

from typing import Any

from components.observability.dashboard import panel, query
from components.observability.rules import GPU_RESOURCES, by_team, record

SCRAPE: dict[str, Any] = {
    "selector": {"matchLabels": {"app": "volcano-scheduler"}},
    "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}],
}


def recording_rules() -> list[dict[str, Any]]:
    def gpus(metric: str) -> str:
        return f'sum by (queue_name) ({metric}{{resource=~"{GPU_RESOURCES}"}}) / 1000'

    return [
        record("queue:gpu_platform_allocated_gpus:sum",
               by_team(gpus("volcano_queue_allocated_scalar_resources"), "queue_name")),
        record("queue:gpu_platform_pending_gpus:sum", by_team(
            f'clamp_min({gpus("volcano_queue_request_scalar_resources")} - '
            f'{gpus("volcano_queue_allocated_scalar_resources")}, 0)', "queue_name")),
        record("gpu_platform:volcano_job_scheduling_seconds:p90",
               "histogram_quantile(0.9, sum by (le) "
               "(rate(volcano_e2e_job_scheduling_latency_milliseconds_bucket[15m]))) / 1000"),
        record("queue:gpu_platform_job_scheduling_seconds:max",
               by_team("max by (queue) (volcano_e2e_job_scheduling_duration) / 1000", "queue")),
    ]


def pending_alert(minutes: int) -> tuple[str, str, str]:
    """GPUWorkloadsPendingTooLong: a queue with GPU requests waiting while its GPU allocation stands still."""
    expr = ("queue:gpu_platform_pending_gpus:sum > 0\n"
            f'unless on (queue_name) (sum by (queue_name) (changes(volcano_queue_allocated_scalar_resources'
            f'{{resource=~"{GPU_RESOURCES}"}}[5m])) > 0)')
    description = ("Volcano queue {{ $labels.queue_name }} of team {{ $labels.team }} has had GPU requests "
                   f"waiting for {minutes} minutes while its GPU allocation did not change.")
    runbook = ("kubectl get podgroups -n <team> and describe the pending ones for the unschedulable reason; "
               "check the queue's capability and whether the GPU pool can scale up.")
    return expr, description, runbook


def dashboard_panels() -> list[dict[str, Any]]:
    return [
        panel("Job scheduling latency (p90)", "timeseries", [
            query("gpu_platform:volcano_job_scheduling_seconds:p90", "p90"),
            query("queue:gpu_platform_job_scheduling_seconds:max", "{{team}} slowest job")], unit="s"),
        panel("Pending vs allocated GPUs per queue", "timeseries", [
            query("queue:gpu_platform_pending_gpus:sum", "{{team}} pending"),
            query("queue:gpu_platform_allocated_gpus:sum", "{{team}} allocated")]),
    ]
