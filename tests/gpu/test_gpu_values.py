"""GPU software layer, pure parts: operator values, node labels, MIG and sharing configs, advertised resources.

Configs are built with the real parser from small dicts: every cloud x sharing mode the catalog allows.
"""
from __future__ import annotations

import copy

import pytest
import yaml

from components.config.labels import pool_labels, pool_taints
from components.clouds import profile
from components.config import validate
from components.gpu.dcgm import METRICS, metrics_csv
from components.gpu.layer import gpu_resources, gpu_resources_at_max
from components.gpu.mig import mig_configs, mig_parted_config
from components.config.operands import operands
from components.gpu.operator import operator_values
from components.gpu.sharing import DEFAULT_ENTRY, DEVICE_PLUGIN_CONFIGMAP, device_plugin_configs

from support.gpu import CLOUDS, MATRIX, SHARING, raw_config

OPERATOR_MIG = {"aws", "oci"}  # mig_via == "operator"; AKS and GKE partition through the pool API
OPERATOR_SHARING = {"aws", "azure", "oci"}  # sharing_via == "operator"; GKE uses gpuSharingConfig


def build(cloud: str, pools: list[dict], **top):
    return validate(raw_config(cloud, copy.deepcopy(pools), **top))


def one_pool(cloud: str, mode: str, mig_capable: bool = True):
    instance, gpus = CLOUDS[cloud][1] if mig_capable else CLOUDS[cloud][2]
    config = build(cloud, [{"name": "p1", "instanceType": instance, "maxNodes": 3, "sharing": SHARING[mode]}])
    return config, config.gpu_pools[0], gpus


