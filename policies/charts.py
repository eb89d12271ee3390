"""Helm releases in the graph and their effective values: what the release sets, over the chart's defaults.

Defaults are listed only for the keys rules read, per chart version (tests compare them with the chart's
values.yaml). For a version not listed, a key the release leaves unset is reported as unknown to the pack,
so an upgrade that flips a default cannot pass unnoticed.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyResource

from policies.graph import Graph
from policies.props import get

RELEASE = "kubernetes:helm.sh/v3:Release"
GPU_OPERATOR = "gpu-operator"
KUEUE = "kueue"
KUEUE_MANAGER_CONFIG = "managerConfig.controllerManagerConfigYaml"  # the Configuration, as YAML text
KAI = "kai-scheduler"
KAI_PODGROUPER = "podgrouper.enabled"  # KAI's pod-grouper, which gives every workload its PodGroup (gang)
KUBE_PROMETHEUS_STACK = "kube-prometheus-stack"
_MISSING = object()

_GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# With the *NilUsesHelmValues switches on, empty selectors mean `release: <helm release name>`.
_PROMETHEUS_SELECTORS = {
    "prometheus.prometheusSpec.serviceMonitorSelectorNilUsesHelmValues": True,
    "prometheus.prometheusSpec.serviceMonitorSelector": {},
    "prometheus.prometheusSpec.ruleSelectorNilUsesHelmValues": True,
    "prometheus.prometheusSpec.ruleSelector": {},
}
CHART_DEFAULTS: dict[tuple[str, str], dict[str, Any]] = {
    (KAI, "v0.17.0"): {KAI_PODGROUPER: True},
    (GPU_OPERATOR, "v26.7.0"): {
        "driver.enabled": True,
        "toolkit.enabled": True,
        "devicePlugin.enabled": True,
        "daemonsets.tolerations": [_GPU_TOLERATION],
        "nfd.enabled": True,
        "node-feature-discovery.worker.tolerations": [
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
            _GPU_TOLERATION],
        "dcgmExporter.enabled": True,
        # Flipped from false (<= v26.3) to true in v26.7.
        "dcgmExporter.serviceMonitor.enabled": True,
        "dcgmExporter.serviceMonitor.additionalLabels": {},
    },
    # 88.2.0: the previous pin, which stacks not yet upgraded still run.
    (KUBE_PROMETHEUS_STACK, "88.2.0"): _PROMETHEUS_SELECTORS,
    (KUBE_PROMETHEUS_STACK, "88.5.3"): _PROMETHEUS_SELECTORS,
}


class UnknownDefault(LookupError):
    """A values key the release leaves to a chart default this pack does not know for that version."""


@dataclass
class Release:
    """One Helm release and the values it sets."""

    resource: PolicyResource

    @property
    def chart(self) -> str:
        # "gpu-operator", "nvidia/gpu-operator" and "oci://.../gpu-operator" are the same chart.
        return str(get(self.resource.props, "chart", "")).rstrip("/").rsplit("/", 1)[-1]

    @property
    def release_name(self) -> str:
        return str(get(self.resource.props, "name", self.resource.name))

    @property
    def version(self) -> str:
        return str(get(self.resource.props, "version", ""))

    @property
    def values(self) -> Mapping:
        values = get(self.resource.props, "values", {})
        return values if isinstance(values, Mapping) else {}

    def value(self, key: str) -> Any:
        """The effective value at dotted `key`: set by the release, else the chart default for its version."""
        node: Any = self.values
        for step in key.split("."):
            if not isinstance(node, Mapping) or step not in node:
                node = _MISSING
                break
            node = node[step]
        if node is not _MISSING and node is not None:
            return node
        defaults = CHART_DEFAULTS.get((self.chart, self.version))
        if defaults is None or key not in defaults:
            raise UnknownDefault(f"{self.resource.name}: values.{key} is not set and the pack does not know "
                                 f"its default in {self.chart} chart {self.version or '(unpinned)'}; set it explicitly")
        return defaults[key]


def releases(graph: Graph, chart: str) -> list[Release]:
    found = (Release(r) for r in graph.of_type(RELEASE))
    return [r for r in found if r.chart == chart]
