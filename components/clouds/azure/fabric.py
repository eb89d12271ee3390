"""The NVIDIA Network Operator for InfiniBand pools (AKS ND sizes): its namespace and Helm release, the
NicClusterPolicy that runs the DOCA/OFED driver container and the SR-IOV device plugin on those pools only, and a
DaemonSet lifting the locked-memory limit RDMA needs on their nodes.

The shape follows Microsoft's Azure/aks-rdma-infiniband project (configs/nicclusterpolicy/base and
sriov-device-plugin): the driver container replaces the node image's inbox mlx5 modules with DOCA OFED, which
GPUDirect RDMA (nvidia-peermem) needs, and the SR-IOV plugin advertises every InfiniBand NIC as `rdma/ib`, so a pod
takes a node's NICs the way it takes its GPUs. Field names checked against the NicClusterPolicy CRD
(Mellanox/network-operator deployment/network-operator/crds/mellanox.com_nicclusterpolicies.yaml).
"""
from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_kubernetes.apps.v1 as apps
import pulumi_kubernetes.core.v1 as core
import pulumi_kubernetes.helm.v3 as helm
from pulumi_kubernetes.apiextensions import CustomResource

from components.config.labels import FABRIC_LABEL
from components.clouds.facts import Fabric
from components.config.model import PlatformConfig
from components.observability.reclaimer.component import IMAGE as DEBIAN_SLIM
from components.pins import PINS
from components.tenancy.isolation import privileged_namespace_labels
from components.system_pool import tolerating

API = "mellanox.com/v1alpha1"
KIND = "NicClusterPolicy"
# The operator reconciles the one cluster-scoped policy of this name.
POLICY_NAME = "nic-cluster-policy"
IMAGE_REPOSITORY = "nvcr.io/nvidia/mellanox"
# The DOCA driver Azure/aks-rdma-infiniband's NicClusterPolicies pin (validated on ND sizes); the operator appends
# "-<os><version>-<arch>" from the node's NFD labels. The policy names the driver, so a chart upgrade does not move it.
DOCA_DRIVER = ("doca-driver", "doca3.2.0-25.10-1.2.8.0-2")
# The operator's own components are tagged with its release (the chart's values.yaml tags its SR-IOV images so).
SRIOV_DEVICE_PLUGIN = ("sriov-network-device-plugin", f"network-operator-v{PINS['network-operator'].version}")
MELLANOX_VENDOR = "15b3"  # PCI vendor id of NVIDIA (Mellanox) NICs


def device_plugin_config(fabric: Fabric) -> str:
    """SR-IOV device plugin config: every Mellanox NIC in InfiniBand mode, with its RDMA devices, as `fabric.resource`.

    linkTypes keeps out the node's accelerated-networking NIC, also a Mellanox device but Ethernet (ND H100 v5 pods
    see 9 mlx5 devices, 8 of them InfiniBand).
    """
    prefix, name = fabric.resource.split("/")
    return json.dumps({"resourceList": [{"resourcePrefix": prefix, "resourceName": name, "selectors": {
        "vendors": [MELLANOX_VENDOR], "linkTypes": ["infiniband"], "isRdma": True}}]}, indent=2)


def nic_cluster_policy(fabric: Fabric, tolerations: list[dict[str, str]]) -> dict[str, Any]:
    """The NicClusterPolicy spec: driver and device plugin on the fabric's pools, whatever their taints."""
    driver_image, driver_version = DOCA_DRIVER
    plugin_image, plugin_version = SRIOV_DEVICE_PLUGIN
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": FABRIC_LABEL, "operator": "In", "values": [fabric.name]}]}]}},
        "tolerations": tolerations,
        "ofedDriver": {
            "repository": IMAGE_REPOSITORY, "image": driver_image, "version": driver_version,
            # Azure's workaround for the driver container racing the inbox modules at load (doca-driver-build#52).
            "env": [{"name": "OFED_BLACKLIST_MODULES_FILE", "value": "/host/etc/modprobe.d/blacklist-ofed-modules.conf"}],
            # Reloading the NIC driver cuts the node's RDMA: one node at a time, drained first.
            "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1, "drain": {
                "enable": True, "force": True, "deleteEmptyDir": True, "timeoutSeconds": 300}},
            # Compiling DOCA OFED against the node's kernel takes minutes: probes as Azure's policy sets them.
            "startupProbe": {"initialDelaySeconds": 10, "periodSeconds": 20},
            "livenessProbe": {"initialDelaySeconds": 30, "periodSeconds": 30},
            "readinessProbe": {"initialDelaySeconds": 10, "periodSeconds": 30},
        },
        "sriovDevicePlugin": {"repository": IMAGE_REPOSITORY, "image": plugin_image, "version": plugin_version,
                              "config": device_plugin_config(fabric)},
    }


