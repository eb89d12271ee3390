"""What the platform asks of Prometheus and Grafana: rule objects, the scheduler's scrape target, the dashboard."""
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
from pulumi_kubernetes.apiextensions import CustomResource

from components.args import fill_defaults
from components.args_checks import check_args
from components.config.model import PlatformConfig
from components.observability.dashboard import dashboard_config_map, dashboard_json
from components.observability.prometheus import selector_labels
from components.observability.rules import alert_groups, recording_groups
from components.scheduling.kinds import SCHEDULERS, scheduler_kind

API = "monitoring.coreos.com/v1"
PART_OF = {"app.kubernetes.io/part-of": "gpu-platform"}


def scheduler_monitor_spec(kind: str) -> dict[str, Any] | None:
    """Scrape the scheduler's metrics service (its package's monitoring.SCRAPE): no chart's own monitor carries our
    selector label. None: the platform does not scrape this scheduler."""
    row = scheduler_kind(kind)
    scrape = row.monitoring().SCRAPE
    return {"namespaceSelector": {"matchNames": [row.namespace]}, **scrape} if scrape is not None else None


def scraped_schedulers() -> tuple[str, ...]:
    """The scheduler kinds GpuMonitoring can watch: every registered one (one without a scrape target gets no
    ServiceMonitor)."""
    return SCHEDULERS


@dataclass
class GpuMonitoringArgs:
    """The GPU rules, scheduler scrape target and dashboard, for a Prometheus Operator install."""

    namespace: pulumi.Input[str]
    """Namespace of the Prometheus the objects are for (they are created there)."""
    recording_groups: list[Any]
    """PrometheusRule groups of recording rules (name, interval, rules)."""
    alert_groups: list[Any]
    """PrometheusRule groups of alerting rules (name, rules)."""
    labels: dict[str, str]
    """Labels Prometheus selects rules and monitors by, e.g. {"release": "kube-prometheus-stack"}."""
    dashboard: str
    """The Grafana dashboard JSON file, loaded by Grafana's dashboard sidecar."""
    scheduler: Optional[str] = "kueue"
    """Whose metrics to scrape: a `scheduler.kind` (components/scheduling/kinds.py)."""

    def __post_init__(self) -> None:
        fill_defaults(self)

    @classmethod
    def from_config(cls, config: PlatformConfig, namespace: pulumi.Input[str]) -> "GpuMonitoringArgs":
        """The args the stack program passes: rules and dashboard for the config's pools, teams and scheduler."""
        return cls(namespace=namespace, recording_groups=recording_groups(config), alert_groups=alert_groups(config),
                   labels={**selector_labels(config), **PART_OF}, dashboard=dashboard_json(config),
                   scheduler=config.scheduler.kind)


class GpuMonitoring(pulumi.ComponentResource):
    """PrometheusRules (recording, alerting), a ServiceMonitor for the scheduler, and the Grafana dashboard."""

    TYPE = "gpu-platform:observability:GpuMonitoring"

    namespace_name: pulumi.Output[str]
    """The namespace the rules, monitor and dashboard were created in."""

    def __init__(self, name: str, args: GpuMonitoringArgs, opts: Optional[pulumi.ResourceOptions] = None):
        check_args(args)  # every problem at once, before any child exists
        recording, alerts, namespace = args.recording_groups, args.alert_groups, args.namespace
        super().__init__(self.TYPE, name, {
            "namespace": namespace, "recordingGroups": [g["name"] for g in recording],
            "alertGroups": [g["name"] for g in alerts], "scheduler": args.scheduler}, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = dict(args.labels)

        def custom(suffix: str, kind: str, object_name: str, spec: dict[str, Any]) -> CustomResource:
            return CustomResource(f"{name}-{suffix}", api_version=API, kind=kind, spec=spec, opts=child,
                                  metadata={"name": object_name, "namespace": namespace, "labels": labels})

        custom("recording-rules", "PrometheusRule", "gpu-platform-recording", {"groups": recording})
        custom("alerts", "PrometheusRule", "gpu-platform-alerts", {"groups": alerts})
        kind = args.scheduler
        monitor = scheduler_monitor_spec(kind)
        if monitor is not None:
            custom(f"{kind}-monitor", "ServiceMonitor", f"gpu-platform-{kind}", monitor)
        dashboard_config_map(f"{name}-dashboard", args.dashboard, namespace, child)
        self.namespace_name = pulumi.Output.from_input(namespace)
        self.register_outputs({"namespace": namespace})
