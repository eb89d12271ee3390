"""AKS: a resource group and VNet (unless given), a managed cluster with its system pool, one agent pool per GPU pool."""
from __future__ import annotations

import ipaddress
import re

import pulumi
import pulumi_azure_native.authorization as authorization
import pulumi_azure_native.containerservice as containerservice
import pulumi_azure_native.network as network
import pulumi_azure_native.resources as resources

from components.catalog.types import mig_shape
from components.clouds.azure import karpenter
from components.clouds.azure.kubeconfig import kubeconfig_from_credentials
from components.clouds.base import GpuNodePool, GpuNodePoolArgs, PlatformCluster
from components.clouds.azure.facts import AKS_POD_CIDR, AKS_SERVICE_CIDR, NAP, PROFILE
from components.clouds.facts import CloudProfile
from components.config.model import GpuPool, PlatformConfig, Taint
from components.provisioning.cluster_autoscaler.priorities import expander_priorities
from components.provisioning.cluster_autoscaler.values import DELAY_AFTER_ADD, MAX_NODE_PROVISION_TIME, UNNEEDED_TIME
from components.provisioning.kinds import chosen
from components.system_pool import SYSTEM_TAINT

DEFAULT_VNET_CIDR = "10.224.0.0/16"
# Azure CNI overlay: pods and services live outside the VNet (config validation keeps vnetCidr clear of them),
# so a GPU node's pods never exhaust node subnet IPs.
DNS_SERVICE_IP = "172.16.0.10"
# Built-in role "Azure Kubernetes Service RBAC Cluster Admin".
AKS_RBAC_CLUSTER_ADMIN = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
SYSTEM_POOL = "system"

# GPU-safe cluster autoscaler: a GPU node takes minutes to join and pull CUDA images, so it gets time to be
# used before it may go (delay-after-add, unneeded-time) and time to boot at all (max-node-provision-time);
# emptyDir (/dev/shm of every training pod) must not pin an idle GPU node forever (skip-nodes-with-local-storage);
# priority reads our cluster-autoscaler-priority-expander ConfigMap (reserved, then spot, then on-demand pools).
# Running jobs stay because GPU nodes count as busy by their GPU requests and training pods can carry
# cluster-autoscaler.kubernetes.io/safe-to-evict: "false".
# The timings are the ones the chart-installed autoscaler of EKS and OKE gets. AKS's profile takes one expander,
# not a list, so least-waste among equal priorities is left out.
AUTOSCALER_PROFILE = {
    "scale_down_delay_after_add": DELAY_AFTER_ADD,
    "scale_down_unneeded_time": UNNEEDED_TIME,
    "skip_nodes_with_local_storage": "false",
    "max_node_provision_time": MAX_NODE_PROVISION_TIME,
    "expander": "priority",
}

def gpu_instance_profile(pool: GpuPool) -> str | None:
    """AKS `gpuInstanceProfile` of a MIG pool (MIG1g..MIG7g); config validation guarantees the layout fits."""
    if pool.sharing.mode != "mig":
        return None
    (name,) = pool.sharing.mig_layout(pool.instance)
    return f"MIG{mig_shape(name).compute}g"


def pool_zones(pool: GpuPool, zones: list[str] | None) -> list[str] | None:
    """The pool's availability zones. A fabric pool keeps the first only: Azure wires InfiniBand between the VMs of
    one scale set, and a scale set spread over zones spans data centers the fabric does not join."""
    if zones and pool.fabric != "none":
        return zones[:1]
    return zones


def node_taint(taint: Taint, prof: CloudProfile) -> str:
    """A taint as AKS `nodeTaints` spells it: key=value:Effect (key:Effect without a value)."""
    effect = prof.taint_effects[taint.effect]
    return f"{taint.key}={taint.value}:{effect}" if taint.value else f"{taint.key}:{effect}"


