"""Prometheus for the platform: a pinned kube-prometheus-stack release, or an existing Prometheus found by labels."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes.core.v1 as core
import pulumi_kubernetes.helm.v3 as helm
import pulumi_kubernetes.meta.v1 as meta
import pulumi_random as random

from components.config.labels import POOL_LABEL
from components.config.model import PlatformConfig
from components.pins import PINS
from components.tenancy.isolation import privileged_namespace_labels
from components.system_pool import tolerating

CHART = "kube-prometheus-stack"
CHART_VERSION = PINS[CHART].version
CHART_REPO = "https://prometheus-community.github.io/helm-charts"
GRAFANA_DASHBOARD_LABEL = ("grafana_dashboard", "1")
# Grafana's admin login comes from this Secret; without it the chart ships the well-known password "prom-operator".
GRAFANA_ADMIN_SECRET = "grafana-admin"
GRAFANA_ADMIN_KEYS = {"userKey": "admin-user", "passwordKey": "admin-password"}
PROMETHEUS_PORT = 9090
# Node labels kube-state-metrics copies onto kube_node_labels (as label_gpu_platform_io_pool, ...): the pool
# label joins GPU requests and DCGM series to pools.
NODE_LABELS_FOR_METRICS = (POOL_LABEL,)


def selector_labels(config: PlatformConfig) -> dict[str, str]:
    """Labels our ServiceMonitors and PrometheusRules carry so Prometheus selects them."""
    return {"release": config.observability.prometheus.release_label}


def fullname(release_label: str) -> str:
    """The chart's `fullname` (fullnameOverride, truncated to 26 characters as its helpers do)."""
    return release_label[:26].rstrip("-")


def prometheus_url(config: PlatformConfig) -> str | None:
    """The HTTP API the reclaimer queries: the configured one, else the chart's service when we install it."""
    prom = config.observability.prometheus
    if prom.url:
        return prom.url
    if prom.install:
        return f"http://{fullname(prom.release_label)}-prometheus.{prom.namespace}.svc:{PROMETHEUS_PORT}"
    return None


def chart_values(config: PlatformConfig) -> dict[str, Any]:
    """kube-prometheus-stack values: select by our label, keep the GPU metrics kube-state-metrics needs, load dashboards."""
    prom = config.observability.prometheus
    selector = {"matchLabels": selector_labels(config)}
    label, value = GRAFANA_DASHBOARD_LABEL
    return {
        "fullnameOverride": fullname(prom.release_label),
        "prometheus": {"prometheusSpec": {
            # Explicit selectors instead of the chart's "release name" default, so the rule is readable here. The
            # chart reads *SelectorNilUsesHelmValues only when a selector is empty, so those switches are not set.
            "ruleSelector": selector,
            "serviceMonitorSelector": selector,
            "podMonitorSelector": selector,
            # The slowest SLO window is 3 days: keep well over that.
            "retention": "15d",
            "tolerations": tolerating(),
        }},
        "alertmanager": {"alertmanagerSpec": {"tolerations": tolerating()}},
        "prometheusOperator": {"tolerations": tolerating(),
                               "admissionWebhooks": {"patch": {"tolerations": tolerating()}}},
        "kubeStateMetrics": {"enabled": True},
        # Its default collectors (pods, nodes) give kube_pod_container_resource_requests, kube_pod_status_phase and
        # kube_node_status_allocatable; only the node label allowlist is ours.
        "kube-state-metrics": {"metricLabelsAllowlist": [f"nodes=[{','.join(NODE_LABELS_FOR_METRICS)}]"],
                               "tolerations": tolerating()},
        # The dashboard ConfigMap lives in this namespace, the sidecar's default search scope.
        "grafana": {"sidecar": {"dashboards": {"enabled": True, "label": label, "labelValue": value}},
                    "admin": {"existingSecret": GRAFANA_ADMIN_SECRET, **GRAFANA_ADMIN_KEYS},
                    "tolerations": tolerating()},
    }


class Prometheus(pulumi.ComponentResource):
    """kube-prometheus-stack in its own namespace, or nothing but the selector labels of an existing Prometheus."""

    TYPE = "gpu-platform:observability:Prometheus"

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        prom = config.observability.prometheus
        self.namespace = prom.namespace
        self.selector = selector_labels(config)
        self.url = prometheus_url(config)
        super().__init__(self.TYPE, name, {"install": prom.install, "namespace": prom.namespace,
                                           "selector": self.selector, "url": self.url}, opts)
        # What rules, monitors and dashboards must wait for: the CRDs and Grafana exist once the release is up.
        self.ready: pulumi.Resource = self
        if prom.install:
            # node-exporter needs the host's network, PID namespace and paths: a platform namespace, never a team's
            # (config validation keeps teams out of it), so it says privileged explicitly.
            namespace = core.Namespace(f"{name}-namespace", metadata=meta.ObjectMetaArgs(
                name=prom.namespace, labels=privileged_namespace_labels()), opts=pulumi.ResourceOptions(parent=self))
            admin = self._grafana_admin(name, prom.namespace, namespace)
            self.ready = helm.Release(
                f"{name}-release",
                helm.ReleaseArgs(
                    # The release name is the `release` label the chart's own ServiceMonitors carry.
                    name=prom.release_label, chart=CHART, version=CHART_VERSION,
                    repository_opts=helm.RepositoryOptsArgs(repo=CHART_REPO),
                    namespace=prom.namespace, values=chart_values(config),
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace, admin]),
            )
        self.register_outputs({"namespace": self.namespace, "url": self.url})

    def _grafana_admin(self, name: str, namespace: str, after: pulumi.Resource) -> core.Secret:
        """A generated Grafana admin password, kept in the stack's state as a secret and in a Kubernetes Secret."""
        password = random.RandomPassword(f"{name}-grafana-admin", length=32, special=False,
                                         opts=pulumi.ResourceOptions(parent=self))
        return core.Secret(
            f"{name}-grafana-admin",
            metadata=meta.ObjectMetaArgs(name=GRAFANA_ADMIN_SECRET, namespace=namespace),
            string_data={GRAFANA_ADMIN_KEYS["userKey"]: "admin", GRAFANA_ADMIN_KEYS["passwordKey"]: password.result},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[after]))
