"""GKE: the private cluster, its GPU node pools (accelerators, driver, MIG, sharing, taints, spot, autoscaling)
and GKE-only config limits."""
from __future__ import annotations

import copy

import pytest
import yaml

from components.clouds.gcp.cluster import gke_kubeconfig, guest_accelerator
from components.config import ConfigError, validate
from support.plans import one, plan_fixture
from support.validation import first_pool_problems, one_mig_pool

NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
GPU_NODE_POOL = "gpu-platform:cluster:GpuNodePool"

# A variant: existing network, the GPU Operator owning every driver (GKE allows one owner cluster-wide), reservations.
VARIANT_OVERRIDES = {
    "gpu-platform:environment": "staging",
    "gpu-platform:cluster": {"name": "ml-stage-gke", "region": "us-east4", "authorizedNetworks": ["203.0.113.0/24"],
                             "gcp": {"project": "acme-stage", "network": "shared-vpc", "subnetwork": "gke-nodes",
                                     "zones": ["us-east4-a", "us-east4-c", "us-east4-b"]}},
    "gpu-platform:gpuPools": [
        {"name": "h100-operator", "instanceType": "a3-highgpu-8g", "maxNodes": 2, "driver": "operator"},
        {"name": "l4-reserved", "instanceType": "g2-standard-48", "minNodes": 3, "maxNodes": 6, "driver": "operator",
         "capacityType": "reserved"},
    ],
    "gpu-platform:teams": [{"name": "lab", "quotas": {"h100-operator": 8, "l4-reserved": 16}}],
}


prod = plan_fixture("gcp-prod")
dev = plan_fixture("gcp-dev")
variant = plan_fixture("gcp-prod", VARIANT_OVERRIDES)


def node_pool(plan, cluster, pool):
    return one(plan, NODE_POOL, f"{cluster}-{pool}-nodepool")


def accelerator(plan, cluster, pool):
    (acc,) = node_pool(plan, cluster, pool).inputs["nodeConfig"]["guestAccelerators"]
    return acc


def test_node_pools_are_children_of_gpu_node_pools(prod):
    for pool in ("h100-train", "a100-infer", "l4-spot"):
        assert node_pool(prod, "ml-prod-gke", pool).parent == one(prod, GPU_NODE_POOL, f"ml-prod-gke-{pool}").urn


def test_names_and_placement(prod):
    pools = {r.inputs["name"] for r in prod.of_type(NODE_POOL)}
    assert pools == {"system", "h100-train", "a100-infer", "l4-spot"}
    for pool in prod.of_type(NODE_POOL):
        assert pool.inputs["cluster"] == "ml-prod-gke" and pool.inputs["project"] == "acme-ml-prod"
        assert pool.inputs["location"] == "us-central1"
        # The GPUDirect-TCPX pool is compact, in the first zone only (docs/fabric.md, GKE).
        zones = ["us-central1-a"] if pool.inputs["name"] == "h100-train" else ["us-central1-a", "us-central1-c"]
        assert pool.inputs["nodeLocations"] == zones


