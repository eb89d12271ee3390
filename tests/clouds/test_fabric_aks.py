"""gpuPools[].fabric: infiniband on AKS: catalog counts, config (accepted, refused, auto, the driver warning), the
agent pool, the NVIDIA Network Operator release and NicClusterPolicy, the GPU Operator's driver.rdma, nccl-test."""
from __future__ import annotations

import json
import re

import kubernetes_validate
import pytest
import yaml

from components.clouds.azure.catalog import INSTANCE_TYPES as AZURE_TYPES
from components.config.labels import pool_taints
from components.clouds import PROFILES
from components.clouds.facts import DEFAULT_KUBERNETES_VERSION
from components.config import ConfigError, validate
from components.gpu.operator import operator_values
from gpu_platform.cli import main
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import PROJECT_ROOT, read_stack_config, validate_stack
from gpu_platform.engine.replacements import replace_paths, value_at

from support.fabric import errors as fabric_errors, one
from support.gpu import chart_values, cluster_policy_validator, cluster_policy_view, key_paths, raw_config

AGENT_POOL = "azure-native:containerservice:AgentPool"
RELEASE = "kubernetes:helm.sh/v3:Release"
POLICY = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"
NAMESPACE = "kubernetes:core/v1:Namespace"
ND_TYPES = {"Standard_ND96asr_v4": 8, "Standard_ND96amsr_A100_v4": 8, "Standard_ND96isr_H100_v5": 8,
            "Standard_ND96isr_H200_v5": 8}
IB = PROFILES["azure"].fabrics["infiniband"]

# NicClusterPolicy v1alpha1 (Mellanox/network-operator deployment/network-operator/crds/
# mellanox.com_nicclusterpolicies.yaml): the spec sections and the fields of the two we set, each section's required
# fields, and the patterns the CRD puts on image references; stated here so these tests run without ../shared (checked
# against the network-operator 26.4.1 package's CRD, which test_helm_render.py validates the whole policy against).
SPEC_SECTIONS = {"ibKubernetes", "nicFeatureDiscovery", "nodeAffinity", "ofedDriver", "rdmaSharedDevicePlugin",
                 "secondaryNetwork", "sriovDevicePlugin", "tolerations"}
OFED_FIELDS = {"containerResources", "env", "image", "imagePullSecrets", "livenessProbe", "readinessProbe", "repoConfig",
               "repository", "startupProbe", "terminationGracePeriodSeconds", "upgradePolicy", "version"}
UPGRADE_FIELDS = {"autoUpgrade", "drain", "maxParallelUpgrades", "safeLoad", "waitForCompletion"}
DRAIN_FIELDS = {"deleteEmptyDir", "enable", "force", "podSelector", "timeoutSeconds"}
PLUGIN_FIELDS = {"config", "containerResources", "image", "imagePullSecrets", "repository", "useCdi", "version"}
IMAGE_PATTERNS = {"image": r"[a-zA-Z0-9\-]+", "repository": r"[a-zA-Z0-9\.\-\/]+", "version": r"[a-zA-Z0-9\.-]+"}


def pools(*items, stack_teams=True):
    overrides = {"gpu-platform:gpuPools": list(items)}
    if stack_teams:
        overrides["gpu-platform:teams"] = [{"name": "lab", "quotas": {items[0]["name"]: 8}}]
    return overrides


def errors(overrides):
    return fabric_errors(overrides, stack="azure-prod")


@pytest.fixture(scope="module")
def prod():
    return plan_stack("azure-prod")


# --- catalog and config -------------------------------------------------------------------------------------------

def test_catalog_gives_nd_sizes_eight_infiniband_interfaces_and_no_other_size_any():
    assert {n: t.fabric_interfaces for n, t in AZURE_TYPES.items() if t.fabric_interfaces} == ND_TYPES
    assert {n for n, t in AZURE_TYPES.items() if t.interconnect == "infiniband"} == set(ND_TYPES)