MEMLOCK_DROP_IN = "/etc/systemd/system/containerd.service.d/50-gpu-platform-memlock.conf"
MEMLOCK_UNIT = "[Service]\nLimitMEMLOCK=infinity"
# Containers inherit containerd's locked-memory limit, 64 KiB on AKS nodes (Azure's tests see `ulimit -l` 64), and
# RDMA memory registration (NCCL's buffers) needs far more; team pods may not add IPC_LOCK (Pod Security baseline).
# Once per node, and again only if the drop-in changed: restarting containerd keeps running containers (their
# shims stay), and containers started afterwards get the new limit.
HOST = "nsenter -t 1 -m --"  # systemd's mount namespace (hostPID): systemctl refuses to act from a chroot
MEMLOCK_SCRIPT = f"""set -eu
want='{MEMLOCK_UNIT}'
if [ "$(cat /host{MEMLOCK_DROP_IN} 2>/dev/null || true)" != "$want" ]; then
  mkdir -p "$(dirname /host{MEMLOCK_DROP_IN})"
  printf '%s\\n' "$want" > /host{MEMLOCK_DROP_IN}
  {HOST} systemctl daemon-reload
  {HOST} systemctl restart containerd
fi
"""


def memlock_daemonset(fabric: Fabric, tolerations: list[dict[str, str]]) -> dict[str, Any]:
    """The DaemonSet spec that lifts containerd's locked-memory limit on the fabric's nodes."""
    labels = {"app.kubernetes.io/name": f"{fabric.name}-memlock", "app.kubernetes.io/part-of": "gpu-platform"}
    return {
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {
            "nodeSelector": {FABRIC_LABEL: fabric.name},
            "tolerations": tolerations,
            "hostPID": True,
            "initContainers": [{
                "name": "memlock", "image": DEBIAN_SLIM, "command": ["/bin/sh", "-c", MEMLOCK_SCRIPT],
                "securityContext": {"privileged": True},
                "volumeMounts": [{"name": "host", "mountPath": "/host"}],
            }],
            # Keeps the pod Running, so the init step runs once per node rather than in a loop.
            "containers": [{"name": "done", "image": DEBIAN_SLIM, "command": ["sleep", "infinity"],
                            "resources": {"requests": {"cpu": "1m", "memory": "8Mi"},
                                          "limits": {"memory": "16Mi"}}}],
            "volumes": [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}}],
        }},
    }


# The chart's default `operator.tolerations`, which a values list replaces.
CHART_OPERATOR_TOLERATIONS = tuple({"key": f"node-role.kubernetes.io/{role}", "operator": "Equal", "value": "",
                                    "effect": "NoSchedule"} for role in ("master", "control-plane"))


def chart_values() -> dict[str, Any]:
    """Chart values: the GPU Operator's Node Feature Discovery already labels every GPU node (PCI class 02 with
    vendor ids, kernel and OS, which the operator reads to pick the driver image); a second NFD would fight it. The
    chart's NodeFeatureRules stay on (its default) for that NFD to apply."""
    # The operator and its hook Jobs run on the system pool; the chart's own tolerations are kept.
    return {"nfd": {"enabled": False}, "operator": {"tolerations": tolerating(*CHART_OPERATOR_TOLERATIONS)}}


class NetworkOperator(pulumi.ComponentResource):
    """The Network Operator release and its NicClusterPolicy, for one fabric (InfiniBand)."""

    TYPE = "gpu-platform:gpu:NetworkOperator"

    def __init__(self, name: str, config: PlatformConfig, fabric: Fabric, tolerations: list[dict[str, str]],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"fabric": fabric.name, "chartVersion": fabric.version,
                                           "resource": fabric.resource}, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The driver container and device plugin are privileged and mount host paths (Azure labels it the same).
        namespace = core.Namespace(f"{name}-namespace", metadata={
            "name": fabric.namespace, "labels": privileged_namespace_labels()}, opts=child)
        self.release = helm.Release(f"{name}-release", helm.ReleaseArgs(
            name=fabric.chart, chart=fabric.chart, version=fabric.version,
            repository_opts=helm.RepositoryOptsArgs(repo=fabric.repository), namespace=fabric.namespace,
            values=chart_values(),
        ), opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace]))
        apps.DaemonSet(f"{name}-memlock", metadata={"name": f"{fabric.name}-memlock", "namespace": fabric.namespace},
                       spec=memlock_daemonset(fabric, tolerations),
                       # A DaemonSet on pools that may be at zero nodes: waiting for it would block until one starts.
                       opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace]))
        self.policy = CustomResource(
            f"{name}-nic-cluster-policy", api_version=API, kind=KIND, metadata={"name": POLICY_NAME},
            spec=nic_cluster_policy(fabric, tolerations),
            # The release installs the CRD; the policy's DaemonSets land on IB pools that may be at zero nodes.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]))
        self.register_outputs({"release": self.release.name})


def install(name: str, config: PlatformConfig, fabrics: tuple[Fabric, ...], values: dict[str, dict[str, Any]],
            opts: pulumi.ResourceOptions) -> None:
    """The record's installer: the operator tolerates every taint of the fabric's pools."""
    for fabric in fabrics:
        NetworkOperator(f"{name}-{fabric.name}", config, fabric, values[fabric.name]["tolerations"], opts=opts)
