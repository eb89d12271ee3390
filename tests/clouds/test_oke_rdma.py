"""gpuPools[].fabric: rdma on OKE: catalog facts, config (accepted, refused, auto), the cluster network of
self-managed nodes with its join policy, the shared RDMA device plugin, policies on those nodes, and nccl-test."""
from __future__ import annotations

import base64
import copy
import json
import shlex

import kubernetes_validate
import pytest
import yaml

from components.clouds.oci.catalog import INSTANCE_TYPES as OCI_TYPES
from components.clouds import PROFILES
from components.clouds.facts import DEFAULT_KUBERNETES_VERSION
from gpu_platform.cli import main
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import Plan
from gpu_platform.engine.replacements import replace_paths
from gpu_platform.policy.runner import evaluate
from policies import context
from policies.exemptions import Policy
from policies.rules import BY_ID
from policies.taints import kubelet_taints

from support.fabric import RDMA_IMAGE, TENANCY, errors as fabric_errors, one, raw_stack, rdma_overrides

CONFIG = "oci:Core/instanceConfiguration:InstanceConfiguration"
NETWORK = "oci:Core/clusterNetwork:ClusterNetwork"
NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
TODAY = "2026-12-03"


def errors(overrides) -> dict[str, str]:
    return fabric_errors(overrides, stack="oci-prod")


@pytest.fixture(scope="module")
def rdma():
    return plan_stack("oci-prod", config_overrides=rdma_overrides())


def launch(plan):
    return one(plan, CONFIG, "ml-prod-oke-h100-train-instance-config").inputs["instanceDetails"]["launchDetails"]


def script(plan) -> str:
    return base64.b64decode(launch(plan)["metadata"]["user_data"]).decode()


# --- catalog and profile ------------------------------------------------------------------------------------------

def test_catalog_rdma_nic_counts_follow_oracle_nccl_hca_lists():
    counts = {name: t.fabric_interfaces for name, t in OCI_TYPES.items() if t.fabric_interfaces}
    # Dual-port 200 Gb shapes have 16 RDMA ports, single-port 400 Gb shapes 8 (oci-hpc-oke docs).
    assert counts == {"BM.GPU4.8": 16, "BM.GPU.A100-v2.8": 16, "BM.GPU.H100.8": 16, "BM.GPU.H200.8": 8,
                      "BM.GPU.B200.8": 8}
    for name, count in counts.items():
        hcas = dict(OCI_TYPES[name].fabric_env)["NCCL_IB_HCA"]
        assert hcas.startswith("=") and len(set(hcas[1:].split(","))) == count
    # Their front-end VCN NICs (mlx5_2, mlx5_11 on H100) are not RDMA ports.
    assert not {"mlx5_2", "mlx5_11"} & set(dict(OCI_TYPES["BM.GPU.H100.8"].fabric_env)["NCCL_IB_HCA"][1:].split(","))
    assert OCI_TYPES["BM.GPU.L40S.4"].interconnect == "rdma" and OCI_TYPES["BM.GPU.L40S.4"].fabric_interfaces == 0


def test_oke_profile_offers_rdma_with_a_fixed_size():
    fabric = PROFILES["oci"].fabrics["rdma"]
    assert fabric.fixed_size and fabric.resource == "rdma/oci_rdma" and fabric.pod_units == 1
    assert set(fabric.required_extras) <= set(PROFILES["oci"].extras)
    config = json.loads(fabric.plugin_config)
    assert config["configList"] == [{"resourceName": "oci_rdma", "rdmaHcaMax": 64,
                                     "selectors": {"vendors": ["15b3"]}}]


# --- config -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("pool, expected", [
    ({"minNodes": 2, "maxNodes": 2}, "rdma"),  # auto, training, fixed size
    ({"minNodes": 2, "maxNodes": 2, "workload": "inference"}, "none"),
    ({"minNodes": 2, "maxNodes": 2, "fabric": "none"}, "none"),
    ({"minNodes": 2, "maxNodes": 2, "workload": "inference", "fabric": "rdma"}, "rdma"),
    ({"minNodes": 0, "maxNodes": 2}, "none"),  # auto never fixes an autoscaled pool's size
    ({"minNodes": 2, "maxNodes": 2, "instanceType": "BM.GPU.L40S.4"}, "none"),  # no NIC list in the catalog
])
def test_fabric_resolution(pool, expected):
    pool = {"name": "p", "instanceType": "BM.GPU.H200.8", **pool}
    plan = plan_stack("oci-prod", config_overrides=rdma_overrides(pool))
    assert plan.config.gpu_pools[0].fabric == expected


