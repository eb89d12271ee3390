"""OKE hardening: GPU boot volumes grown by cloud-init, OKE's own GPU plugin kept off, the autoscaler's IAM scoped to
its service account in this cluster, and authorized networks on the API endpoint."""
from __future__ import annotations

import base64
import copy
import json

import pytest

from components.config.errors import ConfigError
from gpu_platform.engine import plan_stack
from gpu_platform.engine.mocks import fake_id
from gpu_platform.engine.plan import read_stack_config

from support.paths import ROOT
from support.plans import one, plan_fixture

NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
GPU_POOL = "gpu-platform:cluster:GpuNodePool"
ADDON = "oci:ContainerEngine/addon:Addon"
NSG = "oci:Core/networkSecurityGroup:NetworkSecurityGroup"
NSG_RULE = "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule"
PROD_CLUSTER = read_stack_config(ROOT / "stacks" / "Pulumi.oci-prod.yaml")["gpu-platform:cluster"]


prod = plan_fixture("oci-prod")
public_authorized = plan_fixture(
    "oci-prod", cluster={"privateEndpoint": False, "authorizedNetworks": ["203.0.113.0/24", "198.51.100.0/25"]})


def gpu_node_pools(plan):
    components = {r.urn for r in plan.of_type(GPU_POOL)}
    return [r for r in plan.of_type(NODE_POOL) if r.parent in components]


# --- boot volume -------------------------------------------------------------------------------------------------

def test_gpu_nodes_get_a_200_gb_boot_volume_and_cloud_init_grows_into_it(prod):
    pools = gpu_node_pools(prod)
    assert len(pools) == 4
    for pool in pools:
        assert pool.inputs["nodeSourceDetails"]["bootVolumeSizeInGbs"] == "200", pool.name
        lines = base64.b64decode(pool.inputs["nodeMetadata"]["user_data"]).decode().splitlines()
        grow = lines.index("/usr/libexec/oci-growfs -y")
        init = next(i for i, line in enumerate(lines) if "oke_init_script" in line)
        assert lines[:2] == ["#!/bin/bash", "set -euo pipefail"] and 2 == grow < init, lines
    # The system pool keeps the default size; its cloud-init runs OKE's own init script, registering the system
    # pool's taint (OKE node pools have no taint field).
    system = one(prod, NODE_POOL, "ml-prod-oke-system")
    assert "bootVolumeSizeInGbs" not in system.inputs["nodeSourceDetails"]
    lines = base64.b64decode(system.inputs["nodeMetadata"]["user_data"]).decode().splitlines()
    assert lines[-1] == ('bash /var/run/oke-init.sh --kubelet-extra-args '
                         '"--register-with-taints=CriticalAddonsOnly=true:NoSchedule"'), lines


# --- OKE's NVIDIA GPU plugin add-on ---------------------------------------------------------------------------------

def test_okes_nvidia_gpu_plugin_is_taken_over_and_runs_on_no_node(prod):
    (addon,) = prod.of_type(ADDON)
    cluster = one(prod, "oci:ContainerEngine/cluster:Cluster", "ml-prod-oke-cluster")
    assert addon.inputs["addonName"] == "NvidiaGpuPlugin"
    assert addon.inputs["clusterId"] == fake_id(cluster.type, cluster.name)
    assert addon.inputs["overrideExisting"] is True and addon.inputs["removeAddonResourcesOnDelete"] is True
    (config,) = addon.inputs["configurations"]
    assert config["key"] == "nodeSelectors"
    selector = json.loads(config["value"])
    # No node pool ever carries the selected label, so the plugin's DaemonSet schedules nowhere.
    for pool in prod.of_type(NODE_POOL):
        labels = {label["key"]: label["value"] for label in pool.inputs.get("initialNodeLabels", [])}
        assert not set(selector.items()) & set(labels.items()), pool.name
    for pool in gpu_node_pools(prod):
        assert addon.urn in pool.options["dependsOn"], pool.name


def test_the_gpu_operator_serves_oke_gpus_with_its_own_device_plugin(prod):
    values = one(prod, "kubernetes:helm.sh/v3:Release", "gpu-operator-release").inputs["values"]
    assert values["devicePlugin"]["enabled"] is True


# --- autoscaler IAM ---------------------------------------------------------------------------------------------

def test_every_autoscaler_statement_is_conditioned_on_its_workload_principal(prod):
    (policy,) = prod.of_type("oci:Identity/policy:Policy")
    cluster = one(prod, "oci:ContainerEngine/cluster:Cluster", "ml-prod-oke-cluster")
    condition = (f"where ALL {{request.principal.type = 'workload', request.principal.namespace = 'kube-system', "
                 f"request.principal.service_account = 'cluster-autoscaler', "
                 f"request.principal.cluster_id = '{fake_id(cluster.type, cluster.name)}'}}")
    assert len(policy.inputs["statements"]) == 6
    assert all(s.startswith("Allow any-user to ") and s.endswith(condition) for s in policy.inputs["statements"])
    assert not any("dynamic-group" in s or "instance." in s for s in policy.inputs["statements"])


# --- authorized networks on the API endpoint --------------------------------------------------------------------

def test_authorized_networks_reach_a_public_endpoint_through_an_nsg_only(public_authorized):
    (nsg,) = public_authorized.of_type(NSG)
    rules = public_authorized.of_type(NSG_RULE)
    nsg_id = fake_id(nsg.type, nsg.name)
    assert sorted(r.inputs["source"] for r in rules) == ["198.51.100.0/25", "203.0.113.0/24"]
    for rule in rules:
        assert rule.inputs["networkSecurityGroupId"] == nsg_id
        assert (rule.inputs["direction"], rule.inputs["protocol"], rule.inputs["sourceType"]) == (
            "INGRESS", "6", "CIDR_BLOCK")
        assert rule.inputs["tcpOptions"] == {"destinationPortRange": {"min": 6443, "max": 6443}}
    endpoint = one(public_authorized, "oci:ContainerEngine/cluster:Cluster", "ml-prod-oke-cluster").inputs[
        "endpointConfig"]
    assert endpoint["isPublicIpEnabled"] is True and endpoint["nsgIds"] == [nsg_id]
    # Security lists and NSGs add up: the endpoint's list must no longer admit 6443 from anywhere.
    sources = [r["source"] for r in one(public_authorized, "oci:Core/securityList:SecurityList",
                                        "ml-prod-oke-network-endpoint-sl").inputs["ingressSecurityRules"]]
    assert "0.0.0.0/0" not in sources and sources == ["10.0.0.0/16", "10.0.0.0/16"]


def test_a_private_endpoint_gets_no_nsg(prod):
    assert not prod.of_type(NSG)
    assert "nsgIds" not in one(prod, "oci:ContainerEngine/cluster:Cluster", "ml-prod-oke-cluster").inputs[
        "endpointConfig"]


def test_a_public_endpoint_without_authorized_networks_is_refused_in_production():
    cluster = copy.deepcopy(PROD_CLUSTER)
    cluster["privateEndpoint"] = False
    with pytest.raises(ConfigError) as info:
        plan_stack("oci-prod", config_overrides={"gpu-platform:cluster": cluster})
    assert [p.path for p in info.value.problems] == ["cluster.authorizedNetworks"]
