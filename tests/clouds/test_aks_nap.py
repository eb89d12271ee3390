"""AKS GPU pools made by node auto-provisioning (`cluster.azure.provisioner: nap`): config checks, the planned managed
cluster, NodePools (against the Karpenter v1 schema the EKS tests use) and AKSNodeClasses (against the
karpenter.azure.com CRD's fields), and the GPU policies reading them."""
from __future__ import annotations

import copy

import jsonschema
import pytest

from components.clouds.azure import karpenter
from components.config import ConfigError, validate
from components.config.model import Policy
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import read_stack_config
from gpu_platform.policy.runner import evaluate
from policies import context
from policies.rules import BY_ID
from policies.shapes import KARPENTER

from support.clouds import NODE_POOL_SPEC, assert_node_pools_follow, by_pool, integral
from support.paths import ROOT
from support.plans import plan_fixture
from support.policy import editable, rule_findings

NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
NODE_CLASS = "kubernetes:karpenter.azure.com/v1beta1:AKSNodeClass"
CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"
STACK = ROOT / "stacks" / "Pulumi.azure-prod.yaml"

# The parts of the AKSNodeClass CRD (karpenter.azure.com_aksnodeclasses.yaml of Azure/karpenter-provider-azure,
# commit 00ae1126, version v1beta1) these objects use, with its enums, bounds and the CEL rules on tag keys as
# patterns. Closed where every field we set is modelled, so a misspelt field fails.
NODE_CLASS_SPEC = {
    "type": "object", "additionalProperties": False, "properties": {
        "imageFamily": {"enum": ["Ubuntu", "Ubuntu2204", "Ubuntu2404", "AzureLinux"]},
        "gpu": {"type": "object", "additionalProperties": False, "properties": {
            "mode": {"enum": ["Driver", "None"]}}},
        "osDiskSizeGB": {"type": "integer", "minimum": 30, "maximum": 2048},
        "maxPods": {"type": "integer", "minimum": 10, "maximum": 250},
        "vnetSubnetID": {"type": "string"},
        "tags": {"type": "object",
                 "propertyNames": {"maxLength": 512, "pattern": r"^[^<>%&?\\]*$"},
                 "additionalProperties": {"type": "string", "maxLength": 256}}}}


def raw_stack():
    """azure-prod as a NAP stack can take it: a100-infer without MIG or standing nodes, its quota within reach and
    filling it (12 GPUs on 3 nodes), so no capacity is left unreachable (GPU019)."""
    raw = read_stack_config(STACK)
    cluster = raw["gpu-platform:cluster"]
    pools = copy.deepcopy(raw["gpu-platform:gpuPools"])
    pools[1] = {**pools[1], "minNodes": 0, "sharing": {"mode": "none"}}
    teams = copy.deepcopy(raw["gpu-platform:teams"])
    teams[1]["quotas"]["a100-infer"] = 12
    return {"gpu-platform:cluster": {**cluster, "azure": {**cluster["azure"], "provisioner": "nap", "zones": ["1", "2"]}},
            "gpu-platform:gpuPools": pools, "gpu-platform:teams": teams}


plan = plan_fixture("azure-prod", raw_stack())
default_plan = plan_fixture("azure-prod")


def config_of(overrides):
    raw = {k.split(":", 1)[1]: v for k, v in read_stack_config(STACK).items() if k.startswith("gpu-platform:")}
    raw.update({k.split(":", 1)[1]: v for k, v in overrides.items()})
    return raw


def errors(raw):
    with pytest.raises(ConfigError) as info:
        validate(raw)
    return {p.path: p.message for p in info.value.problems}


def only(plan, type_):
    (resource,) = plan.of_type(type_)
    return resource


# --- config -----------------------------------------------------------------------------------------------------

def test_default_is_autoscaled_agent_pools(default_plan):
    cluster = only(default_plan, CLUSTER)
    assert "nodeProvisioningProfile" not in cluster.inputs
    assert cluster.inputs["autoScalerProfile"]["expander"] == "priority"
    assert len(default_plan.of_type(AGENT_POOL)) == 3 and default_plan.of_type(NODE_POOL) == []


