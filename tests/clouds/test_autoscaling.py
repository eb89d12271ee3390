"""The Cluster Autoscaler layer: pinned chart, GPU-safe flags, spot-first expander, cloud values merged (EKS, OKE),
nothing on AKS/GKE; and the capacity/spot validation it relies on."""
from __future__ import annotations

import dataclasses
import re

import kubernetes_validate
import pulumi
import pytest
import yaml

from components.clouds.facts import DEFAULT_KUBERNETES_VERSION
from components.provisioning import layer
from components.provisioning.cluster_autoscaler.priorities import expander_priorities
from components.provisioning.cluster_autoscaler.values import (
    CHART_VERSION, deep_merge, gpu_utilization_threshold, shared_values,
)
from components.clouds import cluster_class
from components.clouds.base import PlatformCluster
from components.config import ConfigError, validate
from components.config.capacity import GPU_RESOURCE, mig_strategy, pool_units
from components.context import Context
from gpu_platform.engine.plan import read_stack_config

from support.paths import ROOT, STACKS
from support.plans import shared_plan

RELEASE = "kubernetes:helm.sh/v3:Release"
GPU_FLAGS = {
    "scale-down-unneeded-time": "15m",
    "scale-down-delay-after-add": "15m",
    "skip-nodes-with-local-storage": False,
    "balance-similar-node-groups": True,
    "expander": "priority,least-waste",
    "ignore-daemonsets-utilization": True,
    "max-node-provision-time": "30m",
}


@pytest.fixture(scope="module")
def plans():
    return {stack: shared_plan(stack) for stack in ("oci-prod", "aws-prod", "azure-prod", "gcp-dev")}


def stack_config(stack: str):
    raw = read_stack_config(ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    return validate({k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("gpu-platform:")})


def release(plan):
    found = [r for r in plan.of_type(RELEASE) if r.inputs["chart"] == "cluster-autoscaler"]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("stack", ["oci-prod", "aws-prod"])
def test_release_is_pinned_in_kube_system(plans, stack):
    rel = release(plans[stack])
    assert rel.inputs["version"] == "9.59.0" == CHART_VERSION
    assert rel.inputs["repositoryOpts"] == {"repo": "https://kubernetes.github.io/autoscaler"}
    assert rel.inputs["namespace"] == "kube-system"
    assert rel.inputs["name"] == "cluster-autoscaler"
    assert rel.inputs["values"]["image"] == {"repository": "registry.k8s.io/autoscaling/cluster-autoscaler",
                                             "tag": "v1.35.2"}  # the stacks' Kubernetes 1.35
    component = next(r for r in plans[stack].resources if r.urn == rel.parent)
    assert component.type == "gpu-platform:autoscaling:ClusterAutoscaler"


@pytest.mark.parametrize("stack", ["oci-prod", "aws-prod"])
def test_scale_down_only_removes_empty_gpu_nodes(plans, stack):
    values = release(plans[stack]).inputs["values"]
    args = values["extraArgs"]
    assert {k: args[k] for k in GPU_FLAGS} == GPU_FLAGS
    # Runs on the system pool: tolerates its taint and no GPU or spot taint.
    assert values["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists", "effect": "NoSchedule"}]
    assert values["priorityClassName"] == "system-cluster-critical"
    # At most half of one GPU's share of an 8-GPU node (the smallest GPU count among these pools' nodes).
    assert 0 < args["scale-down-gpu-utilization-threshold"] <= 0.5 / 8


def test_gpu_threshold_is_below_one_pod_on_the_largest_gpu_node(plans):
    for stack in ("oci-prod", "aws-prod"):
        config = stack_config(stack)
        threshold = release(plans[stack]).inputs["values"]["extraArgs"]["scale-down-gpu-utilization-threshold"]
        strategy = mig_strategy(config.gpu_pools)
        for pool in config.gpu_pools:
            units = pool_units(pool, strategy).get(GPU_RESOURCE)
            if units:
                assert 1 / units > threshold, (stack, pool.name)
    # aws-prod's largest nvidia.com/gpu node is a p4de with 8 GPUs x 7 single-strategy MIG slices.
    assert release(plans["aws-prod"]).inputs["values"]["extraArgs"][
        "scale-down-gpu-utilization-threshold"] == round(0.5 / 56, 6)
    assert release(plans["oci-prod"]).inputs["values"]["extraArgs"]["scale-down-gpu-utilization-threshold"] == 0.0625


