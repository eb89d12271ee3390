"""Which input changes make a provider replace a resource instead of updating it in place.

Pulumi's bridged providers replace a resource when an input its Terraform schema marks `ForceNew` changes;
azure-native replaces on the properties its metadata marks `forceNew`. The offline engine has no provider plugins
to ask, so the facts for the resources whose replacement costs running work are stated here, each from the
provider's own schema. Paths are the wire (camelCase) input names of the plan JSON; a path names an object or
list as a whole when any change inside it replaces the resource.
"""
from __future__ import annotations

from typing import Any

REPLACE_ON_CHANGES: dict[str, tuple[str, ...]] = {
    # terraform-provider-aws internal/service/eks/node_group.go: ForceNew on these; labels, taints, tags,
    # scalingConfig, updateConfig, version and launchTemplate.version update in place.
    "aws:eks/nodeGroup:NodeGroup": (
        "amiType", "capacityType", "clusterName", "diskSize", "instanceTypes", "launchTemplate.id",
        "launchTemplate.name", "nodeGroupName", "nodeGroupNamePrefix", "nodeRoleArn", "remoteAccess", "subnetIds",
    ),
    # terraform-provider-aws internal/service/autoscaling/group_tag.go: a tag belongs to one group under one key;
    # its value and propagateAtLaunch update in place.
    "aws:autoscaling/tag:Tag": ("autoscalingGroupName", "tag.key"),
    # terraform-provider-aws internal/service/ec2/vpc_subnet.go: a subnet cannot move between AZs, CIDRs or VPCs.
    "aws:ec2/subnet:Subnet": ("availabilityZone", "availabilityZoneId", "cidrBlock", "vpcId"),
    # terraform-provider-aws internal/service/ec2/vpc.go: a VPC's primary CIDR is fixed.
    "aws:ec2/vpc:Vpc": ("cidrBlock",),
    # terraform-provider-aws internal/service/eks/cluster.go: name and role are fixed for a cluster's life.
    "aws:eks/cluster:Cluster": ("name", "roleArn"),
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
    # Compute API: a VPC's name and subnet mode, a subnet's name, network and region, and a firewall rule's name and
    # network are fixed at creation (terraform-provider-google marks them ForceNew; not re-read from the schema here).
    # A VPC's MTU is listed too: the GPU NIC VPCs are created with it, and no provider version read here updates it.
    "gcp:compute/network:Network": ("name", "project", "autoCreateSubnetworks", "mtu"),
    "gcp:compute/subnetwork:Subnetwork": ("name", "project", "network", "region"),
    "gcp:compute/firewall:Firewall": ("name", "project", "network"),
    # pulumi-azure-native#3655 makes vmSize and gpuInstanceProfile replace an AgentPool ("You can't change the VM
    # size of a node pool after you create it", AKS manage-node-pools limitations); the path parameters name the
    # pool; spot priority, eviction policy, max price, OS type and GPU driver cannot change on an existing pool
    # either (terraform-provider-azurerm kubernetes_cluster_node_pool_resource.go marks them ForceNew). Nor can its
    # zones: Azure refuses to change an existing agent pool's availabilityZones (azurerm marks `zones` ForceNew).
    "azure-native:containerservice:AgentPool": (
        "agentPoolName", "resourceGroupName", "resourceName", "vmSize", "gpuInstanceProfile", "scaleSetPriority",
        "scaleSetEvictionPolicy", "spotMaxPrice", "osType", "gpuProfile.driver", "availabilityZones",
    ),
    # terraform-provider-oci containerengine_node_pool_resource.go: only the cluster and compartment are ForceNew.
    # nodeShape, image and metadata update in place and apply to nodes created afterwards: existing nodes keep
    # the old shape until they are cycled.
    "oci:ContainerEngine/nodePool:NodePool": ("clusterId", "compartmentId"),
    # pulumi-oci 5.5.0 core InstanceConfiguration: only compartment, names and tags are "(Updatable)"; any change of
    # instanceDetails (shape, image, cloud-init, agent plugins) creates a new configuration, which the cluster
    # network's instance pool then names (updatable there) for the nodes it launches afterwards.
    "oci:Core/instanceConfiguration:InstanceConfiguration": ("instanceDetails", "instanceId", "source", "gmcConfigs"),
    # pulumi-oci 5.5.0 core ClusterNetwork: placementConfiguration (AD, subnets) and clusterConfiguration are not
    # "(Updatable)": moving a cluster network replaces it and every node on it; instancePools (size, configuration)
    # update in place.
    "oci:Core/clusterNetwork:ClusterNetwork": ("placementConfiguration", "clusterConfiguration"),
    # pulumi-oci 5.5.0 identity DynamicGroup: the tenancy and the name are fixed; the matching rule updates in place.
    "oci:Identity/dynamicGroup:DynamicGroup": ("compartmentId", "name"),
}

# Inputs updated in place that reach only nodes created afterwards (terraform-provider-oci: an OKE node pool's
# shape, image and metadata apply at the next node launch): existing nodes keep the old value until cycled.
NEW_NODES_ONLY: dict[str, tuple[str, ...]] = {
    "oci:ContainerEngine/nodePool:NodePool": ("nodeShape", "nodeShapeConfig", "nodeSourceDetails", "nodeMetadata"),
}

# Inputs the provider updates in place but the cloud refuses to change, so `pulumi up` fails on them. `list[].field`
# compares `field` of each list entry by its `name`. AKS: the system pool is an agentPoolProfiles entry of the
# ManagedCluster, and Azure refuses to change an existing pool's availabilityZones there as on an AgentPool.
REFUSED_UPDATES: dict[str, tuple[str, ...]] = {
    "azure-native:containerservice:ManagedCluster": ("agentPoolProfiles[].availabilityZones",),
}

# pulumi-kubernetes replaces any object whose name or namespace changes (a new object, then the old one deleted).
KUBERNETES_REPLACE_ON_CHANGES: tuple[str, ...] = ("metadata.name", "metadata.namespace")


def replace_paths(type_: str) -> tuple[str, ...]:
    """The replace-triggering input paths of a resource type; empty when every change updates in place."""
    if type_.startswith("kubernetes:") and "/" in type_.split(":")[1]:
        return KUBERNETES_REPLACE_ON_CHANGES
    return REPLACE_ON_CHANGES.get(type_, ())


def value_at(inputs: dict[str, Any], path: str) -> Any:
    """The input at a dotted path, or None where the path does not exist."""
    value: Any = inputs
    for key in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def new_nodes_only(type_: str, paths: list[str]) -> list[str]:
    """The changed paths that reach only nodes created afterwards."""
    heads = NEW_NODES_ONLY.get(type_, ())
    return [p for p in paths if p.split(".")[0] in heads]


def replacing_changes(type_: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The replace-triggering paths whose value differs between two input sets."""
    return [path for path in replace_paths(type_) if value_at(old, path) != value_at(new, path)]


def refused_changes(type_: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The refused-in-place paths (REFUSED_UPDATES) whose value differs, one per list entry: `list[name].field`."""
    refused = []
    for path in REFUSED_UPDATES.get(type_, ()):
        head, field = path.split("[].")
        before = {e.get("name"): e for e in value_at(old, head) or [] if isinstance(e, dict)}
        for entry in value_at(new, head) or []:
            if isinstance(entry, dict) and entry.get("name") in before \
                    and value_at(before[entry["name"]], field) != value_at(entry, field):
                refused.append(f"{head}[{entry['name']}].{field}")
    return refused