def test_auto_on_a_shared_autoscaled_pool_stays_none_silently():
    plan = plan_stack("oci-prod", config_overrides=rdma_overrides(
        {"name": "p", "instanceType": "BM.GPU.A100-v2.8", "minNodes": 1, "maxNodes": 2,
         "sharing": {"mode": "mig", "migProfile": "all-1g.10gb"}}))
    assert plan.config.gpu_pools[0].fabric == "none"
    assert not [w for w in plan.config.warnings if w.startswith("gpuPools")]


def test_auto_on_an_autoscaled_rdma_shape_warns_why():
    plan = plan_stack("oci-prod", config_overrides=rdma_overrides(
        {"name": "p", "instanceType": "BM.GPU.B200.8", "minNodes": 0, "maxNodes": 4}))
    assert plan.config.gpu_pools[0].fabric == "none"
    assert [w for w in plan.config.warnings if w.startswith("gpuPools[0].fabric: auto leaves BM.GPU.B200.8 without "
                                                            "rdma") and "minNodes must equal maxNodes" in w]


def test_refused_rdma_names_path_reason_and_allowed_values():
    problems = errors(rdma_overrides(
        {"name": "a", "instanceType": "BM.GPU.H100.8", "minNodes": 0, "maxNodes": 4, "fabric": "rdma"},
        {"name": "b", "instanceType": "VM.GPU.A10.2", "maxNodes": 1, "fabric": "rdma"},
        {"name": "c", "instanceType": "BM.GPU.L40S.4", "maxNodes": 1, "fabric": "rdma"},
        {"name": "d", "instanceType": "BM.GPU.H100.8", "minNodes": 1, "maxNodes": 1, "fabric": "efa"},
        {"name": "e", "instanceType": "BM.GPU.H100.8", "minNodes": 1, "maxNodes": 1, "fabric": "rdma",
         "capacityType": "spot"}))
    assert "minNodes must equal maxNodes (got 0 and 4)" in problems["gpuPools[0].fabric"]
    assert "Cluster Autoscaler does not resize" in problems["gpuPools[0].fabric"]
    assert "VM.GPU.A10.2 has no rdma" in problems["gpuPools[1].fabric"]
    assert "allowed for it: auto, none" in problems["gpuPools[1].fabric"]
    assert "no rdma interface count for BM.GPU.L40S.4" in problems["gpuPools[2].fabric"]
    assert "allowed: auto, none, rdma" in problems["gpuPools[3].fabric"]
    assert "cannot be capacityType spot" in problems["gpuPools[4].fabric"]


def test_rdma_needs_the_tenancy_and_an_rdma_image():
    problems = errors(rdma_overrides(
        {"name": "a", "instanceType": "BM.GPU.H100.8", "minNodes": 2, "maxNodes": 2, "fabric": "rdma"},
        extras=False))
    assert problems["gpuPools[0].fabric"].startswith("rdma needs cluster.oci.")
    overrides = rdma_overrides()
    overrides["gpu-platform:cluster"]["oci"]["tenancyId"] = "ocid1.compartment.oc1..x"
    assert "must be a tenancy OCID" in errors(overrides)["cluster.oci.tenancyId"]


# --- cloud resources ----------------------------------------------------------------------------------------------

def test_rdma_pool_is_a_cluster_network_not_a_node_pool(rdma):
    assert {r.name for r in rdma.of_type(NODE_POOL)} == {"ml-prod-oke-system", "ml-prod-oke-a10-infer-np"}
    network = one(rdma, NETWORK, "ml-prod-oke-h100-train-cluster-network")
    assert network.parent.endswith("GpuNodePool::ml-prod-oke-h100-train")
    (pool,) = network.inputs["instancePools"]
    assert pool["size"] == 2 and pool["instanceConfigurationId"].startswith("ml-prod-oke-h100-train-instance-config")
    placement = network.inputs["placementConfiguration"]
    assert placement == {"availabilityDomain": "Offline:US-ASHBURN-AD-1",
                         "primarySubnetId": launch(rdma)["createVnicDetails"]["subnetId"]}
    # Nodes join only once they may and once OKE's GPU plugin is pinned away.
    assert {d.rsplit("::", 1)[1] for d in network.options["dependsOn"]} >= {"ml-prod-oke-rdma-join",
                                                                           "ml-prod-oke-nvidia-gpu-plugin"}


