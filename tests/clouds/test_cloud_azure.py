"""AKS: the managed cluster, its GPU agent pools (taints, driver, MIG, spot, autoscaling) and AKS-only config limits."""
from __future__ import annotations

import base64

import pytest
import yaml

from components.clouds.azure.kubeconfig import AKS_AAD_SERVER_ID, kubeconfig_from_credentials
from components.config import ConfigError, validate
from gpu_platform.engine import plan_stack
from support.plans import one, plan_fixture
from support.validation import first_pool_problems, one_mig_pool

AGENT_POOL = "azure-native:containerservice:AgentPool"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
GPU_NODE_POOL = "gpu-platform:cluster:GpuNodePool"

# A development variant: existing network, zones, an operator-owned driver, a non-default MIG profile.
DEV_OVERRIDES = {
    "gpu-platform:environment": "development",
    "gpu-platform:cluster": {
        "name": "ml-dev-aks", "region": "westeurope", "authorizedNetworks": ["203.0.113.0/24"],
        "azure": {"resourceGroup": "shared-rg", "zones": [1, 2],
                  "vnetSubnetId": "/subscriptions/0/resourceGroups/net/providers/Microsoft.Network/"
                                  "virtualNetworks/hub/subnets/aks"},
    },
    "gpu-platform:gpuPools": [
        {"name": "a100-notebooks", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 3, "driver": "operator",
         "sharing": {"mode": "time-slicing", "replicas": 4}, "taints": ["team=ml:NoSchedule"]},
        {"name": "h100-slices", "instanceType": "Standard_ND96isr_H100_v5", "minNodes": 1, "maxNodes": 2,
         "capacityType": "reserved", "sharing": {"mode": "mig", "migProfile": "all-3g.40gb"}},
    ],
    "gpu-platform:teams": [{"name": "lab", "quotas": {"a100-notebooks": 4, "h100-slices": 16}}],
}


prod = plan_fixture("azure-prod")
dev = plan_fixture("azure-prod", DEV_OVERRIDES)


def agent_pool(plan, cluster, pool):
    return one(plan, AGENT_POOL, f"{cluster}-{pool}-agentpool")


def test_agent_pools_are_children_of_gpu_node_pools(prod):
    for pool in ("h100-train", "a100-infer", "a10-spot"):
        parent = one(prod, GPU_NODE_POOL, f"ml-prod-aks-{pool}")
        assert agent_pool(prod, "ml-prod-aks", pool).parent == parent.urn


def test_names_follow_aks_rules(prod):
    names = {r.inputs["agentPoolName"] for r in prod.of_type(AGENT_POOL)}
    assert names == {"h100train", "a100infer", "a10spot"}
    cluster = one(prod, MANAGED_CLUSTER, "ml-prod-aks-aks")
    assert cluster.inputs["resourceName"] == "ml-prod-aks" and cluster.inputs["dnsPrefix"] == "ml-prod-aks"
    assert cluster.inputs["resourceGroupName"] == "ml-prod-aks-rg"
    assert one(prod, "azure-native:resources:ResourceGroup", "ml-prod-aks-rg").inputs["resourceGroupName"] == "ml-prod-aks-rg"
    vnet = one(prod, "azure-native:network:VirtualNetwork", "ml-prod-aks-vnet")
    assert vnet.inputs["virtualNetworkName"] == "ml-prod-aks-vnet"
    assert vnet.inputs["addressSpace"] == {"addressPrefixes": ["10.50.0.0/16"]}
    subnet = one(prod, "azure-native:network:Subnet", "ml-prod-aks-nodes")
    assert subnet.inputs["addressPrefix"] == "10.50.0.0/18" and subnet.inputs["virtualNetworkName"] == "ml-prod-aks-vnet"
    for pool in prod.of_type(AGENT_POOL):
        assert pool.inputs["resourceName"] == "ml-prod-aks" and pool.inputs["resourceGroupName"] == "ml-prod-aks-rg"


def test_taints_use_aks_spelling_with_sku_gpu(prod):
    assert agent_pool(prod, "ml-prod-aks", "h100-train").inputs["nodeTaints"] == [
        "nvidia.com/gpu=present:NoSchedule", "sku=gpu:NoSchedule"]


