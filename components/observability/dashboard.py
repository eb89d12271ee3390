"""The Grafana dashboard: allocated vs busy GPUs per team and pool, idle GPUs, queues and GPU health.

Panels query only the recording rules in rules.py and DCGM fields the GPU layer enables, so the dashboard and the
alerts always agree on what "busy" means.
"""
from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_kubernetes.core.v1 as core
import pulumi_kubernetes.meta.v1 as meta

from components.config.model import PlatformConfig
from components.scheduling.kinds import scheduler_kind
from components.observability.prometheus import GRAFANA_DASHBOARD_LABEL
from components.observability.rules import DCGM_JOB, HOT_GPU_CELSIUS

UID = "gpu-platform-overview"
FILE = "gpu-platform.json"
_DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
_WIDTH = 24


def query(expr: str, legend: str = "", instant: bool = False) -> dict[str, Any]:
    target: dict[str, Any] = {"datasource": _DATASOURCE, "expr": expr, "legendFormat": legend}
    if instant:
        target.update(instant=True, range=False, format="table")
    return target


def panel(title: str, kind: str, targets: list[dict[str, Any]], unit: str = "short",
           description: str = "") -> dict[str, Any]:
    return {"type": kind, "title": title, "description": description, "datasource": _DATASOURCE,
            "targets": targets, "fieldConfig": {"defaults": {"unit": unit}, "overrides": []}, "options": {}}


def _row(title: str) -> dict[str, Any]:
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def _allocation_panels(config: PlatformConfig) -> list[dict[str, Any]]:
    dcgm = config.observability.dcgm
    team = [query("namespace:gpu_platform_allocated_gpus:sum", "{{team}} allocated")]
    pool = [query("pool:gpu_platform_capacity_gpus:sum", "{{pool}} capacity"),
            query("pool:gpu_platform_allocated_gpus:sum", "{{pool}} allocated")]
    if dcgm:
        team.append(query("namespace:gpu_platform_busy_gpus:sum", "{{team}} busy"))
        pool.append(query("pool:gpu_platform_busy_gpus:sum", "{{pool}} busy"))
    panels = [
        _row("Allocated vs busy"),
        panel("GPUs per team: allocated vs busy", "timeseries", team, description=(
            "Allocated: devices requested by running pods. Busy: DCGM graphics-engine activity summed over them.")),
        panel("GPUs per pool: capacity, allocated, busy", "timeseries", pool),
    ]
    if dcgm:
        slo = config.observability.slo.min_utilization
        panels += [
            panel("Effective utilization per team", "timeseries", [
                query("namespace:gpu_platform_effective_utilization:ratio", "{{team}}"),
                query(f"vector({slo:g})", "objective")], unit="percentunit"),
            panel("Effective utilization per pool", "timeseries", [
                query("pool:gpu_platform_effective_utilization:ratio", "{{pool}}")], unit="percentunit"),
            panel("Idle allocated GPUs", "table", [
                query("pod:gpu_platform_idle_gpus:sum", instant=True)], description=(
                f"Pods whose every GPU has had engine activity below 5%; they alert after "
                f"{config.observability.slo.idle_minutes} minutes.")),
            panel("SLO error budget burn (fraction of the last 6h below objective)", "timeseries", [
                query("namespace:gpu_platform_utilization_slo_errors:ratio6h", "{{team}}")], unit="percentunit"),
        ]
    return panels


def _queue_panels(config: PlatformConfig) -> list[dict[str, Any]]:
    panels = [
        _row(f"Queues ({config.scheduler.kind})"),
        panel("Pending GPUs per team (pods)", "timeseries", [
            query("namespace:gpu_platform_pending_gpus:sum", "{{team}}")]),
    ]
    return panels + scheduler_kind(config.scheduler.kind).monitoring().dashboard_panels()


def _health_panels() -> list[dict[str, Any]]:
    return [
        _row("GPU health"),
        panel("GPUs with XID errors", "table", [
            query("DCGM_FI_DEV_XID_ERRORS > 0", instant=True)]),
        panel("Uncorrectable memory errors (last hour)", "table", [
            query("increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[1h]) > 0", instant=True),
            query("DCGM_FI_DEV_ROW_REMAP_FAILURE > 0", instant=True)]),
        panel("Hottest GPU per node", "timeseries", [
            query("max by (Hostname) (DCGM_FI_DEV_GPU_TEMP)", "{{Hostname}}"),
            query(f"vector({HOT_GPU_CELSIUS})", "alert threshold")], unit="celsius"),
        panel("Power and thermal throttling", "timeseries", [
            query("max by (Hostname) (rate(DCGM_FI_DEV_POWER_VIOLATION[10m]) / 1e9)", "{{Hostname}} power"),
            query("max by (Hostname) (rate(DCGM_FI_DEV_THERMAL_VIOLATION[10m]) / 1e9)", "{{Hostname}} thermal")],
            unit="percentunit"),
        panel("DCGM exporters down", "table", [query(f'up{{job=~"{DCGM_JOB}"}} == 0', instant=True)]),
    ]


def _layout(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows span the width; other panels go two per line."""
    y, x, laid = 0, 0, []
    for i, item in enumerate(panels, start=1):
        if item["type"] == "row":
            y, x = y + (8 if x else 0), 0
            item = {**item, "gridPos": {"h": 1, "w": _WIDTH, "x": 0, "y": y}}
            y += 1
        else:
            item = {**item, "gridPos": {"h": 8, "w": _WIDTH // 2, "x": x, "y": y}}
            x = (x + _WIDTH // 2) % _WIDTH
            y += 8 if x == 0 else 0
        laid.append({"id": i, **item})
    return laid


def dashboard(config: PlatformConfig) -> dict[str, Any]:
    """The dashboard model Grafana imports (schema of Grafana 10+)."""
    panels = _allocation_panels(config) + _queue_panels(config)
    if config.observability.dcgm:
        panels += _health_panels()
    return {
        "uid": UID, "title": "GPU platform: allocation, utilization, queues, health", "tags": ["gpu-platform"],
        "schemaVersion": 39, "version": 1, "editable": False, "refresh": "1m", "timezone": "utc",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [{"name": "datasource", "label": "Prometheus", "type": "datasource",
                                 "query": "prometheus", "current": {}, "hide": 0}]},
        "annotations": {"list": []},
        "panels": _layout(panels),
    }


def expressions(model: dict[str, Any]) -> list[str]:
    """Every PromQL expression in a dashboard model."""
    return [t["expr"] for p in model["panels"] for t in p.get("targets", [])]


def dashboard_json(config: PlatformConfig) -> str:
    """The dashboard model as the file Grafana loads."""
    return json.dumps(dashboard(config), indent=1, sort_keys=True)


def dashboard_config_map(name: str, dashboard_file: str, namespace: pulumi.Input[str],
                         opts: pulumi.ResourceOptions) -> core.ConfigMap:
    """The ConfigMap Grafana's dashboard sidecar loads (it watches for the grafana_dashboard label)."""
    label, value = GRAFANA_DASHBOARD_LABEL
    return core.ConfigMap(
        name,
        metadata=meta.ObjectMetaArgs(name="gpu-platform-dashboard", namespace=namespace, labels={label: value}),
        data={FILE: dashboard_file},
        opts=opts,
    )