@pytest.mark.parametrize("pool, expected", [
    ({"instanceType": "Standard_ND96isr_H100_v5"}, "infiniband"),  # auto on a training ND pool
    ({"instanceType": "Standard_ND96asr_v4"}, "infiniband"),
    ({"instanceType": "Standard_ND96isr_H200_v5", "workload": "inference"}, "none"),
    ({"instanceType": "Standard_ND96isr_H100_v5", "fabric": "none"}, "none"),
    ({"instanceType": "Standard_ND96amsr_A100_v4", "workload": "inference", "fabric": "infiniband"}, "infiniband"),
    ({"instanceType": "Standard_NC96ads_A100_v4"}, "none"),  # no InfiniBand: auto stays off
])
def test_fabric_resolution(pool, expected):
    plan = plan_stack("azure-prod", config_overrides=pools({"name": "p", "maxNodes": 2, **pool}))
    assert plan.config.gpu_pools[0].fabric == expected


def test_bad_fabric_values_name_path_and_allowed_values():
    problems = errors(pools({"name": "a", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 1, "fabric": "efa"},
                            {"name": "b", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 1,
                             "fabric": "infiniband"},
                            {"name": "c", "instanceType": "Standard_NV36ads_A10_v5", "maxNodes": 1,
                             "fabric": "infiniband"}))
    assert problems["gpuPools[0].fabric"].endswith("allowed: auto, none, infiniband")
    assert "Standard_NC24ads_A100_v4 has no infiniband" in problems["gpuPools[1].fabric"]
    assert problems["gpuPools[1].fabric"].endswith("allowed for it: auto, none")
    assert "Standard_NV36ads_A10_v5 has no infiniband" in problems["gpuPools[2].fabric"]


def test_aks_managed_driver_is_warned_about_once_per_infiniband_pool():
    base = raw_config("azure", [
        {"name": "managed", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2},
        {"name": "owned", "instanceType": "Standard_ND96isr_H200_v5", "maxNodes": 2, "driver": "operator"},
        {"name": "off", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2, "fabric": "none"},
        {"name": "plain", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2}])
    warnings = [w for w in validate(base).warnings if "nvidia-peermem" in w]
    assert len(warnings) == 1 and warnings[0].startswith("gpuPools[0].driver: ")
    assert "driver: operator" in warnings[0]


# --- AKS agent pools ----------------------------------------------------------------------------------------------

def test_infiniband_pool_is_labelled_and_keeps_one_zone():
    plan = plan_stack("azure-prod", config_overrides={
        "gpu-platform:cluster": {"name": "ml-ib", "region": "eastus2", "azure": {"zones": ["1", "3"]}},
        **pools({"name": "h100", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2},
                {"name": "a100", "instanceType": "Standard_NC96ads_A100_v4", "maxNodes": 2, "workload": "inference"})})
    agent = {r.inputs["agentPoolName"]: r.inputs for r in plan.of_type(AGENT_POOL)}
    assert agent["h100"]["nodeLabels"]["gpu-platform.io/fabric"] == "infiniband"
    assert agent["h100"]["availabilityZones"] == ["1"]
    assert "gpu-platform.io/fabric" not in agent["a100"]["nodeLabels"]
    assert agent["a100"]["availabilityZones"] == ["1", "3"]
    # One scale set per pool: nothing about the fabric on the AgentPool itself besides label and zone.
    assert agent["h100"]["type"] == "VirtualMachineScaleSets"


def test_fabric_none_leaves_every_agent_pool_and_the_gpu_operator_as_before(prod):
    raw = read_stack_config(PROJECT_ROOT / "stacks" / "Pulumi.azure-prod.yaml")["gpu-platform:gpuPools"]
    off = plan_stack("azure-prod", config_overrides={"gpu-platform:gpuPools": [{**p, "fabric": "none"} for p in raw]})

    def keys(plan):
        return {r.name: {path: json.dumps(value_at(r.inputs, path)) for path in replace_paths(AGENT_POOL)}
                for r in plan.of_type(AGENT_POOL)}
    assert keys(off) == keys(prod)  # auto turns InfiniBand on in place: no replace-triggering input moves
    changed = {r.name for r in prod.of_type(AGENT_POOL)
               if r.inputs != next(o for o in off.of_type(AGENT_POOL) if o.name == r.name).inputs}
    assert changed == {"ml-prod-aks-h100-train-agentpool"}
    assert not off.of_type(POLICY) and not [r for r in off.of_type(RELEASE) if r.inputs["chart"] == "network-operator"]
    gpu_release = lambda plan: next(r for r in plan.of_type(RELEASE) if r.inputs["chart"] == "gpu-operator")  # noqa: E731
    assert gpu_release(off).inputs == gpu_release(prod).inputs


