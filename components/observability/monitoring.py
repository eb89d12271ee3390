"""What the platform asks of Prometheus and Grafana: rule objects, the scheduler's scrape target, the dashboard."""
from __future__ import annotations

from typing import Any

import pulumi
from pulumi_kubernetes.apiextensions import CustomResource

from components.config.model import PlatformConfig
from components.observability.dashboard import dashboard_config_map
from components.observability.prometheus import selector_labels
from components.observability.rules import alert_groups, recording_groups
from components.scheduling.kinds import scheduler_kind

API = "monitoring.coreos.com/v1"
PART_OF = {"app.kubernetes.io/part-of": "gpu-platform"}


def scheduler_monitor_spec(kind: str) -> dict[str, Any]:
    """Scrape Kueue's controller or Volcano's scheduler: neither chart's own monitor carries our selector label."""
    return {"namespaceSelector": {"matchNames": [scheduler_kind(kind).namespace]}, **_SCRAPE[kind]}


# Per scheduler kind (components/scheduling/kinds.py): which service of its release serves metrics, and how.
_SCRAPE: dict[str, dict[str, Any]] = {
    "kueue": {
        # The metrics service shares the controller's labels with the webhook and visibility services.
        "selector": {"matchLabels": {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"},
                     "matchExpressions": [{"key": "app.kubernetes.io/component", "operator": "NotIn",
                                           "values": ["webhook-service", "visibility-service"]}]},
        # Kueue serves metrics over HTTPS behind authn/authz with a self-signed certificate (its chart's own
        # ServiceMonitor does the same): Prometheus authenticates with its ServiceAccount token.
        "endpoints": [{"port": "https", "scheme": "https", "path": "/metrics", "interval": "30s",
                       "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                       "tlsConfig": {"insecureSkipVerify": True}}],
    },
    "volcano": {
        "selector": {"matchLabels": {"app": "volcano-scheduler"}},
        "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}],
    },
}


class GpuMonitoring(pulumi.ComponentResource):
    """PrometheusRules (recording, alerting), a ServiceMonitor for the scheduler, and the Grafana dashboard."""

    TYPE = "gpu-platform:observability:GpuMonitoring"

    def __init__(self, name: str, config: PlatformConfig, namespace: str, opts: pulumi.ResourceOptions | None = None):
        recording, alerts = recording_groups(config), alert_groups(config)
        super().__init__(self.TYPE, name, {
            "namespace": namespace, "recordingGroups": [g["name"] for g in recording],
            "alertGroups": [g["name"] for g in alerts], "scheduler": config.scheduler.kind}, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = {**selector_labels(config), **PART_OF}

        def custom(suffix: str, kind: str, object_name: str, spec: dict[str, Any]) -> CustomResource:
            return CustomResource(f"{name}-{suffix}", api_version=API, kind=kind, spec=spec, opts=child,
                                  metadata={"name": object_name, "namespace": namespace, "labels": labels})

        custom("recording-rules", "PrometheusRule", "gpu-platform-recording", {"groups": recording})
        custom("alerts", "PrometheusRule", "gpu-platform-alerts", {"groups": alerts})
        kind = config.scheduler.kind
        custom(f"{kind}-monitor", "ServiceMonitor", f"gpu-platform-{kind}", scheduler_monitor_spec(kind))
        dashboard_config_map(f"{name}-dashboard", config, namespace, child)
        self.register_outputs({"namespace": namespace})
