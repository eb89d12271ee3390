"""What the offline engine answers for GCP: the outputs GKE and IAM compute that the program reads back, real zone
names per region, and the inputs whose change replaces a resource. Plain data, no Pulumi."""
from __future__ import annotations

from components.clouds.facts import OfflineFacts

# Region plus "-<letter>", letters differ per region (us-central1 has a, b, c, f; us-east1 has b, c, d).
_ZONE_LETTERS = {"us-central1": "abcf", "us-east1": "bcd", "us-east4": "abc", "us-west1": "abc", "europe-west1": "bcd",
                 "europe-west4": "abc", "asia-southeast1": "abc"}

OFFLINE = OfflineFacts(
    zones={region: tuple(f"{region}-{z}" for z in letters) for region, letters in _ZONE_LETTERS.items()},
    fallback_zones=lambda region: tuple(f"{region}-{z}" for z in "abc"),
    computed={
        "gcp:serviceaccount/account:Account": lambda name, inputs: {
            "email": f"{inputs.get('accountId', name)}@{inputs.get('project', 'offline')}.iam.gserviceaccount.com"},
        "gcp:container/cluster:Cluster": lambda name, _: {
            "endpoint": "10.0.0.2", "masterAuth": {"clusterCaCertificate": "T0ZGTElORQ=="},
        },
    },
    zone_invokes={
        "gcp:compute/getZones:getZones": lambda names, args: {
            "names": list(names), "project": args.get("project", "offline"), "id": "zones"},
    },
    replace_on_changes={
        # terraform-provider-google google/services/container/node_config.go (node pools' nodeConfig) and
        # resource_container_node_pool.go: every guestAccelerators field (type, count, driver installation, MIG
        # partition size, sharing), spot/preemptible, reservation affinity, scopes, service account, metadata and
        # local SSDs are ForceNew; machineType, diskSizeGb, diskType, imageType, labels and taints update in place.
        "gcp:container/nodePool:NodePool": (
            "name", "namePrefix", "cluster", "location", "project",
            "nodeConfig.guestAccelerators", "nodeConfig.spot", "nodeConfig.preemptible",
            "nodeConfig.reservationAffinity", "nodeConfig.oauthScopes", "nodeConfig.serviceAccount",
            "nodeConfig.metadata", "nodeConfig.localSsdCount", "nodeConfig.minCpuPlatform",
            "nodeConfig.shieldedInstanceConfig",
            # resource_container_node_pool.go: placement_policy and network_config.additional_node_network_configs are
            # ForceNew (GKE: compact placement and node networks cannot be added to an existing pool); nodeConfig.gvnic
            # is ForceNew in the node_config.go versions read here (some newer ones update it in place).
            "placementPolicy", "networkConfig.additionalNodeNetworkConfigs", "nodeConfig.gvnic",
        ),
        # Compute API: a VPC's name and subnet mode, a subnet's name, network and region, and a firewall rule's name
        # and network are fixed at creation (terraform-provider-google marks them ForceNew; not re-read from the schema
        # here). A VPC's MTU is listed too: the GPU NIC VPCs are created with it, and no provider version read here
        # updates it.
        "gcp:compute/network:Network": ("name", "project", "autoCreateSubnetworks", "mtu"),
        "gcp:compute/subnetwork:Subnetwork": ("name", "project", "network", "region"),
        "gcp:compute/firewall:Firewall": ("name", "project", "network"),
    },
    node_pool_types=("gcp:container/nodePool:NodePool",),
)