def test_instance_configuration_launches_rdma_nodes_on_flannel_pods(rdma):
    details = launch(rdma)
    assert details["shape"] == "BM.GPU.H100.8" and details["availabilityDomain"] == "Offline:US-ASHBURN-AD-1"
    assert details["sourceDetails"] == {"sourceType": "image", "imageId": RDMA_IMAGE, "bootVolumeSizeInGbs": "200"}
    assert details["createVnicDetails"]["assignPublicIp"] is False
    plugins = {p["name"]: p["desiredState"] for p in details["agentConfig"]["pluginsConfigs"]}
    assert plugins == {"Compute HPC RDMA Authentication": "ENABLED", "Compute HPC RDMA Auto-Configuration": "ENABLED",
                       "Compute RDMA GPU Monitoring": "ENABLED"}
    metadata = details["metadata"]
    # Flannel: no VCN-native keys, the node's podCIDR comes from the control plane.
    assert not {"oke-native-pod-networking", "pod-subnets", "oke-max-pods"} & set(metadata)


def test_cloud_init_joins_with_exactly_the_pools_taints_and_labels(rdma):
    component = one(rdma, "gpu-platform:cluster:GpuNodePool", "ml-prod-oke-h100-train").inputs
    text = script(rdma)
    joins = [line.strip() for line in text.splitlines() if "oke bootstrap" in line or "oke-install.sh" in line]
    assert len(joins) == 2  # Oracle's Ubuntu images (`oke bootstrap`) and OKE images (oke-install.sh)
    wanted_taints = ",".join(f"{t['key']}={t['value']}:{t['effect']}" for t in component["taints"])
    assert wanted_taints == "nvidia.com/gpu=present:NoSchedule,example.com/team=genai:NoSchedule"
    wanted_labels = ",".join(f"{k}={v}" for k, v in sorted(component["labels"].items()))
    assert component["labels"]["gpu-platform.io/fabric"] == "rdma"
    for line in joins:
        args = shlex.split(line)
        extra = shlex.split(args[args.index("--kubelet-extra-args") + 1])
        assert extra == [f"--register-with-taints={wanted_taints}", f"--node-labels={wanted_labels}"]
    assert "--apiserver-endpoint" in joins[1] and "--kubelet-ca-cert" in joins[1]
    # Unlimited locked memory for RDMA pods, so none needs IPC_LOCK.
    assert 'memlock=-1:-1' in text


def test_join_policy_grants_only_joining_this_cluster(rdma):
    group = one(rdma, "oci:Identity/dynamicGroup:DynamicGroup", "ml-prod-oke-rdma-nodes").inputs
    compartment = raw_stack()["gpu-platform:cluster"]["oci"]["compartmentId"]
    assert group["compartmentId"] == TENANCY
    assert group["matchingRule"] == f"ALL {{instance.compartment.id = '{compartment}'}}"
    (statement,) = one(rdma, "oci:Identity/policy:Policy", "ml-prod-oke-rdma-join").inputs["statements"]
    assert statement.startswith(f"Allow dynamic-group ml-prod-oke-rdma-nodes to {{CLUSTER_JOIN}} in compartment id "
                                f"{compartment} where target.cluster.id = '")


def test_autoscaler_does_not_manage_the_cluster_network(rdma):
    release = next(r for r in rdma.of_type("kubernetes:helm.sh/v3:Release") if r.name == "cluster-autoscaler-release")
    groups = release.inputs["values"]["autoscalingGroups"]
    node_pools = {r.name: r for r in rdma.of_type(NODE_POOL)}
    assert len(groups) == len(node_pools) == 2


def test_no_rdma_pool_no_rdma_resources():
    plan = plan_stack("oci-prod")
    assert not plan.of_type(CONFIG) and not plan.of_type(NETWORK)
    assert not plan.of_type("oci:Identity/dynamicGroup:DynamicGroup")
    assert not plan.of_type("kubernetes:apps/v1:DaemonSet")


def test_replacement_facts_for_the_new_types():
    assert replace_paths(CONFIG) == ("instanceDetails", "instanceId", "source", "gmcConfigs")
    assert replace_paths(NETWORK) == ("placementConfiguration", "clusterConfiguration")
    assert replace_paths("oci:Identity/dynamicGroup:DynamicGroup") == ("compartmentId", "name")


