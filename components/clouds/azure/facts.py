"""Azure facts: the AKS row of the cloud table, its regions and `cluster.azure` keys, and the InfiniBand fabric
record. Free of Pulumi and the Azure SDK (config validation reads it)."""
from __future__ import annotations

import ipaddress
import re

from components.clouds.facts import (K8S_EFFECTS, CloudProfile, ExtraKey, Fabric, NcclTestImage, PoolNaming,
                                     created_network_cidr, minors)
from components.pins import PINS


_GUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def _guid_list(value: list) -> str | None:
    bad = [v for v in value if not isinstance(v, str) or not re.fullmatch(_GUID, v)]
    return f"must list Entra ID group object ids (GUIDs); not: {', '.join(map(repr, bad))}" if bad else None


# AKS overlay ranges (components/clouds/azure/cluster.py): pods and services live outside the VNet, which must not overlap them.
AKS_POD_CIDR = "192.168.0.0/16"
AKS_SERVICE_CIDR = "172.16.0.0/16"


def _aks_vnet_size(net: ipaddress.IPv4Network) -> str | None:
    for what, other in (("pod", AKS_POD_CIDR), ("service", AKS_SERVICE_CIDR)):
        if net.overlaps(ipaddress.IPv4Network(other)):
            return f"{net} overlaps the AKS overlay {what} range {other}; pick another range"
    # AksCluster gives nodes the first /18 (or the first half of a smaller VNet).
    return None if net.prefixlen <= 24 else f"must be a /24 or larger; got /{net.prefixlen}"


_aks_vnet_cidr = created_network_cidr("10.224.0.0/16", _aks_vnet_size)


def _azure_zones(value: list) -> str | None:
    bad = [z for z in value if str(z) not in ("1", "2", "3")]
    return f"Azure availability zones are \"1\", \"2\" and \"3\"; not: {', '.join(map(repr, bad))}" if bad else None


def _entra_group(value: str) -> str | None:
    return None if re.fullmatch(_GUID, value) else (
        f"{value!r:.80} is not an Entra ID group object id (GUID), as AKS-managed Entra ID RBAC binds groups by "
        "object id")


# Azure's public regions on REGIONS_AS_OF, with its China and government ones.
_REGIONS = (
    "eastus", "eastus2", "westus", "westus2", "westus3", "centralus", "northcentralus", "southcentralus",
    "westcentralus", "canadacentral", "canadaeast", "brazilsouth", "brazilsoutheast", "mexicocentral", "chilecentral",
    "northeurope", "westeurope", "uksouth", "ukwest", "francecentral", "francesouth", "germanywestcentral",
    "germanynorth", "switzerlandnorth", "switzerlandwest", "norwayeast", "norwaywest", "swedencentral", "swedensouth",
    "polandcentral", "italynorth", "spaincentral", "austriaeast", "belgiumcentral", "australiaeast",
    "australiasoutheast", "australiacentral", "australiacentral2", "eastasia", "southeastasia", "japaneast",
    "japanwest", "koreacentral", "koreasouth", "centralindia", "southindia", "westindia", "jioindiawest",
    "jioindiacentral", "uaenorth", "uaecentral", "qatarcentral", "israelcentral", "southafricanorth",
    "southafricawest", "newzealandnorth", "indonesiacentral", "malaysiawest",
    "usgovvirginia", "usgovarizona", "usgovtexas", "chinaeast2", "chinaeast3", "chinanorth2", "chinanorth3",
)


# InfiniBand on AKS ND pools (Azure/aks-rdma-infiniband, "Network Operator" and "GPU Drivers" guides): the NVIDIA
# Network Operator's NicClusterPolicy runs the DOCA/OFED driver container and the SR-IOV device plugin, which
# advertises each InfiniBand NIC as rdma/ib (one per GPU on ND sizes). The policy's device plugin runs the chart's
# own release (fabric.py, which the record's installer loads).
# NCCL_NET=IB selects NCCL's own InfiniBand transport (not a plugin the image may carry) and fails instead of falling
# back to TCP; NCCL_NET_GDR_LEVEL=SYS is Azure's nccl-tests setting, which lets NCCL use GPUDirect RDMA for every
# GPU-NIC pair of the VM's topology.
# cluster.azure.provisioner for node auto-provisioning (the Karpenter AKS runs).
NAP = "nap"


