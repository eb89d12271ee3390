"""AKS GPU pools made by node auto-provisioning (`cluster.azure.provisioner: nap`): AKS runs Karpenter itself, and
each GPU pool becomes one AKSNodeClass and one Karpenter NodePool, from the same facts as its agent pool would be.

Sources: AKSNodeClass fields from Azure/karpenter-provider-azure pkg/apis/crds/karpenter.azure.com_aksnodeclasses.yaml
(served as karpenter.azure.com/v1beta1, v1alpha2 deprecated); NAP's limits and networking from MicrosoftDocs
azure-aks-docs articles/aks/node-auto-provisioning*.md; the NodePool is karpenter.sh/v1, as on EKS.
"""
from __future__ import annotations

from typing import Any

import pulumi

from components.clouds.base import GpuNodePool, GpuNodePoolArgs
from components.clouds.facts import CloudProfile
from components.config.model import NodePool, PlatformConfig
from components.clouds.azure.facts import NAP
from components.provisioning.karpenter import component as karpenter
from components.provisioning.karpenter.component import KarpenterTarget

NODE_CLASS_GROUP = "karpenter.azure.com"
NODE_CLASS_API = f"{NODE_CLASS_GROUP}/v1beta1"
NODE_CLASS_KIND = "AKSNodeClass"
ZONE_LABEL = "topology.kubernetes.io/zone"
MANAGED_BY = "AKS node auto-provisioning"

# managedCluster.nodeProvisioningProfile: Karpenter run by AKS, and none of its default NodePools (a general-purpose
# D-family pool and system-surge), so nodes come only from the NodePools the stack declares.
NODE_PROVISIONING_PROFILE = {"mode": "Auto", "default_node_pools": "None"}

# What NAP supports (azure-aks-docs node-auto-provisioning-networking.md, node-auto-provisioning.md): Azure CNI with
# overlay or node-subnet IPAM (not kubenet, not dynamic pod-subnet IP allocation), no Calico network policy, a
# Standard load balancer, a managed identity. AksCluster builds overlay + Cilium, the combination Microsoft recommends.
SUPPORTED_NETWORK = {
    "networkPlugin": ("azure",),
    "networkPluginMode": ("overlay", None),  # None: node subnet
    "networkPolicy": ("cilium", "azure", "none", None),
    "loadBalancerSku": ("standard",),
}
SUPPORTED_IDENTITY = ("SystemAssigned", "UserAssigned")

# AKSNodeClass `gpu.mode`: Driver (AKS installs the NVIDIA driver, the default) or None (the GPU Operator does).
GPU_MODES = {"managed": "Driver", "operator": "None"}
# Cilium clusters need both in every NodePool (Azure/karpenter-provider-azure#1442; NAP's default NodePools carry
# them): the label lets Karpenter count the Cilium DaemonSet's overhead, and the startup taint, which the agent
# removes once ready, stops Karpenter launching a second node for pods it briefly keeps off.
CILIUM_LABELS = {"kubernetes.azure.com/ebpf-dataplane": "cilium"}
CILIUM_STARTUP_TAINT = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}
# Azure tag names may not contain '/', so not the label key.
POOL_TAG = "gpu-platform-pool"


def network_problems(network_profile: dict[str, Any], identity: dict[str, Any]) -> list[str]:
    """What in a ManagedCluster's networkProfile and identity (wire inputs, camelCase) NAP does not support; empty
    when all of it is. The offline plan of every NAP stack is checked with it (tests/clouds/test_aks_nap.py)."""
    problems = [f"networkProfile.{key} {network_profile.get(key)!r} is not supported by node auto-provisioning; "
                f"allowed: {', '.join(str(v) for v in allowed)}"
                for key, allowed in SUPPORTED_NETWORK.items() if network_profile.get(key) not in allowed]
    if identity.get("type") not in SUPPORTED_IDENTITY:
        problems.append(f"identity.type {identity.get('type')!r} is not supported by node auto-provisioning; "
                        f"allowed: {', '.join(SUPPORTED_IDENTITY)}")
    return problems


def node_class_spec(pool: GpuNodePool) -> dict[str, Any]:
    """The AKSNodeClass: Ubuntu, as the agent pools' osSKU; who installs the driver, as their gpuProfile.driver.
    No vnetSubnetID: NAP nodes join the cluster's node subnet, that of the system pool."""
    return {
        "imageFamily": "Ubuntu",
        "gpu": {"mode": GPU_MODES[pool.args.driver]},
        "tags": {POOL_TAG: pool.args.pool_name},
    }


def node_pool_spec(pool: GpuNodePool, zones: list[str]) -> dict[str, Any]:
    """The NodePool EKS gets (karpenter.node_pool_spec) on an AKSNodeClass, with Cilium's label and startup taint,
    held to the stack's zones."""
    zonal = [{"key": ZONE_LABEL, "operator": "In", "values": zones}] if zones else []
    return karpenter.node_pool_spec(pool, NODE_CLASS_GROUP, NODE_CLASS_KIND, {**pool.labels, **CILIUM_LABELS},
                                    extra_requirements=zonal, startup_taints=[CILIUM_STARTUP_TAINT])


def nap_zones(region: str, zones: list[str] | None) -> list[str]:
    """`cluster.azure.zones` ("1", "2") as Karpenter's zone label spells them on Azure: <region>-<zone>."""
    return [f"{region}-{zone}" for zone in zones or []]


def nap_target(pools: dict[str, GpuNodePool], region: str, zones: list[str] | None, ready: list) -> KarpenterTarget:
    """Everything the Karpenter layer creates for a NAP cluster: no chart (AKS runs the controller and its CRDs),
    one AKSNodeClass and NodePool per GPU pool."""
    spelled = nap_zones(region, zones)
    return KarpenterTarget(
        values={}, node_class_api=NODE_CLASS_API, node_class_kind=NODE_CLASS_KIND,
        node_classes={name: node_class_spec(pool) for name, pool in pools.items()},
        node_pools={name: node_pool_spec(pool, spelled) for name, pool in pools.items()},
        pools=pools, ready=ready, managed_by=MANAGED_BY)


def system_pool_scaling(system_pool: NodePool, nap: bool) -> dict[str, Any]:
    """The system agent pool's size: autoscaled between min and max, or under NAP (which AKS refuses beside any pool
    with enableAutoScaling) fixed at minNodes, as EKS's system node group under Karpenter."""
    if nap:
        return {"count": system_pool.min_nodes, "enable_auto_scaling": False}
    return {"count": system_pool.min_nodes, "min_count": system_pool.min_nodes, "max_count": system_pool.max_nodes,
            "enable_auto_scaling": True}


def nap_pools(name: str, config: PlatformConfig, prof: CloudProfile,
              opts: pulumi.ResourceOptions) -> dict[str, GpuNodePool]:
    """One GpuNodePool per GPU pool with no agent pool under it: its NodePool and AKSNodeClass come from the
    Karpenter layer."""
    pools = {}
    for spec in config.gpu_pools:
        pool = GpuNodePool(f"{name}-{spec.name}", GpuNodePoolArgs.from_config(config, spec, prof), opts=opts)
        pool.finish({"provisioner": NAP})
        pools[spec.name] = pool
    return pools