def test_explicit_pool_is_the_default(default_plan):
    cluster = read_stack_config(STACK)["gpu-platform:cluster"]
    explicit = plan_stack("azure-prod", config_overrides={"gpu-platform:cluster": {
        **cluster, "azure": {**cluster["azure"], "provisioner": "pool"}}})
    assert [(r.urn, r.inputs) for r in explicit.resources] == [(r.urn, r.inputs) for r in default_plan.resources]


def test_unknown_provisioner_is_refused():
    raw = config_of(raw_stack())
    raw["cluster"]["azure"]["provisioner"] = "karpenter"
    assert "allowed: pool, nap" in errors(raw)["cluster.azure.provisioner"]


def test_what_nap_cannot_make_is_refused_all_at_once():
    """The stock azure-prod under NAP: a100-infer has MIG and a standing node; a reserved pool on top."""
    raw = config_of({})
    raw["cluster"] = {**raw["cluster"], "azure": {**raw["cluster"]["azure"], "provisioner": "nap"}}
    raw["gpuPools"] = [{**raw["gpuPools"][0], "capacityType": "reserved"}, *raw["gpuPools"][1:]]
    found = errors(raw)
    assert "must be 0 with cluster.azure.provisioner: nap" in found["gpuPools[1].minNodes"]
    mig = found["gpuPools[1].sharing.mode"]
    assert "gpuInstanceProfile" in mig and "allowed: none, mps, time-slicing" in mig
    reserved = found["gpuPools[0].capacityType"]
    assert "'reserved' is not supported with cluster.azure.provisioner: nap" in reserved
    assert "priority expander" in reserved and reserved.endswith("allowed: on-demand, spot")


def test_infiniband_is_refused_when_asked_for_and_auto_resolves_to_none():
    raw = config_of(raw_stack())
    # h100-train (ND H100 v5, training) gets InfiniBand under `auto` on agent pools, none under NAP.
    assert raw["gpuPools"][0]["instanceType"] == "Standard_ND96isr_H100_v5" and "fabric" not in raw["gpuPools"][0]
    assert validate(raw).gpu_pools[0].fabric == "none"
    pool_stack = config_of({})
    assert validate(pool_stack).gpu_pools[0].fabric == "infiniband"
    raw["gpuPools"][0] = {**raw["gpuPools"][0], "fabric": "infiniband"}
    message = errors(raw)["gpuPools[0].fabric"]
    assert "infiniband is not available with cluster.azure.provisioner: nap" in message
    assert "scale set" in message and message.endswith("allowed: none")


def test_operator_driver_pools_skip_aks_driver_install():
    overrides = raw_stack()
    overrides["gpu-platform:gpuPools"][0] = {**overrides["gpu-platform:gpuPools"][0], "driver": "operator"}
    plan = plan_stack("azure-prod", config_overrides=overrides)
    classes = by_pool(plan, NODE_CLASS)
    assert classes["h100-train"].inputs["spec"]["gpu"] == {"mode": "None"}
    assert classes["a10-spot"].inputs["spec"]["gpu"] == {"mode": "Driver"}


# --- plan -------------------------------------------------------------------------------------------------------

def test_cluster_runs_nap_without_the_cluster_autoscaler(plan):
    cluster = only(plan, CLUSTER)
    assert cluster.inputs["nodeProvisioningProfile"] == {"mode": "Auto", "defaultNodePools": "None"}
    assert "autoScalerProfile" not in cluster.inputs
    (system,) = cluster.inputs["agentPoolProfiles"]
    assert integral(system["count"]) == 2 and system["enableAutoScaling"] is False
    assert "minCount" not in system and "maxCount" not in system
    assert cluster.options.get("ignoreChanges") in (None, [])
    assert plan.of_type(AGENT_POOL) == []
    assert not [r for r in plan.resources if r.type == "kubernetes:core/v1:ConfigMap"
                and r.inputs["metadata"]["name"] == "cluster-autoscaler-priority-expander"]
    charts = [r.inputs["chart"] for r in plan.of_type("kubernetes:helm.sh/v3:Release")]
    assert not [c for c in charts if "karpenter" in c or "autoscaler" in c]


