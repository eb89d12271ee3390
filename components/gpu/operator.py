"""The NVIDIA GPU Operator: its namespace, ConfigMaps and Helm release, with values computed from config and cloud."""
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes.core.v1 as core
import pulumi_kubernetes.helm.v3 as helm

from components.args import fill_defaults
from components.args_checks import check_args
from components.clouds import profile
from components.clouds.facts import CloudProfile
from components.config.labels import pool_taints
from components.config.capacity import mig_strategy
from components.config.model import PlatformConfig
from components.gpu.dcgm import DCGM_CONFIGMAP, DCGM_CSV_KEY, metrics_csv
from components.gpu.mig import MIG_CONFIG_KEY, MIG_CONFIGMAP, mig_parted_config
from components.config.operands import MIG_DISABLED, operands, operator_shared, volume_mount_devices
from components.gpu.sharing import DEFAULT_ENTRY, DEVICE_PLUGIN_CONFIGMAP, device_plugin_data
from components import namespaces
from components.pins import PINS
from components.system_pool import tolerating

NAMESPACE = namespaces.GPU_OPERATOR
CHART = "gpu-operator"
CHART_VERSION = PINS[CHART].version
CHART_REPO = "https://helm.ngc.nvidia.com/nvidia"
CRITICAL_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
# Pod labels dcgm-exporter copies onto GPU series: enough to name the queue and app, bounded for Prometheus.
POD_LABEL_ALLOWLIST = (r"^kueue\.x-k8s\.io/queue-name$", r"^app\.kubernetes\.io/name$", r"^app$")
# Devices reach a container only as the device plugin's volume mounts: a pod's NVIDIA_VISIBLE_DEVICES (or a CUDA
# image's ENV, which admission never sees) no longer selects GPUs it was not allocated (tenancy/device_env.py).
VOLUME_MOUNT_TOOLKIT_ENV = (("ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "false"),
                            ("ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS", "true"))
VOLUME_MOUNT_PLUGIN_ENV = (("DEVICE_LIST_STRATEGY", "volume-mounts"),)
_CONTROL_PLANE_TOLERATION = {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "",
                             "effect": "NoSchedule"}


def gpu_tolerations(config: PlatformConfig, prof: CloudProfile) -> list[dict[str, str]]:
    """One toleration per (key, effect) any GPU pool is tainted with, from the taints the pools really get."""
    seen: dict[tuple[str, str], None] = {}
    for pool in config.gpu_pools:
        for taint in pool_taints(pool, prof):
            seen.setdefault((taint.key, taint.effect))
    return [{"key": key, "operator": "Exists", "effect": effect} for key, effect in seen]


def _dcgm_exporter(config: PlatformConfig, prof: CloudProfile, cloud_plugin_serves: bool) -> dict[str, Any]:
    if not config.observability.dcgm:
        return {"enabled": False}
    # A cloud device plugin reports device names (nvidia0), not UUIDs, to the kubelet's pod-resources API.
    id_type = prof.cloud_plugin_gpu_id_type if cloud_plugin_serves else "uid"
    return {
        "enabled": True,
        "config": {"name": DCGM_CONFIGMAP},
        "env": [{"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
                {"name": "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "value": id_type}],
        "enablePodLabels": True,
        "podLabelAllowlistRegex": list(POD_LABEL_ALLOWLIST),
        "serviceMonitor": {"enabled": True,
                           "additionalLabels": {"release": config.observability.prometheus.release_label}},
    }


def operator_values(config: PlatformConfig, prof: CloudProfile) -> dict[str, Any]:
    """The chart values: a pure function of the stack config and its cloud profile."""
    ops = operands(config)
    tolerations = gpu_tolerations(config, prof)
    cloud_plugin_serves = prof.cloud_device_plugin and not ops.device_plugin
    values: dict[str, Any] = {
        "driver": {"enabled": ops.driver},
        "toolkit": {"enabled": ops.toolkit},
        "mig": {"strategy": mig_strategy(config.gpu_pools) or "none"},
        "daemonsets": {"tolerations": tolerations},
        # The operator (and its hook Jobs) runs on the system pool.
        "operator": {"tolerations": tolerating(_CONTROL_PLANE_TOLERATION)},
        # NFD labels the GPU nodes the operands select on; a taint it does not tolerate hides the node's GPUs.
        "node-feature-discovery": {"worker": {"tolerations": [
            dict(t) for t in (_CONTROL_PLANE_TOLERATION, *tolerations)]},
            # The NFD master and garbage collector run on the system pool.
            "master": {"tolerations": tolerating(_CONTROL_PLANE_TOLERATION)},
            "gc": {"tolerations": tolerating()}},
        "devicePlugin": {"enabled": ops.device_plugin},
        "migManager": {"enabled": ops.mig_manager},
        "dcgmExporter": _dcgm_exporter(config, prof, cloud_plugin_serves),
    }
    if ops.driver and any(p.driver == "operator" and p.fabric in prof.fabrics
                          and prof.fabrics[p.fabric].peer_memory_by_operator for p in config.gpu_pools):
        # GPUDirect RDMA: the driver container builds and loads nvidia-peermem against the MOFED the Network
        # Operator's driver container installs (useHostMofed stays false: MOFED is not on the host image).
        values["driver"]["rdma"] = {"enabled": True}
    if prof.managed_driver_root and not ops.driver:
        values["hostPaths"] = {"driverInstallDir": prof.managed_driver_root}
        values["toolkit"]["installDir"] = prof.managed_driver_root
    if prof.needs_cdi:
        values["cdi"] = {"enabled": True}
    if prof.operator_runtime_class:
        values["operator"]["runtimeClass"] = prof.operator_runtime_class
    mounts = volume_mount_devices(config)
    toolkit_env = [*prof.toolkit_env, *(VOLUME_MOUNT_TOOLKIT_ENV if mounts else ())]
    if ops.toolkit and toolkit_env:
        values["toolkit"]["env"] = [{"name": name, "value": value} for name, value in toolkit_env]
    if mounts:
        values["devicePlugin"]["env"] = [{"name": name, "value": value} for name, value in VOLUME_MOUNT_PLUGIN_ENV]
    if ops.device_plugin and any(operator_shared(prof, p) for p in config.gpu_pools):
        values["devicePlugin"]["config"] = {"create": True, "name": DEVICE_PLUGIN_CONFIGMAP, "default": DEFAULT_ENTRY,
                                            "data": device_plugin_data(config)}
    if ops.mig_manager:
        # Cloud VMs cannot always toggle MIG mode without a reboot; mig-manager reboots the node itself.
        values["migManager"]["env"] = [{"name": "WITH_REBOOT", "value": "true"}]
        values["migManager"]["config"] = {"create": False, "name": MIG_CONFIGMAP, "default": MIG_DISABLED}
    return values


@dataclass
class GpuOperatorArgs:
    """What the GPU Operator install needs: chart values and the few objects created beside the release."""

    values: dict[str, Any]
    """The gpu-operator chart values (operator_values() computes them from a stack config)."""
    driver_owners: dict[str, str]
    """Who installs the NVIDIA driver on each GPU pool: `operator`, `cloud` or `image`, by pool name."""
    operands: dict[str, bool]
    """Which operands the operator runs: driver, toolkit, devicePlugin, migManager, dcgmExporter."""
    cloud_note: Optional[str] = ""
    """One line on how this cloud's GPU nodes differ (recorded on the component, shown by the plan)."""
    critical_pods_quota: Optional[bool] = False
    """Create the ResourceQuota GKE needs before it admits system-critical pods outside kube-system."""
    mig_config: Optional[str] = None
    """mig-parted config YAML for the mig-manager's ConfigMap; None when no pool uses MIG."""
    dcgm_metrics: Optional[str] = None
    """dcgm-exporter metrics CSV for its ConfigMap; None when DCGM is off."""
    cloud: Optional[str] = None
    """The cloud (aws, azure, gcp, oci): when given, driver owners and MIG are checked against its GPU images."""

    def __post_init__(self) -> None:
        fill_defaults(self)

    @classmethod
    def from_config(cls, config: PlatformConfig) -> "GpuOperatorArgs":
        """The args the stack program passes: every value derived from the validated config and its cloud."""
        prof = profile(config.cloud)
        ops = operands(config)
        return cls(
            values=operator_values(config, prof),
            driver_owners={p.name: p.driver for p in config.gpu_pools},
            operands={"driver": ops.driver, "toolkit": ops.toolkit, "devicePlugin": ops.device_plugin,
                      "migManager": ops.mig_manager, "dcgmExporter": config.observability.dcgm},
            cloud_note=prof.operator_note,
            critical_pods_quota=prof.critical_pods_need_quota,
            mig_config=mig_parted_config(config) if ops.mig_manager else None,
            dcgm_metrics=metrics_csv() if config.observability.dcgm else None,
            cloud=config.cloud,
        )


class GpuOperator(pulumi.ComponentResource):
    """The NVIDIA GPU Operator in `gpu-operator`, owning exactly the operands the pools' driver owners leave to it."""

    TYPE = "gpu-platform:gpu:GpuOperator"

    namespace_name: pulumi.Output[str]
    """The operator's namespace, once created."""
    release_name: pulumi.Output[str]
    """The operator's Helm release, once installed: what depends on its CRDs orders after it."""

    def __init__(self, name: str, args: GpuOperatorArgs, opts: Optional[pulumi.ResourceOptions] = None):
        check_args(args)  # every problem at once, before any child exists
        self.values = args.values
        super().__init__(self.TYPE, name, {
            "chartVersion": CHART_VERSION,
            "namespace": NAMESPACE,
            "driverOwners": dict(args.driver_owners),
            "operands": dict(args.operands),
            "migStrategy": self.values.get("mig", {}).get("strategy", "none"),
            "cloudNote": args.cloud_note,
        }, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = core.Namespace(f"{name}-namespace", metadata={
            "name": NAMESPACE,
            # Driver, toolkit and device plugin pods are privileged and mount host paths.
            "labels": {"pod-security.kubernetes.io/enforce": "privileged"},
        }, opts=child)
        ns = namespace.metadata.name
        before_release: list[pulumi.Resource] = [namespace]
        if args.critical_pods_quota:
            # GKE admits system-node-critical/system-cluster-critical pods outside kube-system only up to a
            # ResourceQuota scoped to those classes; without it every operand pod is rejected.
            before_release.append(core.ResourceQuota(f"{name}-critical-pods", metadata={
                "name": "gpu-operator-critical-pods", "namespace": ns,
            }, spec={
                "hard": {"pods": "100"},
                "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": list(CRITICAL_PRIORITY_CLASSES)}]},
            }, opts=child))
        if args.mig_config is not None:
            before_release.append(core.ConfigMap(f"{name}-mig-config", metadata={
                "name": MIG_CONFIGMAP, "namespace": ns,
            }, data={MIG_CONFIG_KEY: args.mig_config}, opts=child))
        if args.dcgm_metrics is not None:
            before_release.append(core.ConfigMap(f"{name}-dcgm-metrics", metadata={
                "name": DCGM_CONFIGMAP, "namespace": ns,
            }, data={DCGM_CSV_KEY: args.dcgm_metrics}, opts=child))
        self.release = helm.Release(f"{name}-release", helm.ReleaseArgs(
            name=CHART,
            chart=CHART,
            version=CHART_VERSION,
            repository_opts=helm.RepositoryOptsArgs(repo=CHART_REPO),
            namespace=ns,
            values=self.values,
            # Wait for the operator and its CRDs: later layers (queues, alerts) build on them. Operand DaemonSets
            # are created by the operator, not Helm, so scaled-to-zero GPU pools do not block the wait.
            skip_await=False,
            timeout=900,
        ), opts=pulumi.ResourceOptions(parent=self, depends_on=before_release))
        self.namespace_name, self.release_name = ns, self.release.name
        self.register_outputs({"namespace": ns, "release": self.release.name})
