"""OKE: an ENHANCED cluster on flannel overlay pod networking, a system node pool and one tainted node pool per GPU pool."""
from __future__ import annotations

import json

import pulumi
import pulumi_oci.containerengine as ce
import pulumi_oci.identity as identity
import yaml

from components.provisioning.cluster_autoscaler.priorities import exact_pattern, expander_priorities
from components.provisioning.cluster_autoscaler.values import NAMESPACE as AUTOSCALER_NAMESPACE
from components.provisioning.cluster_autoscaler.values import SERVICE_ACCOUNT as AUTOSCALER_SERVICE_ACCOUNT
from components.clouds.base import GpuNodePool, GpuNodePoolArgs, PlatformCluster
from components.clouds.oci import rdma
from components.clouds.oci.network import OkeNetwork
from components.clouds.oci.nodes import (GPU_BOOT_VOLUME_GB, POD_NETWORK, SYSTEM_SHAPE_CONFIG, node_pool,
                                         register_with_taints)
from components.clouds.oci.facts import OKE_POD_CIDR, OKE_SERVICE_CIDR, PROFILE
from components.config.model import PlatformConfig
from components.system_pool import SYSTEM_TAINT

SYSTEM_POOL = "system"
# What the Cluster Autoscaler does on OKE node pools with instance principals (OKE docs, "Using the Kubernetes
# Cluster Autoscaler"): resize pools, create and delete their instances, and place their VNICs.
AUTOSCALER_PERMISSIONS = ("manage cluster-node-pools", "manage instance-family", "use subnets",
                          "read virtual-network-family", "use vnics", "inspect compartments")
# OKE's own NVIDIA device plugin add-on: on an enhanced cluster it advertises nvidia.com/gpu next to the GPU
# Operator's plugin unless something takes it over.
NVIDIA_PLUGIN_ADDON = "NvidiaGpuPlugin"
# A node label no node carries: the add-on's DaemonSet, selected by it, runs nowhere.
NVIDIA_PLUGIN_OFF_SELECTOR = {"gpu-platform.io/oke-nvidia-gpu-plugin": "enabled"}


def workload_condition(cluster_id: str) -> str:
    """The IAM condition that matches only the Cluster Autoscaler's service account in this one cluster."""
    return (f"ALL {{request.principal.type = 'workload', request.principal.namespace = '{AUTOSCALER_NAMESPACE}', "
            f"request.principal.service_account = '{AUTOSCALER_SERVICE_ACCOUNT}', "
            f"request.principal.cluster_id = '{cluster_id}'}}")