class AksCluster(PlatformCluster):
    """An AKS cluster with workload identity, Entra ID in production, and tainted GPU agent pools."""

    TYPE = "gpu-platform:azure:AksCluster"

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        cluster = config.cluster
        super().__init__(self.TYPE, name, {"clusterName": cluster.name, "location": cluster.region}, opts)
        prof = PROFILE
        extras = cluster.extras
        child = pulumi.ResourceOptions(parent=self)
        zones = [str(z) for z in extras.get("zones", [])] or None
        # Local accounts can only be disabled on Entra ID clusters, so production always gets Entra ID.
        aad = config.production or "tenantId" in extras or "adminGroupObjectIds" in extras
        # Node auto-provisioning: AKS runs Karpenter, and the GPU pools become its NodePools (karpenter.py).
        nap = chosen(extras, prof) == NAP

        if "resourceGroup" in extras:
            group_name: pulumi.Input[str] = extras["resourceGroup"]
        else:
            group = resources.ResourceGroup(f"{name}-rg", resource_group_name=f"{cluster.name}-rg",
                                            location=cluster.region, opts=child)
            group_name = group.id.apply(lambda _: f"{cluster.name}-rg")  # the name, once the group exists
        subnet_id = extras.get("vnetSubnetId") or self._network(name, config, group_name)

        managed = containerservice.ManagedCluster(
            f"{name}-aks",
            resource_name_=cluster.name,
            resource_group_name=group_name,
            location=cluster.region,
            dns_prefix=cluster.name,
            kubernetes_version=cluster.kubernetes_version,
            sku={"name": "Base", "tier": "Standard" if config.production else "Free"},
            identity={"type": "SystemAssigned"},
            enable_rbac=True,
            agent_pool_profiles=[{
                "name": SYSTEM_POOL,
                "mode": "System",
                "vm_size": cluster.system_pool.instance_type,
                **karpenter.system_pool_scaling(cluster.system_pool, nap),
                "os_type": "Linux",
                "os_sku": "Ubuntu",
                "type": "VirtualMachineScaleSets",
                "vnet_subnet_id": subnet_id,
                **({"availability_zones": zones} if zones else {}),
                # AKS: the system pool's nodeTaints, what onlyCriticalAddonsEnabled would set.
                "node_taints": [node_taint(SYSTEM_TAINT, prof)],
            }],
            network_profile={
                "network_plugin": "azure",
                "network_plugin_mode": "overlay",
                "network_dataplane": "cilium",
                "network_policy": "cilium",
                "pod_cidr": AKS_POD_CIDR,
                "service_cidr": AKS_SERVICE_CIDR,
                "dns_service_ip": DNS_SERVICE_IP,
                "load_balancer_sku": "standard",
            },
            api_server_access_profile={"enable_private_cluster": cluster.private_endpoint,
                                       # Config validation allows them on a public endpoint only, as AKS does.
                                       **({"authorized_ip_ranges": list(cluster.authorized_networks)}
                                          if cluster.authorized_networks else {})},
            oidc_issuer_profile={"enabled": True},
            security_profile={"workload_identity": {"enabled": True}},
            aad_profile=_aad_profile(extras) if aad else None,
            disable_local_accounts=config.production,
            auto_scaler_profile=None if nap else AUTOSCALER_PROFILE,
            node_provisioning_profile=karpenter.NODE_PROVISIONING_PROFILE if nap else None,
            # The autoscaler owns the system pool's node count after creation (under NAP nobody but the stack does).
            opts=pulumi.ResourceOptions(parent=self, protect=config.protected,
                                        ignore_changes=[] if nap else ["agentPoolProfiles[0].count"]),
        )
        ready: list[pulumi.Resource] = [managed]
        if aad:
            ready.append(self._deployer_admin(name, config, managed))

        self._nap = None
        if nap:
            self.pools = karpenter.nap_pools(name, config, prof, pulumi.ResourceOptions(parent=self))
            self._nap = karpenter.nap_target(self.pools, cluster.region, zones, ready)
        else:
            self.pools = {pool.name: self._gpu_pool(name, config, pool, prof, managed, group_name, subnet_id, zones)
                          for pool in config.gpu_pools}
        self._gpu_pools = config.gpu_pools
        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=group_name, resource_name=cluster.name, format="exec" if aad else None,
            opts=pulumi.InvokeOutputOptions(parent=self, depends_on=ready))
        kubeconfig = credentials.kubeconfigs.apply(lambda kcs: kubeconfig_from_credentials(kcs, aad))
        self._finish(name, kubeconfig, cluster.name)

    def node_provisioner(self) -> karpenter.KarpenterTarget | None:
        return self._nap

    def managed_expander_priorities(self) -> dict[str, list[str]] | None:
        """AKS's own autoscaler names node groups by scale set, `aks-<pool>-<digits>-vmss`: anchored on both ends, a
        pool's pattern never matches another pool's. None under NAP: no pool is autoscaled."""
        if self._nap is not None:
            return None
        return expander_priorities(self._gpu_pools, lambda pool: f"^aks-{re.escape(pool.cloud_name)}-[0-9]+-vmss$")

    def _network(self, name: str, config: PlatformConfig, group_name: pulumi.Input[str]) -> pulumi.Output[str]:
        """A VNet and node subnet; pods and services use overlay ranges outside it."""
        cidr = config.cluster.extras.get("vnetCidr", DEFAULT_VNET_CIDR)
        vnet_range = ipaddress.ip_network(cidr)
        vnet_name = f"{config.cluster.name}-vnet"
        child = pulumi.ResourceOptions(parent=self)
        vnet = network.VirtualNetwork(f"{name}-vnet", virtual_network_name=vnet_name, resource_group_name=group_name,
                                      location=config.cluster.region, address_space={"address_prefixes": [cidr]},
                                      opts=child)
        # Nodes take the first /18 (16k nodes; the first half of a smaller VNet), leaving room for other subnets.
        node_range = next(vnet_range.subnets(new_prefix=max(vnet_range.prefixlen + 1, 18)))
        subnet = network.Subnet(f"{name}-nodes", subnet_name="nodes", resource_group_name=group_name,
                                virtual_network_name=vnet.id.apply(lambda _: vnet_name),
                                address_prefix=str(node_range), opts=child)
        return subnet.id

    def _deployer_admin(self, name: str, config: PlatformConfig,
                        managed: containerservice.ManagedCluster) -> pulumi.Resource:
        """Kubernetes cluster-admin, through Azure RBAC, for whoever runs `pulumi up`: later layers need it."""
        client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
        return authorization.RoleAssignment(
            f"{name}-deployer-admin",
            principal_id=client.object_id,
            # Azure rejects an assignment whose principalType does not match the principal.
            principal_type=config.cluster.extras.get("deployerPrincipalType", "User"),
            role_definition_id=client.subscription_id.apply(
                lambda sub: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{AKS_RBAC_CLUSTER_ADMIN}"),
            scope=managed.id,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _gpu_pool(self, name: str, config: PlatformConfig, pool: GpuPool, prof: CloudProfile,
                  managed: containerservice.ManagedCluster, group_name: pulumi.Input[str],
                  subnet_id: pulumi.Input[str], zones: list[str] | None) -> GpuNodePool:
        pool_name = f"{name}-{pool.name}"
        node_pool = GpuNodePool(pool_name, GpuNodePoolArgs.from_config(config, pool, prof),
                                opts=pulumi.ResourceOptions(parent=self))
        # spotMaxPrice -1: pay up to the on-demand price, so nodes are evicted for capacity only, never for price.
        spot = {"scale_set_priority": "Spot", "scale_set_eviction_policy": "Delete",
                "spot_max_price": -1} if pool.capacity_type == "spot" else {}
        agent_pool = containerservice.AgentPool(
            f"{pool_name}-agentpool",
            agent_pool_name=pool.cloud_name,
            resource_group_name=group_name,
            resource_name_=config.cluster.name,
            mode="User",
            os_type="Linux",
            os_sku="Ubuntu",
            type="VirtualMachineScaleSets",
            vm_size=pool.instance_type,
            count=pool.min_nodes,
            min_count=pool.min_nodes,
            max_count=pool.max_nodes,
            enable_auto_scaling=True,
            node_taints=[node_taint(t, prof) for t in node_pool.taints],
            node_labels=node_pool.labels,
            gpu_profile={"driver": "Install" if pool.driver == "managed" else "None"},
            gpu_instance_profile=gpu_instance_profile(pool),
            availability_zones=pool_zones(pool, zones),
            vnet_subnet_id=subnet_id,
            **spot,
            # The autoscaler owns the node count after creation.
            # The pool name is its ARM resource name (and at most 12 characters, no room for a generation suffix):
            # a replacement must delete the old pool before creating the new one under the same name.
            opts=pulumi.ResourceOptions(parent=node_pool, depends_on=[managed], ignore_changes=["count"],
                                        delete_before_replace=True),
        )
        node_pool.finish({"agentPoolName": agent_pool.name})
        return node_pool


def _aad_profile(extras: dict) -> dict:
    """AKS-managed Entra ID with Azure RBAC, so role assignments (not local accounts) grant Kubernetes access."""
    aad = {"managed": True, "enable_azure_rbac": True}
    if "tenantId" in extras:
        aad["tenant_id"] = extras["tenantId"]
    if "adminGroupObjectIds" in extras:
        aad["admin_group_object_ids"] = extras["adminGroupObjectIds"]
    return aad