def test_spot_pool_fields_and_declared_aks_spot_taint(prod):
    spot = agent_pool(prod, "ml-prod-aks", "a10-spot").inputs
    assert spot["scaleSetPriority"] == "Spot"
    assert spot["scaleSetEvictionPolicy"] == "Delete"
    assert spot["spotMaxPrice"] == -1
    assert spot["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule", "sku=gpu:NoSchedule",
                                  "gpu-platform.io/spot=true:NoSchedule",
                                  "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"]
    on_demand = agent_pool(prod, "ml-prod-aks", "h100-train").inputs
    assert "scaleSetPriority" not in on_demand and "spotMaxPrice" not in on_demand


def test_gpu_node_pool_declares_every_taint_for_the_operator(prod):
    taints = one(prod, GPU_NODE_POOL, "ml-prod-aks-a10-spot").inputs["taints"]
    assert [(t["key"], t["value"], t["effect"]) for t in taints] == [
        ("nvidia.com/gpu", "present", "NoSchedule"), ("sku", "gpu", "NoSchedule"),
        ("gpu-platform.io/spot", "true", "NoSchedule"), ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")]


def test_autoscaling_and_pool_basics(prod):
    pool = agent_pool(prod, "ml-prod-aks", "a100-infer")
    assert {k: pool.inputs[k] for k in ("enableAutoScaling", "count", "minCount", "maxCount", "mode", "osType",
                                        "osSKU", "vmSize")} == {
        "enableAutoScaling": True, "count": 1, "minCount": 1, "maxCount": 3, "mode": "User", "osType": "Linux",
        "osSKU": "Ubuntu", "vmSize": "Standard_NC96ads_A100_v4"}
    assert pool.options["ignoreChanges"] == ["count"]
    assert agent_pool(prod, "ml-prod-aks", "h100-train").inputs["minCount"] == 0
    assert pool.inputs["vnetSubnetID"].startswith("ml-prod-aks-nodes-")


def test_labels(prod):
    labels = agent_pool(prod, "ml-prod-aks", "a100-infer").inputs["nodeLabels"]
    assert labels["gpu-platform.io/pool"] == "a100-infer"
    assert labels["gpu-platform.io/gpu-model"] == "A100-80GB"
    assert labels["gpu-platform.io/sharing"] == "mig"
    assert labels == one(prod, GPU_NODE_POOL, "ml-prod-aks-a100-infer").inputs["labels"]


def test_managed_driver_and_mig_instance_profile(prod):
    mig = agent_pool(prod, "ml-prod-aks", "a100-infer").inputs
    assert mig["gpuProfile"] == {"driver": "Install"}
    assert mig["gpuInstanceProfile"] == "MIG1g"
    assert "gpuInstanceProfile" not in agent_pool(prod, "ml-prod-aks", "h100-train").inputs


def test_operator_driver_and_other_mig_profile(dev):
    operator = agent_pool(dev, "ml-dev-aks", "a100-notebooks").inputs
    assert operator["gpuProfile"] == {"driver": "None"}
    assert "gpuInstanceProfile" not in operator  # time-slicing on AKS is the operator's device plugin config
    assert operator["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule", "sku=gpu:NoSchedule", "team=ml:NoSchedule"]
    mig = agent_pool(dev, "ml-dev-aks", "h100-slices").inputs
    assert mig["gpuInstanceProfile"] == "MIG3g" and mig["gpuProfile"] == {"driver": "Install"}
    assert "scaleSetPriority" not in mig


def test_production_cluster_is_private_protected_and_entra_only(prod):
    cluster = one(prod, MANAGED_CLUSTER, "ml-prod-aks-aks")
    inputs = cluster.inputs
    assert cluster.options["protect"] is True
    assert cluster.options["ignoreChanges"] == ["agentPoolProfiles[0].count"]
    assert inputs["apiServerAccessProfile"] == {"enablePrivateCluster": True}
    assert inputs["disableLocalAccounts"] is True
    assert inputs["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert inputs["oidcIssuerProfile"] == {"enabled": True}
    assert inputs["securityProfile"] == {"workloadIdentity": {"enabled": True}}
    assert inputs["identity"] == {"type": "SystemAssigned"}
    assert inputs["sku"] == {"name": "Base", "tier": "Standard"}
    assert inputs["networkProfile"]["networkPluginMode"] == "overlay"
    assert inputs["networkProfile"]["networkPolicy"] == "cilium"
    assert all(r.options["protect"] for r in prod.of_type(AGENT_POOL))


def test_deployer_gets_cluster_admin_through_azure_rbac(prod):
    assignment = one(prod, "azure-native:authorization:RoleAssignment", "ml-prod-aks-deployer-admin").inputs
    assert assignment["roleDefinitionId"].endswith("/roleDefinitions/b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b")
    assert assignment["principalType"] == "User"
    assert assignment["scope"].startswith("ml-prod-aks-aks-")


def test_system_pool_and_gpu_safe_autoscaler(prod):
    inputs = one(prod, MANAGED_CLUSTER, "ml-prod-aks-aks").inputs
    (system,) = inputs["agentPoolProfiles"]
    assert system["mode"] == "System" and system["name"] == "system"
    assert (system["vmSize"], system["minCount"], system["maxCount"]) == ("Standard_D8s_v5", 2, 4)
    assert system["enableAutoScaling"] is True and system["nodeTaints"] == ["CriticalAddonsOnly=true:NoSchedule"]
    scaler = inputs["autoScalerProfile"]
    assert scaler["scaleDownDelayAfterAdd"] == "15m" and scaler["scaleDownUnneededTime"] == "15m"
    assert scaler["skipNodesWithLocalStorage"] == "false" and scaler["expander"] == "priority"


def test_development_cluster_uses_given_network_and_local_accounts(dev):
    assert not dev.of_type("azure-native:resources:ResourceGroup")
    assert not dev.of_type("azure-native:network:VirtualNetwork")
    assert not dev.of_type("azure-native:authorization:RoleAssignment")
    cluster = one(dev, MANAGED_CLUSTER, "ml-dev-aks-aks")
    assert cluster.options["protect"] is False
    inputs = cluster.inputs
    assert inputs["resourceGroupName"] == "shared-rg"
    assert inputs["apiServerAccessProfile"] == {"enablePrivateCluster": False, "authorizedIPRanges": ["203.0.113.0/24"]}
    assert inputs["disableLocalAccounts"] is False and "aadProfile" not in inputs
    assert inputs["sku"]["tier"] == "Free"
    assert inputs["agentPoolProfiles"][0]["vnetSubnetID"].endswith("/subnets/aks")
    zones = {r.inputs["agentPoolName"]: r.inputs["availabilityZones"] for r in dev.of_type(AGENT_POOL)}
    # The ND pool (fabric auto on a training pool: InfiniBand) keeps one zone: its fabric is one scale set's.
    assert zones == {"h100slices": ["1"], "a100notebook": ["1", "2"]}
    for pool in dev.of_type(AGENT_POOL):
        assert pool.inputs["vnetSubnetID"].endswith("/subnets/aks")


def _credentials(user: dict) -> list[dict]:
    config = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "c", "cluster": {"server": "https://x"}}],
              "users": [{"name": "u", "user": user}], "contexts": [], "current-context": ""}
    return [{"name": "clusterUser", "value": base64.b64encode(yaml.safe_dump(config).encode()).decode()}]