def test_eks_values_merge_cloud_and_shared(plans):
    values = release(plans["aws-prod"]).inputs["values"]
    assert values["cloudProvider"] == "aws"
    assert values["autoDiscovery"] == {"clusterName": "ml-prod"}
    # Deep merge: the shared service account name and the cloud's IRSA annotation both survive.
    account = values["rbac"]["serviceAccount"]
    assert account["name"] == "cluster-autoscaler"
    assert account["annotations"]["eks.amazonaws.com/role-arn"].endswith(":role/ml-prod-cluster-autoscaler")
    # Exact ASG names (the mock names them eks-<resource name>-asg): spot l4-notebooks before on-demand pools.
    assert values["expanderPriorities"] == {
        "20": ["^eks\\-ml\\-prod\\-l4\\-notebooks\\-nodegroup\\-asg$"],
        "10": ["^eks\\-ml\\-prod\\-h100\\-train\\-nodegroup\\-asg$", "^eks\\-ml\\-prod\\-a100\\-infer\\-nodegroup\\-asg$"],
        "1": [".*"],
    }


def test_oke_values_merge_cloud_and_shared(plans):
    values = release(plans["oci-prod"]).inputs["values"]
    assert values["cloudProvider"] == "oci"
    args = values["extraArgs"]
    assert args["balancing-ignore-label_1"] == "displayName" and args["expander"] == "priority,least-waste"
    assert values["extraEnv"]["OCI_USE_WORKLOAD_IDENTITY"] == "true"
    priorities = values["expanderPriorities"]
    assert list(priorities) == ["1", "10", "20"]  # plan JSON sorts keys; the chart reads them as numbers
    assert max(priorities, key=int) == "20" and len(priorities["20"]) == 1
    assert all(p.startswith("^") and p.endswith("$") for tier in ("10", "20") for p in priorities[tier])
    assert values["rbac"] == {"serviceAccount": {"name": "cluster-autoscaler"}}


@pytest.mark.parametrize("stack", ["azure-prod", "gcp-dev"])
def test_no_autoscaler_where_pools_scale_natively(plans, stack):
    plan = plans[stack]
    assert not [r for r in plan.of_type(RELEASE) if r.inputs["chart"] == "cluster-autoscaler"]
    assert not plan.of_type("gpu-platform:autoscaling:ClusterAutoscaler")


@pytest.mark.parametrize("cloud, native", [("aws", False), ("azure", True), ("gcp", True), ("oci", False)])
def test_which_clouds_ask_for_the_autoscaler(cloud, native):
    overridden = cluster_class(cloud).autoscaler_values is not PlatformCluster.autoscaler_values
    assert overridden is not native


def test_layer_installs_nothing_when_the_cluster_returns_none(raw):
    class Native:
        def node_provisioner(self):
            return None

        def autoscaler_values(self):
            return None

        def managed_expander_priorities(self):
            return None

    ctx = Context(config=validate(raw), cluster=Native())
    layer.install(ctx)
    assert ctx.handles == {}


# --- pure pieces ---------------------------------------------------------------------------------------------------

def test_expander_priorities_prefer_reserved_then_spot_then_on_demand(raw):
    raw["gpuPools"] = [
        {"name": "h100-od", "instanceType": "p5.48xlarge", "maxNodes": 2},
        {"name": "h100-spot", "instanceType": "p5.48xlarge", "maxNodes": 2, "capacityType": "spot"},
        {"name": "l4-spot", "instanceType": "g6.xlarge", "maxNodes": 2, "capacityType": "spot"},
    ]
    raw["teams"] = [{"name": "research", "quotas": {"h100-od": 8}}]
    config = validate(raw)
    by_name = lambda pool: pool.name  # noqa: E731
    assert expander_priorities(config.gpu_pools, by_name) == {
        "20": ["h100-spot", "l4-spot"], "10": ["h100-od"], "1": [".*"]}
    reserved = dataclasses.replace(config.gpu_pools[0], capacity_type="reserved")
    assert list(expander_priorities([reserved, *config.gpu_pools[1:]], by_name)) == ["30", "20", "1"]


def test_deep_merge_merges_mappings_and_replaces_the_rest():
    base = {"a": {"x": 1, "y": [1]}, "b": 1, "c": {"k": "v"}}
    over = {"a": {"y": [2], "z": 3}, "b": {"now": "dict"}, "d": None}
    assert deep_merge(base, over) == {"a": {"x": 1, "y": [2], "z": 3}, "b": {"now": "dict"}, "c": {"k": "v"},
                                      "d": None}
    assert base == {"a": {"x": 1, "y": [1]}, "b": 1, "c": {"k": "v"}}