def test_nap_network_is_supported(plan):
    cluster = only(plan, CLUSTER)
    assert karpenter.network_problems(cluster.inputs["networkProfile"], cluster.inputs["identity"]) == []
    bad = karpenter.network_problems({"networkPlugin": "kubenet", "networkPolicy": "calico",
                                            "loadBalancerSku": "standard"}, {"type": "None"})
    assert len(bad) == 3
    assert any("networkPlugin 'kubenet'" in p and "allowed: azure" in p for p in bad)
    assert any("networkPolicy 'calico'" in p for p in bad) and any("identity.type" in p for p in bad)


def test_objects_sit_under_their_pools_after_the_cluster(plan):
    karpenter = only(plan, "gpu-platform:autoscaling:Karpenter")
    assert karpenter.inputs == {"managedBy": "AKS node auto-provisioning"}
    assert_node_pools_follow(plan, NODE_POOL, "ml-prod-aks", "ml-prod-aks-aks", "ml-prod-aks-deployer-admin")


def test_node_pools_carry_the_pool(plan):
    pools = by_pool(plan, NODE_POOL)
    assert set(pools) == {"h100-train", "a100-infer", "a10-spot"}
    train, spot = pools["h100-train"].inputs["spec"], pools["a10-spot"].inputs["spec"]
    assert train["template"]["spec"]["requirements"] == [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["Standard_ND96isr_H100_v5"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eastus2-1", "eastus2-2"]}]
    assert spot["template"]["spec"]["requirements"][1]["values"] == ["spot"]
    assert train["template"]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "sku", "value": "gpu", "effect": "NoSchedule"}]
    assert {"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"} in \
        spot["template"]["spec"]["taints"]
    assert {"key": "gpu-platform.io/spot", "value": "true", "effect": "NoSchedule"} in spot["template"]["spec"]["taints"]
    # maxNodes x GPUs per node: ND96isr H100 v5 has 8 GPUs, maxNodes 4; NV36ads A10 v5 1 GPU, maxNodes 6.
    assert train["limits"] == {"nvidia.com/gpu": "32"} and spot["limits"] == {"nvidia.com/gpu": "6"}
    assert integral(spot["weight"]) > integral(train["weight"])
    for spec in (train, spot):
        assert spec["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "15m",
                                      "budgets": [{"nodes": "1"}]}
        template = spec["template"]
        assert template["spec"]["expireAfter"] == "Never"
        assert template["spec"]["nodeClassRef"] == {"group": "karpenter.azure.com", "kind": "AKSNodeClass",
                                                    "name": template["metadata"]["labels"]["gpu-platform.io/pool"]
                                                    .join(("gpu-", ""))}
        assert template["spec"]["startupTaints"] == [
            {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}]
        assert template["metadata"]["labels"]["kubernetes.azure.com/ebpf-dataplane"] == "cilium"


def test_without_zones_no_zone_requirement():
    overrides = raw_stack()
    del overrides["gpu-platform:cluster"]["azure"]["zones"]
    plan = plan_stack("azure-prod", config_overrides=overrides)
    for node_pool in plan.of_type(NODE_POOL):
        keys = [r["key"] for r in node_pool.inputs["spec"]["template"]["spec"]["requirements"]]
        assert keys == ["node.kubernetes.io/instance-type", "karpenter.sh/capacity-type"]


def test_node_classes(plan):
    classes = by_pool(plan, NODE_CLASS)
    assert set(classes) == {"h100-train", "a100-infer", "a10-spot"}
    for pool, node_class in classes.items():
        assert node_class.inputs["spec"] == {"imageFamily": "Ubuntu", "gpu": {"mode": "Driver"},
                                             "tags": {"gpu-platform-pool": pool}}


@pytest.mark.parametrize("type_, schema", [(NODE_POOL, NODE_POOL_SPEC), (NODE_CLASS, NODE_CLASS_SPEC)])
def test_objects_match_the_crd_schemas(plan, type_, schema):
    objects = plan.of_type(type_)
    assert len(objects) == 3
    for obj in objects:
        jsonschema.validate(integral(obj.inputs["spec"]), schema)


