"""KAI's metrics as the observability layer uses them: none yet.

The chart deploys only KAI's operator, which creates the scheduler and its services at run time, so there is no
chart-rendered service to point a ServiceMonitor at and no metric names checked against the release. The
scheduler-independent rules (pending GPU pods per team, GPUPodPendingTooLong) cover KAI stacks.
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