def _network_operator():
    from components.clouds.azure.fabric import install  # Pulumi: only a stack installing the fabric loads it
    return install


_INFINIBAND = Fabric(name="infiniband", resource="rdma/ib", chart="network-operator",
                     repository="https://helm.ngc.nvidia.com/nvidia", version=PINS["network-operator"].version,
                     namespace="network-operator",
                     env=(("NCCL_NET", "IB"), ("NCCL_NET_GDR_LEVEL", "SYS"), ("NCCL_DEBUG", "INFO")),
                     installer=_network_operator, peer_memory_by_operator=True)


# Microsoft publishes no version-tagged nccl-tests image: Azure/aks-rdma-infiniband's ghcr.io/azure/aks-rdma-infiniband/
# nccl-tests and Azure/ai-infrastructure-on-azure's ghcr.io/azure/ai-infrastructure-on-azure/nccl-test are pushed as
# `latest` (and branch names) only, and mcr.microsoft.com/aznhc/aznhc-nv (Azure/azurehpc-health-checks) is `latest`,
# without sshd. AKS pools, InfiniBand or not, run NVIDIA's NGC PyTorch image instead, the one Microsoft's own AKS NCCL
# image builds on (ai-infrastructure-on-azure infrastructure_validations/aks/NCCL/docker/Dockerfile: FROM
# nvcr.io/nvidia/pytorch, plus openssh-server). 25.06-py3 carries nccl-tests' MPI builds as
# /usr/local/bin/<test>_perf_mpi and Open MPI at /usr/local/mpi/bin (NVIDIA/aicr validators/performance/testdata/
# b200/any/runtime.yaml; NVIDIA CloudAI's NcclTest, docs.nvidia.com/networking/cloudai, runs all_reduce_perf_mpi in
# nvcr.io/nvidia/pytorch:25.06-py3), but no sshd: each rank installs openssh-server from Ubuntu first, as aicr's
# runtime does (so the team needs internet egress).
_NGC_NCCL_TESTS = NcclTestImage(
    image="nvcr.io/nvidia/pytorch:25.06-py3",
    binary="/usr/local/bin/all_reduce_perf_mpi",
    source="NVIDIA's NGC PyTorch image, the base of Microsoft's AKS NCCL image in Azure/ai-infrastructure-on-azure; "
           "Microsoft publishes none with a version tag",
    setup="apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
          "openssh-server",
    mpirun="/usr/local/mpi/bin/mpirun")


