"""KAI's metrics as the observability layer uses them: none yet.

The pinned chart renders only KAI's operator (its Deployment's `metrics` port, no Service) and no monitor; the
operator creates the scheduler, its Services and, when KAI's own Prometheus is on (`prometheus.enabled`, which
deploys a second Prometheus for time-based fairshare), their ServiceMonitors at run time, from Go code the release's
chart does not show (tests/engine/test_helm_render.py pins this). So there is no chart-rendered Service to select and
no metric name checked against the release. The scheduler-independent rules (pending GPU pods per team,
GPUPodPendingTooLong) cover KAI stacks.
"""
from __future__ import annotations

from typing import Any

SCRAPE: dict[str, Any] | None = None


def recording_rules() -> list[dict[str, Any]]:
    return []


def pending_alert(minutes: int) -> tuple[str, str, str] | None:
    return None


def dashboard_panels() -> list[dict[str, Any]]:
    return []