@pytest.mark.parametrize("sharing, units", [
    ({"mode": "none"}, 8),
    ({"mode": "time-slicing", "replicas": 4}, 32),
    ({"mode": "mig", "migProfile": "all-1g.10gb"}, 56),
])
def test_threshold_follows_the_densest_pool(raw, sharing, units):
    raw["gpuPools"] = [{"name": "h100", "instanceType": "p5.48xlarge", "maxNodes": 2, "sharing": sharing}]
    raw["teams"] = [{"name": "research", "quotas": {"h100": 8}}]
    assert gpu_utilization_threshold(validate(raw)) == round(0.5 / units, 6)


def test_shared_values_are_plain_and_complete(raw):
    values = shared_values(validate(raw))
    assert set(values) == {"fullnameOverride", "image", "rbac", "priorityClassName", "tolerations", "resources",
                           "extraArgs"}
    assert not any(isinstance(v, pulumi.Output) for v in values["extraArgs"].values())


# --- validation the autoscaler relies on ----------------------------------------------------------------------------

def test_quota_sum_above_pool_capacity_is_an_error_in_production(raw):
    raw["teams"] = [{"name": "research", "quotas": {"h100-train": 20}},
                    {"name": "serving", "quotas": {"h100-train": 20, "a100-infer": 56}}]
    with pytest.raises(ConfigError) as info:
        validate(raw)
    found = {p.path: p.message for p in info.value.problems}
    message = found["gpuPools[0].maxNodes"]
    assert "'h100-train'" in message and "40" in message and "32" in message


def test_quota_sum_above_pool_capacity_is_a_warning_in_development(raw):
    raw["environment"] = "development"
    raw["teams"] = [{"name": "research", "quotas": {"h100-train": 20}},
                    {"name": "serving", "quotas": {"h100-train": 20, "a100-infer": 56}}]
    warnings = validate(raw).warnings
    hit = [w for w in warnings if w.startswith("gpuPools[0].maxNodes:")]
    assert len(hit) == 1 and "'h100-train'" in hit[0] and "40" in hit[0] and "32" in hit[0]


def test_spot_pool_kept_warm_in_production_warns_but_not_in_development(raw):
    raw["gpuPools"][0].update(capacityType="spot", minNodes=1)
    warnings = validate(raw).warnings
    assert any(w.startswith("gpuPools[0].minNodes:") and "spot pool 'h100-train'" in w for w in warnings)
    raw["environment"] = "development"
    assert not any("spot pool" in w for w in validate(raw).warnings)
    raw["environment"] = "production"
    raw["gpuPools"][0]["minNodes"] = 0
    assert not any("spot pool" in w for w in validate(raw).warnings)


def test_example_stacks_scale_from_zero_on_every_cloud_and_use_spot_on_two():
    zero, spot = set(), set()
    for stack in STACKS:
        config = stack_config(stack)
        zero |= {config.cloud for p in config.gpu_pools if p.min_nodes == 0}
        spot |= {config.cloud for p in config.gpu_pools if p.capacity_type == "spot"}
    assert zero == {"aws", "azure", "gcp", "oci"}
    assert len(spot) >= 2


def test_aks_managed_autoscaler_prefers_spot_through_the_priority_expander_configmap(plans):
    plan = plans["azure-prod"]
    (config_map,) = [r for r in plan.of_type("kubernetes:core/v1:ConfigMap")
                     if r.inputs["metadata"]["name"] == "cluster-autoscaler-priority-expander"]
    assert config_map.inputs["metadata"]["namespace"] == "kube-system"
    kubernetes_validate.validate(config_map.inputs, DEFAULT_KUBERNETES_VERSION, strict=True)
    tiers = yaml.safe_load(config_map.inputs["data"]["priorities"])
    assert tiers == {20: ["^aks-a10spot-[0-9]+-vmss$"],
                     10: ["^aks-h100train-[0-9]+-vmss$", "^aks-a100infer-[0-9]+-vmss$"],
                     1: [".*"]}
    # The pattern of one pool never matches another pool's scale set, even when one name prefixes the other.
    assert not re.match(tiers[10][0], "aks-h100train2-12345678-vmss")
    assert re.match(tiers[10][0], "aks-h100train-12345678-vmss")
    (cluster,) = plan.of_type("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["autoScalerProfile"]["expander"] == "priority"


def test_gke_gets_no_priority_configmap(plans):
    assert not plans["gcp-dev"].of_type("gpu-platform:autoscaling:ExpanderPriorities")
