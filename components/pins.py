"""Every Helm chart the platform installs, pinned in one table with the rule that chose its version.

Facts only, importing nothing: the cloud and scheduler tables, the config and the components all read their chart
versions here, so moving a pin is one row, and tests/project/test_pins.py checks each row against its rule and the chart
package it names (../shared/upstream/charts).

A version is the chart's own Chart.yaml `version`, spelled as the chart spells it (`v26.7.0` for the GPU Operator,
`26.4.1` for the Network Operator): an OCI registry and a `<chart>-<version>.tgz` lookup match it literally.
"""
from __future__ import annotations

from dataclasses import dataclass

# The rules a pin obeys.
NEWEST_STABLE = "newest stable release"
# Kueue's integration code is built and tested against these framework APIs; an older operator may lack a field
# Kueue sets, a newer one may have moved it (Trainer's runtimePatches did between 2.2 and 2.3).
KUEUE_GO_MOD = "the release Kueue's go.mod requires"
# The CRD chart must serve exactly the API its controller reconciles.
SAME_AS_CONTROLLER = "same release as its controller chart"


@dataclass(frozen=True)
class ChartPin:
    """One chart at one version, and why that version."""

    chart: str  # the chart's name (its package is <chart>-<version>.tgz)
    version: str
    rule: str
    note: str = ""  # what else the version must agree with
    go_module: str = ""  # KUEUE_GO_MOD: the Go module whose required version this pin equals
    controller: str = ""  # SAME_AS_CONTROLLER: the controller chart


PINS: dict[str, ChartPin] = {p.chart: p for p in (
    ChartPin("gpu-operator", "v26.7.0", NEWEST_STABLE),
    ChartPin("kueue", "0.19.2", NEWEST_STABLE, note="the job framework pins follow its go.mod"),
    ChartPin("volcano", "1.15.1", NEWEST_STABLE),
    ChartPin("kai-scheduler", "v0.17.0", NEWEST_STABLE,
             note="v0.17 is a standard release; the queue, PodGroup and Topology APIs are read from its CRDs"),
    ChartPin("kube-prometheus-stack", "88.5.3", NEWEST_STABLE,
             note="prometheus-operator v0.93.1 serves the monitoring.coreos.com/v1 kinds we create"),
    ChartPin("cluster-autoscaler", "9.59.0", NEWEST_STABLE,
             note="renders image.repository:image.tag as given, so the image follows the cluster's minor"),
    ChartPin("karpenter", "1.14.1", NEWEST_STABLE,
             note="its compatibility matrix: Kubernetes 1.35 needs >= 1.9, 1.36 >= 1.13"),
    ChartPin("karpenter-crd", "1.14.1", SAME_AS_CONTROLLER, controller="karpenter"),
    ChartPin("aws-efa-k8s-device-plugin", "v0.5.30", NEWEST_STABLE,
             note="its node affinity lists every EFA instance type the catalog has"),
    ChartPin("network-operator", "26.4.1", NEWEST_STABLE,
             note="the NicClusterPolicy runs its network-operator-v<version> component images"),
    ChartPin("tigera-operator", "v3.32.1", NEWEST_STABLE,
             note="from v3.32 its CRDs are a chart of their own; policy-only mode (OKE) needs no CNI from it"),
    ChartPin("crd.projectcalico.org.v1", "v3.32.1", SAME_AS_CONTROLLER, controller="tigera-operator"),
    ChartPin("jobset", "0.12.0", KUEUE_GO_MOD, go_module="sigs.k8s.io/jobset"),
    ChartPin("lws", "0.9.0", KUEUE_GO_MOD, go_module="sigs.k8s.io/lws"),
    ChartPin("kuberay-operator", "1.6.2", KUEUE_GO_MOD, go_module="github.com/ray-project/kuberay/ray-operator"),
    ChartPin("kubeflow-trainer", "2.2.1", KUEUE_GO_MOD, go_module="github.com/kubeflow/trainer/v2"),
)}
