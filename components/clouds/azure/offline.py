"""What the offline engine answers for Azure: the outputs AKS computes that the program reads back, the invokes it
makes, and the inputs whose change replaces a resource. Azure zones are plain "1".."3", checked in config; no Azure
invoke asks for them. Plain data, no Pulumi."""
from __future__ import annotations

import base64

import yaml

from components.clouds.facts import OfflineFacts


def _offline_kubeconfig(server: str) -> str:
    """A base64 kubeconfig shaped like the ones AKS returns, with a client certificate user."""
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "offline",
              "clusters": [{"name": "offline",
                            "cluster": {"server": server, "certificate-authority-data": "T0ZGTElORQ=="}}],
              "contexts": [{"name": "offline", "context": {"cluster": "offline", "user": "offline"}}],
              "users": [{"name": "offline", "user": {"client-certificate-data": "T0ZGTElORQ==",
                                                     "client-key-data": "T0ZGTElORQ=="}}]}
    return base64.b64encode(yaml.safe_dump(config).encode()).decode()


OFFLINE = OfflineFacts(
    computed={
        "azure-native:containerservice:ManagedCluster": lambda name, inputs: {
            "fqdn": f"{name}.hcp.offline.azmk8s.io", "privateFQDN": f"{name}.privatelink.offline.azmk8s.io",
            "oidcIssuerProfile": {"issuerURL": f"https://offline.oic.prod-aks.azure.com/{name}/"},
            "identityProfile": {"kubeletidentity": {"objectId": "00000000-0000-0000-0000-000000000001",
                                                     "clientId": "00000000-0000-0000-0000-000000000002"}},
        },
    },
    invokes={
        "azure-native:authorization:getClientConfig": lambda _: {
            "clientId": "offline", "objectId": "00000000-0000-0000-0000-000000000000",
            "subscriptionId": "00000000-0000-0000-0000-000000000000",
            "tenantId": "00000000-0000-0000-0000-000000000000"},
        "azure-native:containerservice:listManagedClusterUserCredentials": lambda args: {"kubeconfigs": [{
            "name": "clusterUser",
            "value": _offline_kubeconfig(f"https://{args['resourceName']}.hcp.offline.azmk8s.io:443")}]},
    },
    replace_on_changes={
        # pulumi-azure-native#3655 makes vmSize and gpuInstanceProfile replace an AgentPool ("You can't change the VM
        # size of a node pool after you create it", AKS manage-node-pools limitations); the path parameters name the
        # pool; spot priority, eviction policy, max price, OS type and GPU driver cannot change on an existing pool
        # either (terraform-provider-azurerm kubernetes_cluster_node_pool_resource.go marks them ForceNew). Nor can its
        # zones: Azure refuses to change an existing agent pool's availabilityZones (azurerm marks `zones` ForceNew).
        "azure-native:containerservice:AgentPool": (
            "agentPoolName", "resourceGroupName", "resourceName", "vmSize", "gpuInstanceProfile", "scaleSetPriority",
            "scaleSetEvictionPolicy", "spotMaxPrice", "osType", "gpuProfile.driver", "availabilityZones",
        ),
    },
    node_pool_types=("azure-native:containerservice:AgentPool",),
)