def test_taints_are_explicit_with_gke_effect_spelling(prod):
    assert node_pool(prod, "ml-prod-gke", "h100-train").inputs["nodeConfig"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert node_pool(prod, "ml-prod-gke", "l4-spot").inputs["nodeConfig"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
        {"key": "gpu-platform.io/spot", "value": "true", "effect": "NO_SCHEDULE"}]
    assert one(prod, NODE_POOL, "ml-prod-gke-system").inputs["nodeConfig"]["taints"] == [
        {"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}]


def test_gke_mutated_fields_are_ignored_but_taints_stay_managed(prod):
    # Taints are updated in place by the provider: ignoring them would keep a removed taint on new nodes.
    for pool in ("h100-train", "a100-infer", "l4-spot"):
        assert node_pool(prod, "ml-prod-gke", pool).options["ignoreChanges"] == [
            "nodeConfig.resourceLabels", "initialNodeCount"]


def test_accelerators_with_managed_driver(prod):
    assert accelerator(prod, "ml-prod-gke", "h100-train") == {
        "type": "nvidia-h100-80gb", "count": 8, "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"}}
    assert node_pool(prod, "ml-prod-gke", "h100-train").inputs["nodeConfig"]["imageType"] == "COS_CONTAINERD"
    assert node_pool(prod, "ml-prod-gke", "h100-train").inputs["nodeConfig"]["machineType"] == "a3-highgpu-8g"


def test_mig_partition_size(prod):
    acc = accelerator(prod, "ml-prod-gke", "a100-infer")
    assert acc["gpuPartitionSize"] == "1g.10gb" and acc["type"] == "nvidia-a100-80gb"
    assert "gpuSharingConfig" not in acc


def test_time_slicing_sharing_config(prod):
    acc = accelerator(prod, "ml-prod-gke", "l4-spot")
    assert acc["gpuSharingConfig"] == {"gpuSharingStrategy": "TIME_SHARING", "maxSharedClientsPerGpu": 2}
    assert "gpuPartitionSize" not in acc


def test_mps_sharing_config():
    raw = copy.deepcopy(GCP_RAW)
    raw["gpuPools"][0].update(instanceType="g2-standard-48", sharing={"mode": "mps", "replicas": 8})
    (pool,) = validate(raw).gpu_pools
    assert guest_accelerator(pool) == {
        "type": "nvidia-l4", "count": 4, "gpu_driver_installation_config": {"gpu_driver_version": "DEFAULT"},
        "gpu_sharing_config": {"gpu_sharing_strategy": "MPS", "max_shared_clients_per_gpu": 8}}


def test_reservation_affinity(variant):
    config = node_pool(variant, "ml-stage-gke", "l4-reserved").inputs["nodeConfig"]
    assert config["reservationAffinity"] == {"consumeReservationType": "ANY_RESERVATION"}
    assert "spot" not in config
    assert "reservationAffinity" not in node_pool(variant, "ml-stage-gke", "h100-operator").inputs["nodeConfig"]


def test_operator_driver_disables_gke_install_and_device_plugin(variant, prod):
    acc = accelerator(variant, "ml-stage-gke", "h100-operator")
    assert acc["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "INSTALLATION_DISABLED"}
    config = node_pool(variant, "ml-stage-gke", "h100-operator").inputs["nodeConfig"]
    assert config["imageType"] == "UBUNTU_CONTAINERD"
    assert config["labels"]["gke-no-default-nvidia-gpu-device-plugin"] == "true"
    managed = node_pool(prod, "ml-prod-gke", "h100-train").inputs["nodeConfig"]["labels"]
    assert "gke-no-default-nvidia-gpu-device-plugin" not in managed


def test_spot_and_autoscaling(prod):
    spot = node_pool(prod, "ml-prod-gke", "l4-spot").inputs
    assert spot["nodeConfig"]["spot"] is True
    assert spot["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 8, "locationPolicy": "ANY"}
    assert spot["initialNodeCount"] == 0 and "nodeCount" not in spot
    infer = node_pool(prod, "ml-prod-gke", "a100-infer").inputs
    assert infer["autoscaling"] == {"totalMinNodeCount": 1, "totalMaxNodeCount": 2, "locationPolicy": "BALANCED"}
    assert infer["initialNodeCount"] == 1 and "nodeCount" not in infer
    assert "spot" not in infer["nodeConfig"]
    assert infer["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert infer["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}


def test_labels(prod):
    labels = node_pool(prod, "ml-prod-gke", "l4-spot").inputs["nodeConfig"]["labels"]
    assert labels["gpu-platform.io/pool"] == "l4-spot"
    assert labels["gpu-platform.io/capacity-type"] == "spot"
    assert labels["gpu-platform.io/sharing"] == "time-slicing"
    assert labels == one(prod, GPU_NODE_POOL, "ml-prod-gke-l4-spot").inputs["labels"]


def test_production_cluster_is_private_and_protected(prod):
    cluster = one(prod, CLUSTER, "ml-prod-gke-gke")
    inputs = cluster.inputs
    assert cluster.options["protect"] is True and inputs["deletionProtection"] is True
    assert inputs["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": True,
                                              "masterIpv4CidrBlock": "172.16.0.32/28"}
    assert inputs["masterAuthorizedNetworksConfig"] == {"gcpPublicCidrsAccessEnabled": False}
    assert inputs["workloadIdentityConfig"] == {"workloadPool": "acme-ml-prod.svc.id.goog"}
    assert inputs["removeDefaultNodePool"] is True and inputs["initialNodeCount"] == 1
    assert inputs["releaseChannel"] == {"channel": "REGULAR"} and inputs["minMasterVersion"] == "1.35"
    assert inputs["nodeLocations"] == ["us-central1-a", "us-central1-c"]
    assert inputs["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "pods", "servicesSecondaryRangeName": "services"}


def test_created_network_has_ranges_and_nat(prod):
    subnet = one(prod, "gcp:compute/subnetwork:Subnetwork", "ml-prod-gke-nodes").inputs
    assert [r["rangeName"] for r in subnet["secondaryIpRanges"]] == ["pods", "services"]
    assert subnet["privateIpGoogleAccess"] is True and subnet["region"] == "us-central1"
    assert one(prod, "gcp:compute/network:Network", "ml-prod-gke-vpc").inputs["autoCreateSubnetworks"] is False
    nat = one(prod, "gcp:compute/routerNat:RouterNat", "ml-prod-gke-nat").inputs
    assert nat["router"] == "ml-prod-gke-router"
    assert nat["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"


def test_development_cluster_has_public_endpoint_and_can_be_deleted(dev):
    cluster = one(dev, CLUSTER, "ml-dev-gke-gke")
    assert cluster.options["protect"] is False and cluster.inputs["deletionProtection"] is False
    assert cluster.inputs["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert cluster.inputs["privateClusterConfig"]["enablePrivateNodes"] is True
    assert [b["cidrBlock"] for b in cluster.inputs["masterAuthorizedNetworksConfig"]["cidrBlocks"]] == ["203.0.113.0/24"]
    assert cluster.inputs["nodeLocations"] == ["europe-west4-a", "europe-west4-b"]
    assert accelerator(dev, "ml-dev-gke", "l4-train") == {
        "type": "nvidia-l4", "count": 4, "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"}}


def test_given_network_is_used_as_is(variant):
    assert not variant.of_type("gcp:compute/network:Network")
    assert not variant.of_type("gcp:compute/routerNat:RouterNat")
    inputs = one(variant, CLUSTER, "ml-stage-gke-gke").inputs
    assert (inputs["network"], inputs["subnetwork"]) == ("shared-vpc", "gke-nodes")
    assert inputs["ipAllocationPolicy"] == {}
    # minNodes 3 over three zones: one node per zone.
    assert node_pool(variant, "ml-stage-gke", "l4-reserved").inputs["initialNodeCount"] == 1


def test_kubeconfig_uses_gke_auth_plugin():
    config = yaml.safe_load(gke_kubeconfig("ml", "10.0.0.2", "Q0E="))
    assert config["clusters"][0]["cluster"] == {"server": "https://10.0.0.2", "certificate-authority-data": "Q0E="}
    assert config["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert config["current-context"] == "ml"


GCP_RAW = one_mig_pool("gcp", {"name": "ml", "region": "us-central1", "authorizedNetworks": ["203.0.113.0/24"],
                               "gcp": {"project": "p", "zones": ["us-central1-a"]}}, "a100", "a2-ultragpu-8g")


@pytest.mark.parametrize("layout, fragment", [
    ("all-balanced", "all-balanced cannot be expressed on GKE: GKE gpuPartitionSize gives every GPU"),
    ({"3g.40gb": 1, "4g.40gb": 1}, "a custom layout cannot be expressed on GKE"),
    ("all-1g.10gb+me", "GKE gpuPartitionSize has no media-extension (+me) profiles"),
])
def test_mig_layouts_gke_cannot_express(layout, fragment):
    found = first_pool_problems(GCP_RAW, {"mode": "mig", "migProfile": layout})
    assert fragment in found["gpuPools[0].sharing.migProfile"]


def test_gke_partition_sizes_are_not_limited_to_the_smallest():
    raw = copy.deepcopy(GCP_RAW)
    raw["gpuPools"][0]["sharing"]["migProfile"] = "all-1g.20gb"
    assert validate(raw).gpu_pools[0].sharing.mig_profile == "all-1g.20gb"


@pytest.mark.parametrize("sharing", [
    {"mode": "mig", "migProfile": "all-1g.10gb"},
    {"mode": "time-slicing", "replicas": 4},
    {"mode": "mps", "replicas": 4},
])
def test_gke_pool_sharing_needs_the_gke_driver(sharing):
    found = first_pool_problems(GCP_RAW, sharing, driver="operator")
    assert f"operator cannot be combined with sharing mode {sharing['mode']} on GKE" in found["gpuPools[0].driver"]


def test_gke_sharing_replicas_limit():
    found = first_pool_problems(GCP_RAW, {"mode": "time-slicing", "replicas": 49})
    assert found["gpuPools[0].sharing.replicas"] == "must be <= 48 on GKE; got 49"


@pytest.mark.parametrize("extras, path, fragment", [
    ({"project": "p", "masterIpv4CidrBlock": "172.16.0.0/24"}, "cluster.gcp.masterIpv4CidrBlock", "must be an IPv4 /28"),
    ({"project": "p", "zones": [1]}, "cluster.gcp.zones", "must list zone names"),
])
def test_bad_gcp_extras(extras, path, fragment):
    raw = copy.deepcopy(GCP_RAW)
    raw["cluster"]["gcp"] = extras
    with pytest.raises(ConfigError) as info:
        validate(raw)
    assert fragment in {p.path: p.message for p in info.value.problems}[path]