@pytest.mark.parametrize("cloud, mode", MATRIX)
def test_every_cloud_and_mode_on_a_mig_gpu(cloud, mode):
    config, pool, gpus = one_pool(cloud, mode)
    values = operator_values(config, profile(cloud))
    labels = pool_labels(config, pool)

    # MIG: mig-manager and the mig.config label only where the operator partitions.
    by_operator_mig = mode == "mig" and cloud in OPERATOR_MIG
    assert values["migManager"]["enabled"] is by_operator_mig
    if cloud in OPERATOR_MIG:
        assert labels["nvidia.com/mig.config"] == ("all-1g.10gb" if mode == "mig" else "all-disabled")
    else:
        assert "nvidia.com/mig.config" not in labels
    if by_operator_mig:
        assert values["migManager"]["env"] == [{"name": "WITH_REBOOT", "value": "true"}]
        assert values["migManager"]["config"] == {"create": False, "name": "gpu-platform-mig-parted-config",
                                                  "default": "all-disabled"}
        assert mig_configs(config)["all-1g.10gb"] == [
            {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    assert values["mig"]["strategy"] == ("single" if mode == "mig" else "none")

    # Sharing: a device plugin entry and label only where the operator's plugin shares.
    by_operator_sharing = mode in ("mps", "time-slicing") and cloud in OPERATOR_SHARING
    data = values["devicePlugin"].get("config", {}).get("data", {})
    assert ("p1" in data) is by_operator_sharing
    assert (labels.get("nvidia.com/device-plugin.config") == "p1") is by_operator_sharing
    if by_operator_sharing:
        key = "timeSlicing" if mode == "time-slicing" else "mps"
        assert yaml.safe_load(data["p1"]) == {
            "version": "v1", "sharing": {key: {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}

    # What a node advertises: GKE and AKS MIG also come out as nvidia.com/gpu slices (uniform layouts only).
    per_gpu = {"none": 1, "mig": 7, "mps": 4, "time-slicing": 4}[mode]
    assert gpu_resources(config) == {"p1": {"nvidia.com/gpu": gpus * per_gpu}}
    assert gpu_resources_at_max(config) == {"p1": {"nvidia.com/gpu": gpus * per_gpu * 3}}


@pytest.mark.parametrize("cloud", CLOUDS)
@pytest.mark.parametrize("mode", ["none", "mps", "time-slicing"])
def test_every_cloud_and_mode_on_a_gpu_without_mig(cloud, mode):
    config, pool, gpus = one_pool(cloud, mode, mig_capable=False)
    labels = pool_labels(config, pool)
    assert "nvidia.com/mig.config" not in labels  # nothing to partition
    assert operator_values(config, profile(cloud))["migManager"] == {"enabled": False}
    replicas = 1 if mode == "none" else 4
    assert gpu_resources(config) == {"p1": {"nvidia.com/gpu": gpus * replicas}}


def test_gke_uses_its_own_device_plugin_paths_cdi_and_quota():
    config = build("gcp", [{"name": "l4", "instanceType": "g2-standard-24", "maxNodes": 2,
                            "sharing": {"mode": "time-slicing", "replicas": 2}}])
    values = operator_values(config, profile("gcp"))
    assert values["driver"] == {"enabled": False}
    # COS has no toolkit: the operator installs one next to GKE's driver, and containers get GPUs through CDI.
    # GKE 1.33+ containerd: the toolkit reads config.toml itself (NVIDIA's GKE known issue).
    assert values["toolkit"] == {"enabled": True, "installDir": "/home/kubernetes/bin/nvidia",
                                 "env": [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]}
    assert values["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert values["cdi"] == {"enabled": True}
    # GKE's plugin serves the pool (and its gpuSharingConfig): ours stays off, and no sharing entry exists twice.
    assert values["devicePlugin"] == {"enabled": False}
    env = {e["name"]: e["value"] for e in values["dcgmExporter"]["env"]}
    assert env["DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"] == "device-name"
    assert profile("gcp").critical_pods_need_quota


def test_gke_operator_owned_driver_uses_the_operators_plugin_and_default_paths():
    config = build("gcp", [{"name": "h100", "instanceType": "a3-highgpu-8g", "maxNodes": 2, "driver": "operator"}])
    values = operator_values(config, profile("gcp"))
    assert values["driver"] == {"enabled": True}
    assert values["toolkit"] == {"enabled": True, "env": [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]}
    assert "hostPaths" not in values  # the operator's own driver lives where it looks by default
    assert values["devicePlugin"]["enabled"] is True
    labels = pool_labels(config, config.gpu_pools[0])
    assert labels["gke-no-default-nvidia-gpu-device-plugin"] == "true"
    env = {e["name"]: e["value"] for e in values["dcgmExporter"]["env"]}
    assert env["DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"] == "uid"


@pytest.mark.parametrize("cloud, driver, toolkit", [("aws", False, False), ("azure", False, False),
                                                    ("gcp", False, True), ("oci", False, True)])
def test_managed_drivers_leave_the_operator_without_a_driver(cloud, driver, toolkit):
    config, pool, _ = one_pool(cloud, "none")
    values = operator_values(config, profile(cloud))
    assert values["driver"]["enabled"] is driver
    assert values["toolkit"]["enabled"] is toolkit
    assert not [k for k in pool_labels(config, pool) if k.startswith("nvidia.com/gpu.deploy.")]


@pytest.mark.parametrize("cloud", ["azure", "oci"])
def test_all_operator_owned_drivers(cloud):
    config = build(cloud, [{"name": "p1", "instanceType": CLOUDS[cloud][2][0], "maxNodes": 2, "driver": "operator"}])
    values = operator_values(config, profile(cloud))
    assert values["driver"] == {"enabled": True} and values["toolkit"] == {"enabled": True, "env": [
        {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": "false"},
        {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS", "value": "true"}]}
    assert values["devicePlugin"]["env"] == [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}]
    assert not [k for k in pool_labels(config, config.gpu_pools[0]) if k.startswith("nvidia.com/gpu.deploy.")]


@pytest.mark.parametrize("cloud, driver, mounts", [
    ("aws", "managed", False),    # the EKS AMI's own toolkit would find no devices in mounts
    ("azure", "managed", False),  # so would the AKS image's
    ("gcp", "managed", False),    # GKE's device plugin and CDI pass devices their own way
    ("gcp", "operator", False),
    ("oci", "managed", True),     # the operator's toolkit and plugin on every GPU node
])
def test_device_lists_are_volume_mounts_where_the_operator_owns_toolkit_and_plugin(cloud, driver, mounts):
    config = build(cloud, [{"name": "p1", "instanceType": CLOUDS[cloud][2][0], "maxNodes": 2, "driver": driver}])
    values = operator_values(config, profile(cloud))
    toolkit_env = {e["name"]: e["value"] for e in values["toolkit"].get("env", [])}
    assert (toolkit_env.get("ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED") == "false") is mounts
    assert ("env" in values["devicePlugin"]) is mounts


def test_one_image_owned_toolkit_keeps_env_device_lists_for_the_whole_plugin():
    """The device plugin's strategy is cluster-wide: one AKS-image pool, whose toolkit reads only the variable,
    keeps it for every pool."""
    config = build("azure", [
        {"name": "managed", "instanceType": CLOUDS["azure"][2][0], "maxNodes": 2, "driver": "managed"},
        {"name": "owned", "instanceType": CLOUDS["azure"][2][0], "maxNodes": 2, "driver": "operator"}])
    values = operator_values(config, profile("azure"))
    assert "env" not in values["toolkit"] and "env" not in values["devicePlugin"]


@pytest.mark.parametrize("cloud, toolkit_label", [("azure", True), ("oci", False)])
def test_mixed_driver_owners_label_the_managed_pools(cloud, toolkit_label):
    config = build(cloud, [
        {"name": "managed", "instanceType": CLOUDS[cloud][2][0], "maxNodes": 2, "driver": "managed"},
        {"name": "owned", "instanceType": CLOUDS[cloud][2][0], "maxNodes": 2, "driver": "operator"},
    ])
    values = operator_values(config, profile(cloud))
    assert values["driver"] == {"enabled": True} and values["toolkit"]["enabled"] is True
    managed = pool_labels(config, config.pool("managed"))
    owned = pool_labels(config, config.pool("owned"))
    assert managed["nvidia.com/gpu.deploy.driver"] == "false"
    # AKS images bring their own toolkit: the operator's must stay off those nodes too; OKE's do not.
    assert ("nvidia.com/gpu.deploy.container-toolkit" in managed) is toolkit_label
    assert not [k for k in owned if k.startswith("nvidia.com/gpu.deploy.")]


def test_bottlerocket_nodes_keep_the_operators_stack_off():
    pools = [{"name": "l4", "instanceType": "g6.xlarge", "maxNodes": 2}]
    config = build("aws", pools, cluster={"name": "c1", "region": "us-east-1",
                                          "aws": {"amiType": "BOTTLEROCKET_x86_64_NVIDIA"}})
    labels = pool_labels(config, config.gpu_pools[0])
    for operand in ("driver", "container-toolkit", "device-plugin", "mig-manager"):
        assert labels[f"nvidia.com/gpu.deploy.{operand}"] == "false"
    al2023 = build("aws", pools)
    assert "nvidia.com/gpu.deploy.device-plugin" not in pool_labels(al2023, al2023.gpu_pools[0])


def test_tolerations_cover_every_taint_any_gpu_pool_carries():
    config = build("azure", [
        {"name": "a100", "instanceType": "Standard_NC96ads_A100_v4", "maxNodes": 2,
         "taints": ["dedicated=ml:NoSchedule", {"key": "drain", "effect": "NoExecute"}]},
        {"name": "a10spot", "instanceType": "Standard_NV36ads_A10_v5", "maxNodes": 2, "capacityType": "spot"},
    ])
    values = operator_values(config, profile("azure"))
    tolerated = {(t["key"], t["effect"]) for t in values["daemonsets"]["tolerations"]}
    for pool in config.gpu_pools:
        for taint in pool_taints(pool, profile("azure")):
            assert (taint.key, taint.effect) in tolerated, taint
    assert {("sku", "NoSchedule"), ("dedicated", "NoSchedule"), ("drain", "NoExecute"),
            ("gpu-platform.io/spot", "NoSchedule"), ("kubernetes.azure.com/scalesetpriority", "NoSchedule")} <= tolerated
    assert all(t["operator"] == "Exists" and t["key"] for t in values["daemonsets"]["tolerations"])  # no blanket
    nfd = values["node-feature-discovery"]["worker"]["tolerations"]
    assert {(t["key"], t["effect"]) for t in nfd} == tolerated | {("node-role.kubernetes.io/control-plane", "NoSchedule")}
    assert values["daemonsets"]["tolerations"][0] == {"key": "nvidia.com/gpu", "operator": "Exists",
                                                      "effect": "NoSchedule"}


def test_mixed_mig_layouts_use_the_mixed_strategy_and_mig_resources():
    config = build("oci", [
        {"name": "bal", "instanceType": "BM.GPU.A100-v2.8", "maxNodes": 2,
         "sharing": {"mode": "mig", "migProfile": "all-balanced"}},
        {"name": "custom", "instanceType": "BM.GPU.A100-v2.8", "maxNodes": 1,
         "sharing": {"mode": "mig", "migProfile": {"3g.40gb": 1, "1g.10gb+me": 1}}},
    ])
    values = operator_values(config, profile("oci"))
    assert values["mig"]["strategy"] == "mixed"
    configs = mig_configs(config)
    assert list(configs) == ["all-disabled", "all-balanced", "custom-1g.10gb.mex1-3g.40gbx1"]
    assert configs["all-balanced"][0]["mig-devices"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert pool_labels(config, config.pool("custom"))["nvidia.com/mig.config"] == "custom-1g.10gb.mex1-3g.40gbx1"
    assert gpu_resources(config)["bal"] == {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8,
                                            "nvidia.com/mig-3g.40gb": 8}
    assert gpu_resources_at_max(config)["custom"] == {"nvidia.com/mig-1g.10gb+me": 8, "nvidia.com/mig-3g.40gb": 8}
    parsed = yaml.safe_load(mig_parted_config(config))
    assert parsed["version"] == "v1" and parsed["mig-configs"] == configs


def test_pools_sharing_the_same_layout_name_share_one_entry():
    config = build("aws", [
        {"name": "a", "instanceType": "p4de.24xlarge", "maxNodes": 1, "sharing": SHARING["mig"]},
        {"name": "b", "instanceType": "p5.48xlarge", "maxNodes": 1, "sharing": SHARING["mig"]},
    ])
    assert list(mig_configs(config)) == ["all-disabled", "all-1g.10gb"]


def test_device_plugin_default_entry_is_whole_gpus():
    config = build("aws", [
        {"name": "ts", "instanceType": "g6.12xlarge", "maxNodes": 1, "sharing": SHARING["time-slicing"]},
        {"name": "whole", "instanceType": "g6.12xlarge", "maxNodes": 1},
    ])
    values = operator_values(config, profile("aws"))
    cfg = values["devicePlugin"]["config"]
    assert cfg["create"] is True and cfg["name"] == DEVICE_PLUGIN_CONFIGMAP and cfg["default"] == DEFAULT_ENTRY
    assert device_plugin_configs(config) == {
        DEFAULT_ENTRY: {"version": "v1"},
        "ts": {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}},
    }
    assert "nvidia.com/device-plugin.config" not in pool_labels(config, config.pool("whole"))


def test_no_device_plugin_config_without_shared_pools():
    config, _, _ = one_pool("aws", "none")
    assert operator_values(config, profile("aws"))["devicePlugin"] == {"enabled": True}


def test_dcgm_exporter_scraped_by_the_configured_prometheus_with_pod_attribution():
    config = build("aws", [{"name": "p1", "instanceType": "p5.48xlarge", "maxNodes": 1}],
                   observability={"prometheus": {"releaseLabel": "prom-main"}})
    dcgm = operator_values(config, profile("aws"))["dcgmExporter"]
    assert dcgm["enabled"] is True
    assert dcgm["serviceMonitor"] == {"enabled": True, "additionalLabels": {"release": "prom-main"}}
    assert dcgm["config"] == {"name": "gpu-platform-dcgm-metrics"}
    assert dcgm["enablePodLabels"] is True and dcgm["podLabelAllowlistRegex"]
    env = {e["name"]: e["value"] for e in dcgm["env"]}
    assert env == {"DCGM_EXPORTER_KUBERNETES": "true", "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "uid"}


def test_dcgm_off_disables_the_exporter():
    config = build("aws", [{"name": "p1", "instanceType": "p5.48xlarge", "maxNodes": 1}],
                   observability={"dcgm": False})
    assert operator_values(config, profile("aws"))["dcgmExporter"] == {"enabled": False}


def test_metrics_csv_has_utilization_and_health_fields():
    names = [line.split(",")[0] for line in metrics_csv().splitlines() if line and not line.startswith("#")]
    assert names == [m[0] for m in METRICS] and len(set(names)) == len(names)
    for required in ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                     "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_XID_ERRORS",
                     "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
                     "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
                     "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"):
        assert required in names


def test_values_are_a_pure_function_of_config():
    config, _, _ = one_pool("oci", "mig")
    first = operator_values(config, profile("oci"))
    first["daemonsets"]["tolerations"].append({"key": "mutated"})
    assert operator_values(config, profile("oci"))["daemonsets"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert operands(config).mig_manager is True