def test_entra_kubeconfig_logs_in_with_azure_cli():
    device_code = {"exec": {"command": "kubelogin", "args": ["get-token", "--login", "devicecode"]}}
    config = yaml.safe_load(kubeconfig_from_credentials(_credentials(device_code), aad=True))
    (user,) = config["users"]
    assert user["user"]["exec"]["command"] == "kubelogin"
    assert user["user"]["exec"]["args"] == ["get-token", "--login", "azurecli", "--server-id", AKS_AAD_SERVER_ID]
    assert config["clusters"][0]["cluster"]["server"] == "https://x"


def test_local_account_kubeconfig_is_kept():
    cert = {"client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"}
    config = yaml.safe_load(kubeconfig_from_credentials(_credentials(cert), aad=False))
    assert config["users"][0]["user"] == cert


AZURE_RAW = one_mig_pool("azure", {"name": "ml-prod", "region": "eastus2"}, "a100-infer", "Standard_NC96ads_A100_v4",
                         environment="production")


@pytest.mark.parametrize("layout, fragment", [
    ("all-balanced", "all-balanced cannot be expressed on AKS: AKS gpuInstanceProfile gives every GPU"),
    ({"1g.10gb": 3, "2g.20gb": 2}, "a custom layout cannot be expressed on AKS"),
    ("all-1g.10gb+me", "AKS gpuInstanceProfile has no media-extension (+me) profiles"),
    ("all-1g.20gb", "MIG1g always creates 1g.10gb on A100-80GB; use all-1g.10gb"),
])
def test_mig_layouts_aks_cannot_express(layout, fragment):
    found = first_pool_problems(AZURE_RAW, {"mode": "mig", "migProfile": layout})
    assert fragment in found["gpuPools[0].sharing.migProfile"]