PROFILE = CloudProfile(
    name="azure",
    service="AKS",
    cluster_resource_suffix="aks",
    taint_effects=K8S_EFFECTS,
    driver_owners=("managed", "operator"),
    default_driver="managed",
    # AKS Linux agent pool names: lowercase letters and digits, start with a letter, at most 12.
    pool_naming=PoolNaming(max_len=12, pattern=r"[a-z][a-z0-9]{0,11}", drop_hyphens=True),
    default_system_instance="Standard_D8s_v5",
    # AKS supported-kubernetes-versions: cluster creation only on the three community-supported GA minors (N-2), each
    # for 12 months from its GA about three months after upstream (1.32: GA Mar 2025, EOL Mar 2026), so 1.34 ended
    # about Nov 2026; 1.35 and 1.36 remain.
    kubernetes_versions=minors("1.35", "1.36"),
    # ManagedCluster.kubernetesVersion takes a minor (AKS picks the newest patch) or a full patch version.
    kubernetes_version_form="minor-or-patch",
    regions=_REGIONS,
    extras={
        "resourceGroup": ExtraKey(str, "existing resource group; omit to create one"),
        "vnetSubnetId": ExtraKey(str, "existing subnet id for nodes; omit to create a VNet"),
        "vnetCidr": ExtraKey(str, "address space of the VNet created when vnetSubnetId is omitted",
                             check=_aks_vnet_cidr),
        "tenantId": ExtraKey(str, "Entra ID tenant for AKS-managed AAD"),
        "adminGroupObjectIds": ExtraKey(list, "Entra ID groups that administer the cluster", check=_guid_list),
        "zones": ExtraKey(list, "availability zones for the system and GPU pools, e.g. [\"1\", \"2\"] (GPU sizes "
                                "are not in every zone)", check=_azure_zones),
        "deployerPrincipalType": ExtraKey(str, "who runs pulumi up on an Entra ID cluster: User (default) or "
                                               "ServicePrincipal; it is granted Kubernetes cluster-admin",
                                          choices=("User", "ServicePrincipal")),
        "provisioner": ExtraKey(str, "who makes GPU nodes: pool (default; an autoscaled agent pool per GPU pool) "
                                     "or nap (node auto-provisioning: AKS-run Karpenter, a NodePool and "
                                     "AKSNodeClass per GPU pool)", choices=("pool", NAP)),
    },
    driver_note="AKS installs the driver unless the pool sets gpuProfile.driver=None",
    # AKS partitions GPUs itself from the pool's gpuInstanceProfile (MIG1g..MIG7g), fixed at creation.
    mig_via="pool",
    mig_pool_field="gpuInstanceProfile",
    # MIGNg selects the first profile with N compute slices; AKS has no way to ask for any other.
    mig_by_slices=True,
    # AKS creates MIG instances while installing its own driver; gpuProfile.driver=None skips both.
    pool_sharing_needs_managed_driver=True,
    # AKS convention for GPU pools (REFERENCE section 2): keeps non-GPU pods off by a second, well-known taint.
    extra_gpu_taints=(("sku", "gpu", "NoSchedule"),),
    # AKS adds this taint to every spot pool itself; declared so the operator tolerates it and state does not drift.
    spot_taints=(("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule"),),
    # AKS GPU node images bring the NVIDIA container runtime along with the driver they install.
    image_ships_toolkit=True,
    # AKS refuses authorized IP ranges on a private cluster.
    authorized_networks_public_only=True,
    # No IPv6 in authorizedIPRanges: our IPv4 clusters' API server has only an IPv4 address to allow.
    authorized_networks_ipv6=False,
    # AKS GPU nodes define only this containerd handler; with the default `nvidia` no operand pod starts.
    operator_runtime_class="nvidia-container-runtime",
    region_pattern=r"[a-z]+[a-z0-9]*",
    region_example="eastus2",
    # Constrained-vCPU sizes put the active vCPUs after a hyphen (Standard_E16-8s_v5, Standard_DS13-2_v2).
    instance_type_pattern=r"Standard_[A-Za-z]+[0-9]+(-[0-9]+)?[A-Za-z]*(_[A-Za-z0-9]+)*",
    instance_type_example="Standard_D8s_v5",
    # AKS node pools hold at most 1000 nodes (maxCount).
    max_pool_nodes=1000,
    # Node auto-provisioning (components/clouds/azure/karpenter.py): AKS runs Karpenter, whose NodePools buy
    # spot and on-demand VMs only.
    provisioner_key="provisioner",
    # Node auto-provisioning is Karpenter, run by AKS: the Karpenter provisioner's checks and NodePools.
    provisioner_kinds={NAP: "karpenter"},
    provisioner_unsupported_capacity=("reserved",),
    provisioner_capacity_note="a reserved pool is an agent pool preferred by the autoscaler's priority "
                              "expander, which NAP does not run; Azure reservations discount on-demand VMs anyway",
    # InfiniBand links only the VMs of one scale set; NAP creates each node as a VM of its own.
    provisioner_refuses_fabric=True,
    provisioner_fabric_note="InfiniBand links only the VMs of one scale set, and NAP creates every node as a "
                            "standalone VM",
    # AKS-managed Entra ID RBAC binds groups by object id, not by name.
    team_group_check=_entra_group,
    # AKS documents no block or rack label on its nodes (ND InfiniBand VMs included): Kueue TAS can place by
    # hostname only (network_topology None).
    # ND pools get InfiniBand through the NVIDIA Network Operator; one agent pool is one scale set, the unit
    # Azure wires into one InfiniBand fabric (docs/azure.md).
    fabrics={"infiniband": _INFINIBAND},
    nccl_test=_NGC_NCCL_TESTS,
)