def test_moving_the_cluster_network_to_another_ad_replaces_it(tmp_path, capsys):
    before = tmp_path / "before.json"
    stack = tmp_path / "stack.yaml"
    overrides = rdma_overrides()
    stack.write_text(yaml.safe_dump({"config": {**raw_stack(), **overrides}}))
    assert main(["plan", "oci-prod", "--file", str(stack), "--format", "json", "--out", str(before)]) == 0
    overrides["gpu-platform:cluster"]["oci"]["availabilityDomain"] = "Offline:US-ASHBURN-AD-2"
    stack.write_text(yaml.safe_dump({"config": {**raw_stack(), **overrides}}))
    capsys.readouterr()
    assert main(["plan", "oci-prod", "--file", str(stack), "--diff", str(before)]) == 1
    out = capsys.readouterr().out
    assert "ml-prod-oke-h100-train-cluster-network" in out and "placementConfiguration" in out


# --- device plugin ------------------------------------------------------------------------------------------------

def test_shared_rdma_plugin_runs_on_rdma_pools_only(rdma):
    daemonset = one(rdma, "kubernetes:apps/v1:DaemonSet", "fabric-device-plugins-rdma").inputs
    config_map = one(rdma, "kubernetes:core/v1:ConfigMap", "fabric-device-plugins-rdma-config").inputs
    for obj in (daemonset, config_map):
        kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu-platform.io/fabric": "rdma"}
    assert {(t["key"], t["effect"]) for t in pod["tolerations"]} == {("nvidia.com/gpu", "NoSchedule"),
                                                                      ("example.com/team", "NoSchedule")}
    assert pod["containers"][0]["image"] == "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.3"
    assert pod["volumes"][-1]["configMap"]["name"] == config_map["metadata"]["name"]
    assert json.loads(config_map["data"]["config.json"])["configList"][0]["resourceName"] == "oci_rdma"
    assert not [r for r in rdma.of_type("kubernetes:helm.sh/v3:Release") if "fabric" in r.name]


# --- policies -----------------------------------------------------------------------------------------------------

def test_policy_reads_the_cluster_networks_taints(rdma):
    plan = rdma.to_json()
    ctx = context.build("production", Policy(), TODAY)
    rules = [BY_ID["GPU001"], BY_ID["GPU008"]]
    assert evaluate(Plan.from_json(plan), ctx, rules).findings == []
    config = next(r for r in plan["resources"] if r["type"] == CONFIG)
    text = base64.b64decode(config["inputs"]["instanceDetails"]["launchDetails"]["metadata"]["user_data"]).decode()
    assert {str(t) for t in kubelet_taints(base64.b64encode(text.encode()).decode())} == {
        "nvidia.com/gpu=present:NoSchedule", "example.com/team=genai:NoSchedule"}
    # The taint only in the cloud-init, not on the component: GPU001 still finds the instance configuration.
    stripped = text.replace("nvidia.com/gpu=present:NoSchedule,", "")
    config["inputs"]["instanceDetails"]["launchDetails"]["metadata"]["user_data"] = base64.b64encode(
        stripped.encode()).decode()
    findings = evaluate(Plan.from_json(plan), ctx, [BY_ID["GPU001"]]).findings
    assert [f.resource for f in findings] == [config["name"]]


def test_gpu_instance_configuration_outside_the_component_is_a_gpu_pool(rdma):
    plan = rdma.to_json()
    config = next(r for r in plan["resources"] if r["type"] == CONFIG)
    stray = copy.deepcopy(config)
    stray["name"] = "stray-config"
    stray["urn"] = config["urn"].rsplit("::", 1)[0].split("$")[0] + "$" + CONFIG + "::stray-config"
    stray["parent"] = None
    stray["inputs"]["instanceDetails"]["launchDetails"]["metadata"]["user_data"] = base64.b64encode(
        b"#!/bin/bash\noke bootstrap\n").decode()
    plan["resources"].append(stray)
    ctx = context.build("production", Policy(), TODAY)
    findings = evaluate(Plan.from_json(plan), ctx, [BY_ID["GPU001"]]).findings
    assert [f.resource for f in findings] == ["stray-config"]
    assert "BM.GPU.H100.8" in findings[0].message


def test_check_passes_on_an_rdma_stack(tmp_path, capsys):
    stack = tmp_path / "stack.yaml"
    stack.write_text(yaml.safe_dump({"config": {**raw_stack(), **rdma_overrides()}}))
    assert main(["check", "oci-prod", "--file", str(stack)]) == 0


