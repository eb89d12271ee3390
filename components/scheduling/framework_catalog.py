"""The job framework catalog: each framework's pinned Helm chart and the Kueue integrations it makes real. Facts only
(no SDK), so validating `scheduler.frameworks` loads no Pulumi; components/scheduling/frameworks.py installs them.

`scheduler.frameworks` picks them; each one's Kueue integration names come from the Kueue 0.19 config reference
(`integrations.frameworks`). Versions are the ones the pinned Kueue's go.mod builds its integrations against
(components/pins.py).
Operator pods tolerate only the system pool's taint: every GPU pool is tainted, so they run on the system pool.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from components.pins import PINS


@dataclass(frozen=True)
class Framework:
    """One job framework: its chart, and the Kueue integrations it makes real."""

    name: str  # what `scheduler.frameworks` lists
    chart: str
    version: str
    namespace: str
    integrations: tuple[str, ...]  # Kueue `integrations.frameworks` entries its CRDs serve
    release: str = ""  # Helm release name (default: the framework name)
    repository: str = ""  # classic Helm repository; empty for OCI charts
    values: dict[str, Any] = field(default_factory=dict)
    needs: tuple[str, ...] = ()  # frameworks it runs on, which must be installed too
    # Where its chart's values take the operator pod's tolerations (dotted): the release sets the system pool's there.
    tolerations_at: str = "tolerations"

    @property
    def release_name(self) -> str:
        return self.release or self.name


FRAMEWORKS: dict[str, Framework] = {f.name: f for f in (
    # JobSet: the multi-job gang (leader + workers) most training frameworks and GKE's TAS examples build on.
    Framework("jobset", "oci://registry.k8s.io/jobset/charts/jobset", PINS["jobset"].version, "jobset-system",
              ("jobset.x-k8s.io/jobset",), tolerations_at="controller.tolerations"),
    # Kubeflow Trainer v2 (TrainJob). Kueue >= 0.17 patches TrainJobs through spec.runtimePatches, which Trainer 2.2
    # introduced (kueue#11931); 2.3 changed that API again and reached Kueue after 0.19 (kueue#14504). Its TrainJobs
    # run as JobSets, so our JobSet release serves it instead of the chart's bundled copy.
    Framework("trainer", "oci://ghcr.io/kubeflow/charts/kubeflow-trainer", PINS["kubeflow-trainer"].version,
              "kubeflow-system", ("trainer.kubeflow.org/trainjob",), release="kubeflow-trainer",
              values={"jobset": {"install": False}, "runtimes": {"torchDistributed": {"enabled": True}}},
              needs=("jobset",), tolerations_at="manager.tolerations"),
    # LeaderWorkerSet: multi-node inference and training groups (one leader, N workers per replica).
    Framework("leaderworkerset", "oci://registry.k8s.io/lws/charts/lws", PINS["lws"].version, "lws-system",
              ("leaderworkerset.x-k8s.io/leaderworkerset",), release="lws"),
    # KubeRay: Ray clusters and jobs; Kueue manages RayJob, RayCluster and RayService.
    Framework("kuberay", "kuberay-operator", PINS["kuberay-operator"].version, "kuberay-system",
              ("ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice"), release="kuberay-operator",
              repository="https://ray-project.github.io/kuberay-helm/"),
)}

# Kueue integrations that need no operator: core workloads.
BUILT_IN = ("batch/job", "pod", "deployment", "statefulset")


def kueue_integrations(frameworks: Iterable[str]) -> list[str]:
    """Kueue's `integrations.frameworks`: the built-in workloads plus what the installed frameworks (the stack's
    `scheduler.frameworks`) serve."""
    return [*BUILT_IN, *(i for name in frameworks for i in FRAMEWORKS[name].integrations)]