@pytest.mark.parametrize("layout", ["all-1g.10gb", "all-2g.20gb", "all-3g.40gb", "all-4g.40gb", "all-7g.80gb"])
def test_mig_layouts_aks_can_express(layout):
    raw = yaml.safe_load(yaml.safe_dump(AZURE_RAW))
    raw["gpuPools"][0]["sharing"]["migProfile"] = layout
    assert validate(raw).gpu_pools[0].sharing.mig_profile == layout


def test_aks_mig_needs_the_aks_driver():
    found = first_pool_problems(AZURE_RAW, {"mode": "mig", "migProfile": "all-1g.10gb"}, driver="operator")
    assert "operator cannot be combined with sharing mode mig on AKS" in found["gpuPools[0].driver"]


def test_aks_time_slicing_works_with_operator_driver():
    raw = yaml.safe_load(yaml.safe_dump(AZURE_RAW))
    raw["gpuPools"][0].update(driver="operator", sharing={"mode": "time-slicing", "replicas": 8})
    assert validate(raw).gpu_pools[0].driver == "operator"


def test_aks_pool_names_collide_after_dropping_hyphens():
    raw = yaml.safe_load(yaml.safe_dump(AZURE_RAW))
    raw["gpuPools"].append(dict(raw["gpuPools"][0], name="a100infer"))
    with pytest.raises(ConfigError) as info:
        validate(raw)
    assert any(p.path == "gpuPools[1].name" and "both become AKS pool name 'a100infer'" in p.message
               for p in info.value.problems)


@pytest.mark.parametrize("extras, path, fragment", [
    ({"vnetCidr": "172.16.0.0/12"}, "cluster.azure.vnetCidr", "overlaps the AKS overlay service range 172.16.0.0/16"),
    ({"vnetCidr": "192.168.64.0/18"}, "cluster.azure.vnetCidr", "overlaps the AKS overlay pod range 192.168.0.0/16"),
    ({"vnetCidr": "10.1.2.3/16"}, "cluster.azure.vnetCidr", "is not an IPv4 network"),
    ({"vnetCidr": "20.1.0.0/16"}, "cluster.azure.vnetCidr", "20.1.0.0/16 is not private address space"),
    ({"vnetCidr": "10.1.2.0/26"}, "cluster.azure.vnetCidr", "must be a /24 or larger"),
    ({"zones": ["1", "4"]}, "cluster.azure.zones", "not: '4'"),
    ({"deployerPrincipalType": "Robot"}, "cluster.azure.deployerPrincipalType", "allowed: User, ServicePrincipal"),
])
def test_bad_azure_extras(extras, path, fragment):
    raw = yaml.safe_load(yaml.safe_dump(AZURE_RAW))
    raw["cluster"]["azure"] = extras
    with pytest.raises(ConfigError) as info:
        validate(raw)
    assert fragment in {p.path: p.message for p in info.value.problems}[path]


def test_service_principal_deployer():
    overrides = {**DEV_OVERRIDES, "gpu-platform:environment": "production",
                 "gpu-platform:cluster": {"name": "ml-ci-aks", "region": "westeurope",
                                          "azure": {"deployerPrincipalType": "ServicePrincipal", "tenantId": "t-1",
                                                    "adminGroupObjectIds": ["00000000-0000-0000-0000-0000000000a1"]}}}
    plan = plan_stack("azure-prod", config_overrides=overrides)
    assignment = one(plan, "azure-native:authorization:RoleAssignment", "ml-ci-aks-deployer-admin")
    assert assignment.inputs["principalType"] == "ServicePrincipal"
    aad = one(plan, MANAGED_CLUSTER, "ml-ci-aks-aks").inputs["aadProfile"]
    assert aad == {"managed": True, "enableAzureRBAC": True, "tenantID": "t-1",
                   "adminGroupObjectIDs": ["00000000-0000-0000-0000-0000000000a1"]}