class OkeCluster(PlatformCluster):
    """An OKE cluster with a system node pool and GPU node pools that the Cluster Autoscaler resizes."""

    TYPE = "gpu-platform:oci:OkeCluster"

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"clusterName": config.cluster.name, "region": config.cluster.region}, opts)
        prof = PROFILE
        extras = config.cluster.extras
        compartment = extras["compartmentId"]
        child = pulumi.ResourceOptions(parent=self)
        self._region = config.cluster.region
        version = prof.kubernetes_api_version(config.cluster.kubernetes_version)
        private = config.cluster.private_endpoint

        network = OkeNetwork(f"{name}-network", config, opts=child)
        self.cluster = ce.Cluster(
            f"{name}-cluster",
            compartment_id=compartment,
            name=config.cluster.name,
            kubernetes_version=version,
            vcn_id=network.vcn_id,
            # ENHANCED: workload identity, managed add-ons (NvidiaGpuOperator) and a financially backed SLA;
            # BASIC clusters have none of them.
            type="ENHANCED_CLUSTER",
            endpoint_config=ce.ClusterEndpointConfigArgs(subnet_id=network.endpoint_subnet_id,
                                                         is_public_ip_enabled=not private,
                                                         nsg_ids=network.endpoint_nsg_ids or None),
            # Flannel, not VCN-native: NetworkPolicy needs Calico, and the operator's only layout that leaves pod
            # routing to OKE's CNI is Calico's CNI on host-local IPAM over each node's podCIDR, which flannel has.
            cluster_pod_network_options=[ce.ClusterClusterPodNetworkOptionArgs(cni_type=POD_NETWORK)],
            options=ce.ClusterOptionsArgs(
                service_lb_subnet_ids=[network.lb_subnet_id],
                kubernetes_network_config=ce.ClusterOptionsKubernetesNetworkConfigArgs(
                    pods_cidr=OKE_POD_CIDR, services_cidr=OKE_SERVICE_CIDR)),
            opts=child,
        )

        plugin_off = self._nvidia_plugin_off(name, child)
        ads = self._availability_domains(extras)
        common = {"cluster": self.cluster, "compartment": compartment, "version": version, "ads": ads,
                  "node_subnet": network.node_subnet_id}
        system = config.cluster.system_pool
        self.system_pool = node_pool(
            f"{name}-{SYSTEM_POOL}", f"{config.cluster.name}-{SYSTEM_POOL}", shape=system.instance_type,
            image=extras["imageId"], size=system.min_nodes, labels={},
            # OKE node pools have no taint field: the kubelet taints the node as it registers (cloud-init).
            kubelet_args=register_with_taints([SYSTEM_TAINT], prof.taint_effects),
            shape_config=SYSTEM_SHAPE_CONFIG if system.instance_type.endswith(".Flex") else None,
            opts=child, **common)

        self.pools = {}
        self._node_pools: dict[str, ce.NodePool] = {}
        rdma_pools = [p for p in config.gpu_pools if p.fabric == "rdma"]
        join = (rdma.join_policy(name, self.cluster, config.cluster.name, compartment, extras["tenancyId"], child)
                if rdma_pools else None)
        for pool in config.gpu_pools:
            gpu_pool = GpuNodePool(f"{name}-{pool.cloud_name}", GpuNodePoolArgs.from_config(config, pool, prof),
                                   opts=child)
            if pool.fabric == "rdma":
                # A cluster network is not an OKE node pool: its nodes join as self-managed nodes, only once they
                # may (the join policy) and once OKE's GPU plugin is pinned away.
                _, nodes_network = rdma.cluster_network(
                    f"{name}-{pool.cloud_name}", pool, compartment=compartment, version=version,
                    image=extras["rdmaImageId"], ad=ads.apply(lambda found: found[0]),
                    node_subnet=network.node_subnet_id,
                    endpoint=self.cluster.endpoints.apply(lambda eps: eps[0].private_endpoint.rsplit(":", 1)[0]),
                    ca_cert=self._ca_cert(private=True),
                    extra_args=rdma.kubelet_args(gpu_pool.taints, gpu_pool.labels, prof.taint_effects),
                    boot_volume_gb=GPU_BOOT_VOLUME_GB,
                    opts=pulumi.ResourceOptions(parent=gpu_pool, depends_on=[plugin_off, join]))
                gpu_pool.finish({"clusterNetworkId": nodes_network.id})
                self.pools[pool.name] = gpu_pool
                continue
            nodes = node_pool(
                f"{name}-{pool.cloud_name}-np", pool.cloud_name, shape=pool.instance_type,
                # The GPU image carries the driver; an operator-owned pool boots the plain image so the GPU
                # Operator's driver is the only one on the node.
                image=extras["gpuImageId"] if pool.driver == "managed" else extras["imageId"],
                size=pool.min_nodes, labels=gpu_pool.labels,
                kubelet_args=register_with_taints(gpu_pool.taints, prof.taint_effects),
                preemptible=pool.capacity_type == "spot", boot_volume_gb=GPU_BOOT_VOLUME_GB,
                # GPU nodes join only once OKE's plugin is pinned away, so it never advertises their GPUs.
                opts=pulumi.ResourceOptions(parent=gpu_pool, depends_on=[plugin_off]), **common)
            gpu_pool.finish({"nodePoolId": nodes.id})
            self.pools[pool.name] = gpu_pool
            self._node_pools[pool.name] = nodes

        self._autoscaler_iam(name, config, compartment, child)
        # The Cluster Autoscaler resizes node pools only; a cluster network keeps the size it was given.
        self._gpu_pools = tuple(p for p in config.gpu_pools if p.name in self._node_pools)
        self._system = system
        self._finish(name, self._kubeconfig(config), self.cluster.name)

    def _availability_domains(self, extras: dict) -> pulumi.Output[list[str]]:
        if "availabilityDomain" in extras:
            return pulumi.Output.from_input([extras["availabilityDomain"]])
        ads = identity.get_availability_domains_output(compartment_id=extras["compartmentId"],
                                                       opts=pulumi.InvokeOutputOptions(parent=self))
        return ads.availability_domains.apply(lambda found: sorted(ad.name for ad in found))

    def _nvidia_plugin_off(self, name: str, opts: pulumi.ResourceOptions) -> ce.Addon:
        """OKE's NvidiaGpuPlugin add-on taken over and pinned to no node: the GPU Operator's device plugin is the
        only one. The add-on API has no disabled state (disabling is deleting it), so the stack owns it instead."""
        return ce.Addon(
            f"{name}-nvidia-gpu-plugin", cluster_id=self.cluster.id, addon_name=NVIDIA_PLUGIN_ADDON,
            # Enhanced clusters install it themselves: take that installation over rather than fail on it.
            override_existing=True,
            # Deleting this resource removes the plugin's DaemonSet too, never leaving it to advertise GPUs.
            remove_addon_resources_on_delete=True,
            configurations=[ce.AddonConfigurationArgs(key="nodeSelectors",
                                                      value=json.dumps(NVIDIA_PLUGIN_OFF_SELECTOR))],
            opts=opts)

    def _autoscaler_iam(self, name: str, config: PlatformConfig, compartment: str,
                        opts: pulumi.ResourceOptions) -> None:
        """Workload-identity rights for the Cluster Autoscaler's service account in this cluster only.

        Instance principals would grant every instance of the compartment (OKE nodes carry no tag of their own a
        dynamic group could match) and every pod on those nodes; a workload principal is one service account."""
        self.autoscaler_policy = identity.Policy(
            f"{name}-autoscaler", compartment_id=compartment, name=f"{config.cluster.name}-cluster-autoscaler",
            description=f"Cluster Autoscaler of OKE cluster {config.cluster.name} resizes its node pools",
            statements=[self.cluster.id.apply(lambda cluster_id, p=p: f"Allow any-user to {p} in compartment id "
                                                                       f"{compartment} where "
                                                                       f"{workload_condition(cluster_id)}")
                        for p in AUTOSCALER_PERMISSIONS],
            opts=opts)

    def _kubeconfig(self, config: PlatformConfig) -> pulumi.Output[str]:
        """A kubeconfig for the endpoint this stack uses, authenticating through the OCI CLI."""
        private = config.cluster.private_endpoint
        endpoint = self.cluster.endpoints.apply(
            lambda eps: eps[0].private_endpoint if private else eps[0].public_endpoint)
        ca = self._ca_cert(private)
        return pulumi.Output.all(self.cluster.id, endpoint, ca).apply(
            lambda args: build_kubeconfig(config.cluster.name, args[0], args[1], args[2], config.cluster.region))

    def _ca_cert(self, private: bool) -> pulumi.Output[str]:
        """The cluster CA (base64), which OKE exposes only inside its generated kubeconfig, not as an output."""
        generated = ce.get_cluster_kube_config_output(
            cluster_id=self.cluster.id, endpoint="PRIVATE_ENDPOINT" if private else "PUBLIC_ENDPOINT",
            opts=pulumi.InvokeOutputOptions(parent=self))
        return generated.content.apply(
            lambda content: yaml.safe_load(content)["clusters"][0]["cluster"]["certificate-authority-data"])

    def autoscaler_values(self) -> dict:
        """The OCI part of the cluster-autoscaler chart values: every node pool by OCID, workload identity."""
        groups = [{"name": self._node_pools[p.name].id, "minSize": p.min_nodes, "maxSize": p.max_nodes}
                  for p in self._gpu_pools]
        groups.append({"name": self.system_pool.id, "minSize": self._system.min_nodes,
                       "maxSize": self._system.max_nodes})
        return {
            "cloudProvider": "oci",
            "autoscalingGroups": groups,
            # The autoscaler authenticates as its own service account (OKE workload identity, resource principal
            # v2.2), allowed by the workload policy; never as the node it runs on.
            "extraEnv": {"OCI_USE_WORKLOAD_IDENTITY": "true", "OCI_RESOURCE_PRINCIPAL_VERSION": "2.2",
                         "OCI_RESOURCE_PRINCIPAL_REGION": self._region,
                         "OCI_REGION": self._region},
            # OKE node group ids are OCIDs, which never contain pool names: match each pool's id exactly.
            "expanderPriorities": expander_priorities(
                self._gpu_pools, lambda pool: exact_pattern(self._node_pools[pool.name].id)),
            # These labels differ on every OKE node; ignored, pools of one shape count as similar and balance
            # (OKE docs' recommended autoscaler flags).
            "extraArgs": {f"balancing-ignore-label_{i}": label for i, label in enumerate(
                ("displayName", "hostname", "internal_addr", "oci.oraclecloud.com/fault-domain"), start=1)},
        }


def build_kubeconfig(cluster_name: str, cluster_id: str, endpoint: str, ca_data: str, region: str) -> str:
    """The kubeconfig `oci ce cluster create-kubeconfig` writes: short-lived tokens from the OCI CLI."""
    user = f"{cluster_name}-user"
    return json.dumps({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {"server": f"https://{endpoint}",
                                                        "certificate-authority-data": ca_data}}],
        "users": [{"name": user, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "oci",
            "args": ["ce", "cluster", "generate-token", "--cluster-id", cluster_id, "--region", region],
        }}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": user}}],
        "current-context": cluster_name,
    }, indent=2)