@pytest.mark.parametrize("change", [
    {"imageFamily": "Ubuntu2004"},  # not an image family NAP offers
    {"gpu": {"mode": "driver"}},  # the docs' lowercase spelling; the CRD's enum is Driver / None
    {"tags": {"gpu-platform.io/pool": "x", "a?b": "y"}},
    {"osDiskSizeGb": 256},  # the field is osDiskSizeGB
])
def test_node_class_schema_catches_bad_fields(plan, change):
    spec = {**integral(by_pool(plan, NODE_CLASS)["h100-train"].inputs["spec"]), **change}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(spec, NODE_CLASS_SPEC)


def test_label_restrictions_of_the_crd_hold(plan):
    """The NodePool CRD's CEL rules on template labels: no kubernetes.io (outside node.kubernetes.io), k8s.io or
    karpenter.sh domains; kubernetes.azure.com is none of them."""
    for node_pool in plan.of_type(NODE_POOL):
        for key in node_pool.inputs["spec"]["template"]["metadata"]["labels"]:
            domain = key.split("/", 1)[0] if "/" in key else ""
            assert not (domain.endswith("kubernetes.io") and not domain.endswith("node.kubernetes.io")), key
            assert not domain.endswith("k8s.io") and not domain.endswith("karpenter.sh"), key


# --- policies ---------------------------------------------------------------------------------------------------

@pytest.fixture
def mutable(plan):
    """A copy of the NAP plan to change one field in."""
    return editable(plan)


def findings(plan, rule):
    return rule_findings(plan, rule, "production")


def test_every_rule_passes_on_the_nap_stack(plan):
    report = evaluate(plan, context.build("production", Policy()), list(BY_ID.values()))
    assert [(f.rule, f.resource, f.message) for f in report.findings] == []


def test_gpu001_names_an_aks_node_pool_without_the_gpu_taint(mutable):
    target = by_pool(mutable, NODE_POOL)["h100-train"]
    spec = target.inputs["spec"]["template"]["spec"]
    spec["taints"] = [t for t in spec["taints"] if t["key"] != "nvidia.com/gpu"]
    ((resource, message),) = findings(mutable, "GPU001")
    assert resource == target.name and "Karpenter GPU pool (Standard_ND96isr_H100_v5)" in message


def test_gpu008_includes_aks_node_pool_taints(mutable):
    target = by_pool(mutable, NODE_POOL)["a10-spot"]
    target.inputs["spec"]["template"]["spec"]["taints"].append({"key": "dedicated", "value": "ml",
                                                                "effect": "NoSchedule"})
    found = findings(mutable, "GPU008")
    assert found and all("'a10-spot'" in message and "dedicated=ml:NoSchedule" in message for _, message in found)


def test_gpu010_names_an_aks_spot_node_pool_without_the_spot_taint(mutable):
    target = by_pool(mutable, NODE_POOL)["a10-spot"]
    spec = target.inputs["spec"]["template"]["spec"]
    # Either spot taint passes (AKS's scalesetpriority one is accepted): only without both is the pool open.
    spec["taints"] = [t for t in spec["taints"] if t["key"] != "gpu-platform.io/spot"]
    assert findings(mutable, "GPU010") == []
    spec["taints"] = [t for t in spec["taints"] if t["key"] != "kubernetes.azure.com/scalesetpriority"]
    assert [resource for resource, _ in findings(mutable, "GPU010")] == [target.name]


@pytest.mark.parametrize("requirement, gpu", [
    ({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["Standard_NC24ads_A100_v4"]}, True),
    ({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["Standard_D8s_v5"]}, False),
    ({"key": "karpenter.azure.com/sku-name", "operator": "In", "values": ["Standard_ND96isr_H100_v5"]}, True),
    ({"key": "karpenter.azure.com/sku-family", "operator": "In", "values": ["N"]}, True),
    ({"key": "karpenter.azure.com/sku-family", "operator": "In", "values": ["D", "F"]}, False),
    ({"key": "karpenter.azure.com/sku-gpu-count", "operator": "Gt", "values": ["0"]}, True),
    ({"key": "karpenter.azure.com/sku-gpu-manufacturer", "operator": "In", "values": ["nvidia"]}, True),
    ({"key": "karpenter.azure.com/sku-gpu-count", "operator": "DoesNotExist"}, False),
])
def test_which_azure_node_pools_are_gpu_pools(requirement, gpu):
    props = {"spec": {"template": {"spec": {"requirements": [requirement]}}}}
    assert KARPENTER.gpu(props) is gpu
