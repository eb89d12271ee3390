"""What the offline engine answers for OCI: the outputs OKE computes that the program reads back, the invokes it
makes, availability domain names per region, and the inputs whose change replaces a resource or reaches only new
nodes. Plain data, no Pulumi."""
from __future__ import annotations

from components.clouds.facts import OfflineFacts

# Availability domains are "<tenancy prefix>:<region key>-AD-<n>"; the prefix differs per tenancy, so offline it is
# "Offline". Only a few regions have three ADs; the others have one.
_ADS: dict[str, tuple[str, ...]] = {
    "us-ashburn-1": tuple(f"Offline:US-ASHBURN-AD-{n}" for n in (1, 2, 3)),
    "us-phoenix-1": tuple(f"Offline:PHX-AD-{n}" for n in (1, 2, 3)),
    "us-chicago-1": tuple(f"Offline:US-CHICAGO-1-AD-{n}" for n in (1, 2, 3)),
    "eu-frankfurt-1": tuple(f"Offline:EU-FRANKFURT-1-AD-{n}" for n in (1, 2, 3)),
    "uk-london-1": tuple(f"Offline:UK-LONDON-1-AD-{n}" for n in (1, 2, 3)),
}

OFFLINE = OfflineFacts(
    zones=_ADS,
    fallback_zones=lambda region: (f"Offline:{region.upper()}-AD-1",),
    computed={
        "oci:ContainerEngine/cluster:Cluster": lambda name, inputs: {
            "endpoints": [{"privateEndpoint": "10.0.0.2:6443",
                           "publicEndpoint": "192.0.2.10:6443" if (inputs.get("endpointConfig") or {}).get(
                               "isPublicIpEnabled") else ""}],
        },
    },
    invokes={
        "oci:Core/getServices:getServices": lambda _: {"id": "services", "services": [
            {"id": "ocid1.service.oc1.offline.all", "name": "All OFF Services In Oracle Services Network",
             "cidrBlock": "all-off-services-in-oracle-services-network", "description": "All OFF Services"},
            {"id": "ocid1.service.oc1.offline.objectstorage", "name": "OCI OFF Object Storage",
             "cidrBlock": "oci-off-objectstorage", "description": "OCI OFF Object Storage"}]},
        "oci:ContainerEngine/getClusterKubeConfig:getClusterKubeConfig": lambda args: {
            "id": args["clusterId"], "clusterId": args["clusterId"], "endpoint": args.get("endpoint", ""),
            # OKE returns plain YAML (not base64); only the CA is read from it.
            "content": "apiVersion: v1\nkind: Config\nclusters:\n- name: offline\n  cluster:\n"
                       "    server: https://10.0.0.2:6443\n    certificate-authority-data: T0ZGTElORQ==\n"},
    },
    zone_invokes={
        "oci:Identity/getAvailabilityDomains:getAvailabilityDomains": lambda names, args: {
            "availabilityDomains": [{"name": name, "id": f"ad{i}", "compartmentId": args.get("compartmentId", "")}
                                    for i, name in enumerate(names, 1)],
            "compartmentId": args.get("compartmentId", ""), "id": "ads"},
    },
    replace_on_changes={
        # terraform-provider-oci containerengine_node_pool_resource.go: only the cluster and compartment are ForceNew.
        # nodeShape, image and metadata update in place and apply to nodes created afterwards: existing nodes keep
        # the old shape until they are cycled.
        "oci:ContainerEngine/nodePool:NodePool": ("clusterId", "compartmentId"),
        # pulumi-oci 5.5.0 core InstanceConfiguration: only compartment, names and tags are "(Updatable)"; any change
        # of instanceDetails (shape, image, cloud-init, agent plugins) creates a new configuration, which the cluster
        # network's instance pool then names (updatable there) for the nodes it launches afterwards.
        "oci:Core/instanceConfiguration:InstanceConfiguration": ("instanceDetails", "instanceId", "source",
                                                                 "gmcConfigs"),
        # pulumi-oci 5.5.0 core ClusterNetwork: placementConfiguration (AD, subnets) and clusterConfiguration are not
        # "(Updatable)": moving a cluster network replaces it and every node on it; instancePools (size,
        # configuration) update in place.
        "oci:Core/clusterNetwork:ClusterNetwork": ("placementConfiguration", "clusterConfiguration"),
        # pulumi-oci 5.5.0 identity DynamicGroup: the tenancy and the name are fixed; the matching rule updates in
        # place.
        "oci:Identity/dynamicGroup:DynamicGroup": ("compartmentId", "name"),
    },
    # An OKE node pool's shape, image and metadata apply at the next node launch (terraform-provider-oci): existing
    # nodes keep the old value until cycled.
    new_nodes_only={
        "oci:ContainerEngine/nodePool:NodePool": ("nodeShape", "nodeShapeConfig", "nodeSourceDetails", "nodeMetadata"),
    },
    node_pool_types=("oci:ContainerEngine/nodePool:NodePool",),
)