# --- nccl-test ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, hcas", [("BM.GPU.H100.8", 16), ("BM.GPU.H200.8", 8), ("BM.GPU.B200.8", 8)])
def test_nccl_test_on_rdma_requests_the_plugin_and_sets_oracle_env(shape, hcas, tmp_path, capsys):
    overrides = rdma_overrides({"name": "train", "instanceType": shape, "minNodes": 2, "maxNodes": 2,
                                "fabric": "rdma"})
    stack = tmp_path / "stack.yaml"
    stack.write_text(yaml.safe_dump({"config": {**raw_stack(), **overrides}}))
    assert main(["nccl-test", "oci-prod", "--file", str(stack), "--pool", "train"]) == 0
    objects = list(yaml.safe_load_all(capsys.readouterr().out))
    for obj in objects:
        kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)
    job = objects[-1]
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/oci_rdma": "1"}
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["NCCL_NET"] == "IB" and env["NCCL_IB_GID_INDEX"] == "3" and env["NCCL_IB_TC"] == "41"
    assert len(env["NCCL_IB_HCA"].lstrip("=").split(",")) == hcas
    assert "NCCL_NET" in container["command"][2] and "-x NCCL_IB_HCA" in container["command"][2]
    assert container["image"].startswith("iad.ocir.io/idxzjcdglx2s/nccl-tests:")
    assert "/workspace/nccl-tests/build/all_reduce_perf" in container["command"][2]
    # No host network, privilege or hostPath: team namespaces enforce Pod Security baseline.
    pod = job["spec"]["template"]["spec"]
    assert "hostNetwork" not in pod and "securityContext" not in container
    assert all("hostPath" not in v for v in pod["volumes"])


def test_rdma_keys_without_an_rdma_pool_warn_they_create_nothing():
    overrides = rdma_overrides({"name": "a10", "instanceType": "VM.GPU.A10.2", "maxNodes": 4})
    warnings = plan_stack("oci-prod", config_overrides=overrides).config.warnings
    assert [w for w in warnings if w.startswith("cluster.oci.tenancyId: is used only by fabric: rdma pools")]
    assert [w for w in warnings if w.startswith("cluster.oci.rdmaImageId: is used only by fabric: rdma pools")]


def test_gpu008_sees_a_taint_only_the_cluster_networks_cloud_init_adds(rdma):
    plan = rdma.to_json()
    config = next(r for r in plan["resources"] if r["type"] == CONFIG)
    metadata = config["inputs"]["instanceDetails"]["launchDetails"]["metadata"]
    text = base64.b64decode(metadata["user_data"]).decode().replace(
        "example.com/team=genai:NoSchedule", "example.com/team=genai:NoSchedule,example.com/hidden=x:NoSchedule")
    metadata["user_data"] = base64.b64encode(text.encode()).decode()
    ctx = context.build("production", Policy(), TODAY)
    findings = evaluate(Plan.from_json(plan), ctx, [BY_ID["GPU008"]]).findings
    assert findings and all("example.com/hidden" in f.message for f in findings)


def test_rdma_pool_labels_the_kubelet_may_not_set_are_refused():
    overrides = rdma_overrides({"name": "t", "instanceType": "BM.GPU.H100.8", "minNodes": 2, "maxNodes": 2,
                                "fabric": "rdma", "labels": {"node-role.kubernetes.io/gpu": "true",
                                                             "node.kubernetes.io/team": "a", "example.com/x": "y"}})
    problems = errors(overrides)
    assert "may not set kubernetes.io or k8s.io labels" in problems["gpuPools[0].labels.node-role.kubernetes.io/gpu"]
    assert [p for p in problems if p.startswith("gpuPools[0].labels")] == ["gpuPools[0].labels.node-role.kubernetes.io/gpu"]


def test_topology_on_a_bare_metal_pool_is_refused_on_either_fabric():
    """Only Oracle's node labeler writes the rdma.* levels, RDMA cluster network or not; the platform installs none."""
    pool = {"name": "t", "instanceType": "BM.GPU.H100.8", "minNodes": 2, "maxNodes": 2, "topology": True}
    for fabric in ("rdma", "none"):
        message = errors(rdma_overrides({**pool, "fabric": fabric}))["gpuPools[0].topology"]
        assert "oci-hpc-oke node labeler" in message and message.endswith("allowed: false"), fabric