# --- Network Operator and NicClusterPolicy ------------------------------------------------------------------------

def spot_ib_plan():
    return plan_stack("azure-prod", config_overrides=pools(
        {"name": "h100", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2, "capacityType": "spot",
         "taints": ["example.com/team=lab:NoExecute"]},
        {"name": "h200", "instanceType": "Standard_ND96isr_H200_v5", "maxNodes": 2, "driver": "operator"},
        {"name": "a100", "instanceType": "Standard_NC96ads_A100_v4", "maxNodes": 2,
         "taints": ["example.com/other=x:NoSchedule"]}))


@pytest.fixture(scope="module")
def ib():
    return spot_ib_plan()


def test_network_operator_release_is_pinned_in_a_privileged_namespace(ib):
    release = one(ib, RELEASE, "fabric-device-plugins-infiniband-release").inputs
    assert (release["chart"], release["version"], release["namespace"]) == ("network-operator", "26.4.1",
                                                                           "network-operator")
    assert release["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    # One Node Feature Discovery in the cluster: the GPU Operator's, which labels PCI class 02 vendors.
    assert release["values"] == {"nfd": {"enabled": False}, "operator": {"tolerations": [
        {"key": "CriticalAddonsOnly", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"}]}}
    assert "02" in chart_values()["node-feature-discovery"]["worker"]["config"]["sources"]["pci"][
        "deviceClassWhitelist"]
    namespace = one(ib, NAMESPACE, "fabric-device-plugins-infiniband-namespace").inputs
    assert namespace["metadata"] == {"name": "network-operator",
                                     "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}
    kubernetes_validate.validate({"apiVersion": "v1", "kind": "Namespace", **namespace}, DEFAULT_KUBERNETES_VERSION,
                                 strict=True)
    assert len([r for r in ib.of_type(RELEASE) if r.inputs["chart"] == "network-operator"]) == 1


def test_nic_cluster_policy_runs_driver_and_plugin_on_infiniband_pools_only(ib):
    policy = one(ib, POLICY).inputs
    assert (policy["apiVersion"], policy["kind"], policy["metadata"]) == (
        "mellanox.com/v1alpha1", "NicClusterPolicy", {"name": "nic-cluster-policy"})
    spec = policy["spec"]
    assert spec["nodeAffinity"] == {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu-platform.io/fabric", "operator": "In", "values": ["infiniband"]}]}]}}
    # Every taint of both InfiniBand pools (GPU, AKS sku=gpu, both spot taints, the team's), none of the A100 pool's.
    assert {(t["key"], t["effect"]) for t in spec["tolerations"]} == {
        ("nvidia.com/gpu", "NoSchedule"), ("sku", "NoSchedule"), ("gpu-platform.io/spot", "NoSchedule"),
        ("kubernetes.azure.com/scalesetpriority", "NoSchedule"), ("example.com/team", "NoExecute")}
    assert all(t["operator"] == "Exists" for t in spec["tolerations"])
    labelled = {r.inputs["agentPoolName"] for r in ib.of_type(AGENT_POOL)
                if r.inputs["nodeLabels"].get("gpu-platform.io/fabric") == "infiniband"}
    assert labelled == {"h100", "h200"}


def test_nic_cluster_policy_fits_the_crd(ib):
    spec = one(ib, POLICY).inputs["spec"]
    assert set(spec) <= SPEC_SECTIONS
    ofed, plugin = spec["ofedDriver"], spec["sriovDevicePlugin"]
    assert set(ofed) <= OFED_FIELDS and set(plugin) <= PLUGIN_FIELDS
    assert set(ofed["upgradePolicy"]) <= UPGRADE_FIELDS and set(ofed["upgradePolicy"]["drain"]) <= DRAIN_FIELDS
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert set(ofed[probe]) == {"initialDelaySeconds", "periodSeconds"}  # both required by the CRD
    for section in (ofed, plugin):
        for field, pattern in IMAGE_PATTERNS.items():
            assert re.fullmatch(pattern, section[field]), (field, section[field])
    assert all(set(e) == {"name", "value"} for e in ofed["env"])
    assert isinstance(plugin["config"], str)  # the CRD takes the plugin's JSON as a string


def test_sriov_plugin_advertises_each_infiniband_nic_as_the_fabric_resource(ib):
    config = json.loads(one(ib, POLICY).inputs["spec"]["sriovDevicePlugin"]["config"])
    (resource,) = config["resourceList"]
    assert f"{resource['resourcePrefix']}/{resource['resourceName']}" == IB.resource == "rdma/ib"
    # Mellanox NICs in InfiniBand mode with their RDMA devices: not the Ethernet accelerated-networking NIC.
    assert resource["selectors"] == {"vendors": ["15b3"], "linkTypes": ["infiniband"], "isRdma": True}


def test_network_operator_waits_for_nothing_on_pools_at_zero_but_the_policy_follows_its_crd(ib):
    release = one(ib, RELEASE, "fabric-device-plugins-infiniband-release")
    policy = one(ib, POLICY)
    assert release.urn in policy.options["dependsOn"]
    component = one(ib, "gpu-platform:gpu:NetworkOperator")
    assert policy.parent == release.parent == component.urn


# --- GPU Operator: who loads nvidia-peermem ------------------------------------------------------------------------

@pytest.mark.parametrize("driver, rdma", [("operator", {"enabled": True}), ("managed", None)])
def test_gpu_operator_loads_peermem_only_where_it_owns_an_infiniband_pools_driver(driver, rdma):
    config = validate(raw_config("azure", [
        {"name": "ib", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2, "driver": driver},
        {"name": "nc", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2,
         "driver": "managed" if driver == "operator" else "operator"}]))
    values = operator_values(config, PROFILES["azure"])
    assert values["driver"]["enabled"] is True and values["driver"].get("rdma") == rdma


def test_operator_owned_pools_without_infiniband_get_no_rdma():
    config = validate(raw_config("azure", [
        {"name": "ib", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2, "driver": "operator",
         "fabric": "none"}]))
    assert "rdma" not in operator_values(config, PROFILES["azure"])["driver"]


def test_driver_rdma_is_a_chart_key_and_a_cluster_policy_field():
    config = validate(raw_config("azure", [
        {"name": "ib", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2, "driver": "operator"}]))
    values = operator_values(config, PROFILES["azure"])
    paths = dict(key_paths(values, chart_values()))
    assert paths[("driver", "rdma", "enabled")] is False  # the chart's default, which we turn on
    cluster_policy_validator().validate(cluster_policy_view(values))


# --- nccl-test ----------------------------------------------------------------------------------------------------

def test_nccl_test_on_an_infiniband_pool_takes_every_nic_with_nccl_on_ib(capsys):
    assert main(["nccl-test", "azure-prod", "--pool", "h100-train", "--nodes", "3"]) == 0
    objects = list(yaml.safe_load_all(capsys.readouterr().out))
    for obj in objects:
        kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)
    job = objects[-1]
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == container["resources"]["requests"] == {
        "nvidia.com/gpu": "8", "rdma/ib": "8"}
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == dict(IB.env) and env["NCCL_NET"] == "IB"
    command = container["command"][2]
    assert "-np 24 " in command and all(f"-x {name}" in command for name in env)
    config = validate_stack("azure-prod")[3]
    pool = next(p for p in config.gpu_pools if p.name == "h100-train")
    assert pod["tolerations"] == [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
                                  for t in pool_taints(pool, PROFILES["azure"])]
    # Team namespaces enforce Pod Security baseline: no added capabilities, no privilege.
    assert "securityContext" not in container


def test_nccl_test_off_the_fabric_measures_tcp(capsys, tmp_path):
    raw = read_stack_config(PROJECT_ROOT / "stacks" / "Pulumi.azure-prod.yaml")
    raw["gpu-platform:gpuPools"][0]["fabric"] = "none"
    stack = tmp_path / "Pulumi.azure-prod.yaml"
    stack.write_text(yaml.safe_dump({"config": raw}))
    assert main(["nccl-test", "azure-prod", "--file", str(stack), "--pool", "h100-train"]) == 0
    (container,) = list(yaml.safe_load_all(capsys.readouterr().out))[-1]["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert {e["name"]: e["value"] for e in container["env"]}["NCCL_NET"] == "Socket"


def test_kueue_admits_jobs_asking_for_nics_by_leaving_the_fabric_resource_to_the_kubelet(prod):
    from components.scheduling.kueue.component import manager_config
    assert "rdma/ib" in manager_config(prod.config)["resources"]["excludeResourcePrefixes"]
    off = validate(raw_config("azure", [
        {"name": "ib", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2, "fabric": "none"}]))
    assert "rdma/ib" not in manager_config(off)["resources"]["excludeResourcePrefixes"]


def test_operator_owned_pools_off_the_fabric_are_refused_next_to_an_operator_owned_infiniband_pool():
    raw = raw_config("azure", [
        {"name": "ib", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2, "driver": "operator"},
        {"name": "nc", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2, "driver": "operator"},
        {"name": "ib-off", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2, "driver": "operator",
         "fabric": "none"},
        {"name": "nv", "instanceType": "Standard_NV36ads_A10_v5", "maxNodes": 2}])
    with pytest.raises(ConfigError) as exc:
        validate(raw)
    problems = {p.path: p.message for p in exc.value.problems}
    assert set(problems) == {"gpuPools[1].driver", "gpuPools[2].driver"}
    assert "driver.rdma" in problems["gpuPools[1].driver"] and "allowed here: managed" in problems["gpuPools[1].driver"]
    raw["gpuPools"][0]["driver"] = "managed"  # no operator-owned InfiniBand pool: no cluster-wide RDMA
    assert validate(raw).gpu_pools[1].driver == "operator"


# --- locked memory ------------------------------------------------------------------------------------------------

def test_memlock_daemonset_targets_infiniband_nodes_and_is_valid_kubernetes(ib):
    daemonset = one(ib, "kubernetes:apps/v1:DaemonSet", "fabric-device-plugins-infiniband-memlock").inputs
    kubernetes_validate.validate({"apiVersion": "apps/v1", "kind": "DaemonSet", **daemonset},
                                 DEFAULT_KUBERNETES_VERSION, strict=True)
    assert daemonset["metadata"]["namespace"] == "network-operator"  # the privileged namespace, not a team's
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu-platform.io/fabric": "infiniband"}
    assert pod["tolerations"] == one(ib, POLICY).inputs["spec"]["tolerations"]
    assert pod["hostPID"] is True and pod["volumes"] == [{"name": "host", "hostPath": {"path": "/",
                                                                                      "type": "Directory"}}]
    (init,) = pod["initContainers"]
    assert "@sha256:" in init["image"] and init["securityContext"] == {"privileged": True}


def test_memlock_script_restarts_containerd_once_per_drop_in(tmp_path):
    import subprocess

    from components.clouds.azure.fabric import HOST, MEMLOCK_DROP_IN, MEMLOCK_SCRIPT
    script = MEMLOCK_SCRIPT.replace("/host", str(tmp_path)).replace(HOST, "echo")

    def run() -> str:
        return subprocess.run(["sh", "-c", script], check=True, capture_output=True, text=True).stdout
    assert run() == "systemctl daemon-reload\nsystemctl restart containerd\n"
    drop_in = tmp_path / MEMLOCK_DROP_IN.lstrip("/")
    assert drop_in.read_text() == "[Service]\nLimitMEMLOCK=infinity\n"
    assert run() == ""  # already in place: containerd is left alone
    drop_in.write_text("[Service]\nLimitMEMLOCK=64K\n")
    assert run().endswith("systemctl restart containerd\n")
