"""OCI facts: the OKE row of the cloud table, its regions and `cluster.oci` keys, and the RDMA cluster-network
fabric record. Free of Pulumi and the OCI SDK (config validation reads it)."""
from __future__ import annotations

import ipaddress
from typing import Callable

from components.clouds.facts import (K8S_EFFECTS, CloudProfile, ExtraKey, Fabric, NcclTestImage, NetworkTopology,
                                     PoolNaming, created_network_cidr)


def _ocid(kind: str) -> Callable[[str], str | None]:
    """A check that a value is an OCID of `kind` (ocid1.<kind>.<realm>...)."""
    def check(value: str) -> str | None:
        return None if value.startswith(f"ocid1.{kind}.") else f"must be a {kind} OCID (ocid1.{kind}...); got {value!r}"
    return check


def _vcn_size(net: ipaddress.IPv4Network) -> str | None:
    # OCI allows /16 to /30; OkeNetwork carves endpoint, load balancer and node subnets out of a /16.
    if net.prefixlen != 16:
        return f"must be a /16 (OkeNetwork splits it into three subnets); got /{net.prefixlen}"
    # Flannel's pod and the service ranges live outside the VCN, which must not overlap them.
    for other in (OKE_POD_CIDR, OKE_SERVICE_CIDR):
        if net.overlaps(ipaddress.IPv4Network(other)):
            return f"overlaps {other}, the cluster's flannel pod or service range; pick another /16"
    return None


# OKE's flannel pod and service ranges (its defaults), set explicitly so the VCN can be checked against them.
OKE_POD_CIDR = "10.244.0.0/16"
OKE_SERVICE_CIDR = "10.96.0.0/16"
_vcn_cidr = created_network_cidr("10.0.0.0/16", _vcn_size)


# OCI's public regions on REGIONS_AS_OF; dedicated regions (eu-dcc-*) belong to one customer each, never listed.
_REGIONS = (
    "af-johannesburg-1", "ap-batam-1", "ap-chuncheon-1", "ap-hyderabad-1", "ap-melbourne-1", "ap-mumbai-1",
    "ap-osaka-1", "ap-seoul-1", "ap-singapore-1", "ap-singapore-2", "ap-sydney-1", "ap-tokyo-1", "ca-montreal-1",
    "ca-toronto-1", "eu-amsterdam-1", "eu-frankfurt-1", "eu-jovanovac-1", "eu-madrid-1", "eu-marseille-1",
    "eu-milan-1", "eu-paris-1", "eu-stockholm-1", "eu-zurich-1", "il-jerusalem-1", "me-abudhabi-1", "me-dubai-1",
    "me-jeddah-1", "me-riyadh-1", "mx-monterrey-1", "mx-queretaro-1", "sa-bogota-1", "sa-santiago-1",
    "sa-saopaulo-1", "sa-valparaiso-1", "sa-vinhedo-1", "uk-cardiff-1", "uk-london-1", "us-ashburn-1",
    "us-chicago-1", "us-phoenix-1", "us-sanjose-1",
    "us-langley-1", "us-luke-1", "us-gov-ashburn-1", "us-gov-chicago-1", "us-gov-phoenix-1", "uk-gov-cardiff-1",
    "uk-gov-london-1",
)


# OCI RDMA cluster networks (RoCE v2): Oracle's settings for every bare-metal GPU shape (oracle-quickstart/oci-hpc-oke
# docs/recommended-nccl-rccl-parameters-by-shape.md: GID index 3 is the RoCE v2 IPv4 GID, traffic class 41 the
# lossless class); the per-shape NIC list (NCCL_IB_HCA) is in the catalog. NCCL_NET=IB fails rather than fall back to
# TCP sockets. The device plugin is Mellanox's shared RDMA plugin (the one NVIDIA's Network Operator deploys), so a
# pod gets /dev/infiniband without hostNetwork, privileged or a hostPath, which team Pod Security forbids.
# Oracle's nccl-tests image (plain NCCL, Open MPI, sshd), the one oci-hpc-oke's BM.GPU.H100.8 NCCL test manifest pins.
_OCI_NCCL_TESTS = NcclTestImage(
    image="iad.ocir.io/idxzjcdglx2s/nccl-tests:cuda-13.4.1-ubuntu-24.04-nccl-2.32.3-100526.0",
    binary="/workspace/nccl-tests/build/all_reduce_perf",
    source="Oracle's nccl-tests image, oracle-quickstart/oci-hpc-oke NCCL test manifests")


def _rdma_plugin():
    from components.clouds.oci.fabric import install  # Pulumi: only a stack installing the fabric loads it
    return install


_OCI_RDMA = Fabric(
    name="rdma", resource="rdma/oci_rdma", chart="", repository="", version="", namespace="kube-system",
    env=(("NCCL_NET", "IB"), ("NCCL_IB_GID_INDEX", "3"), ("NCCL_IB_TC", "41"), ("NCCL_IB_SL", "0"),
         ("NCCL_IB_TIMEOUT", "22"), ("NCCL_IB_SPLIT_DATA_ON_QPS", "0"), ("NCCL_DEBUG", "INFO")),
    image="ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.3",
    # Every Mellanox (PCI vendor 15b3) HCA in one shared resource; NCCL_IB_HCA then picks the RDMA ports.
    plugin_config=('{"periodicUpdateInterval": 300, "configList": [{"resourceName": "oci_rdma", "rdmaHcaMax": 64, '
                   '"selectors": {"vendors": ["15b3"]}}]}'),
    pod_units=1, labels_via_kubelet=True,
    fixed_size=True, required_extras=("tenancyId", "rdmaImageId"), unsupported_capacity=("spot",),
    installer=_rdma_plugin)


PROFILE = CloudProfile(
    name="oci",
    service="OKE",
    # No IPv6 in the endpoint NSG's rules: an IPv6 source needs an IPv6-enabled VCN, and ours has IPv4 blocks only.
    authorized_networks_ipv6=False,
    taint_effects=K8S_EFFECTS,
    driver_owners=("managed", "operator"),
    default_driver="managed",
    pool_naming=PoolNaming(max_len=255, pattern=r"[A-Za-z0-9][A-Za-z0-9_.-]*"),
    default_system_instance="VM.Standard.E5.Flex",
    extras={
        "compartmentId": ExtraKey(str, "OCI compartment OCID", required=True, check=_ocid("compartment")),
        "vcnId": ExtraKey(str, "existing VCN OCID; omit to create one",
                          requires=("nodeSubnetId", "endpointSubnetId", "serviceLbSubnetId"), check=_ocid("vcn")),
        "vcnCidr": ExtraKey(str, "CIDR of the VCN created when vcnId is omitted", check=_vcn_cidr),
        "nodeSubnetId": ExtraKey(str, "existing private node subnet OCID", requires=("vcnId",),
                                 check=_ocid("subnet")),
        # Refused, not dropped silently: an adopted network planned for VCN-native pods must be re-planned.
        "podSubnetId": ExtraKey(str, "not used: pods run on flannel overlay (docs/oci.md)",
                                check=lambda v: "OKE clusters here use flannel overlay pod networking, the only one "
                                                "Calico's policy-only install fits (docs/oci.md); pods take no "
                                                "subnet: remove it. allowed: (absent)"),
        "endpointSubnetId": ExtraKey(str, "existing API endpoint subnet OCID", requires=("vcnId",),
                                     check=_ocid("subnet")),
        "serviceLbSubnetId": ExtraKey(str, "existing load balancer subnet OCID", requires=("vcnId",),
                                      check=_ocid("subnet")),
        # Required: every stack has GPU pools, and OKE has no default GPU image to fall back to.
        "gpuImageId": ExtraKey(str, "GPU node image OCID: an OKE GPU image (Oracle Linux with the NVIDIA driver "
                                    "baked in) for the cluster's Kubernetes version", required=True,
                               check=_ocid("image")),
        "imageId": ExtraKey(str, "non-GPU OKE node image OCID for the system pool and for GPU pools with "
                                 "driver: operator", required=True, check=_ocid("image")),
        "availabilityDomain": ExtraKey(str, "one availability domain for every node pool (bare-metal GPU shapes "
                                            "and RDMA cluster networks are usually in one AD); default: all ADs"),
        # Dynamic groups live in the tenancy, not a compartment; RDMA nodes join as instance principals.
        "rdmaImageId": ExtraKey(str, "GPU node image OCID with the RDMA stack (NVIDIA driver, Mellanox OFED, OKE "
                                     "node packages), e.g. an oci-hpc-oke worker image, for fabric: rdma pools",
                                check=_ocid("image")),
        "tenancyId": ExtraKey(str, "tenancy OCID, where the dynamic group of RDMA cluster-network nodes is created "
                                   "(required with fabric: rdma)", check=_ocid("tenancy")),
    },
    driver_note="OKE GPU images ship the driver (driver: managed); driver: operator pools boot the non-GPU "
                "cluster.oci.imageId instead, so the GPU Operator is the only driver owner",
    # OKE offers the operator as its NvidiaGpuOperator add-on; we install the chart instead (same values on every
    # cloud), so that add-on stays off, and OKE's own GPU plugin must not advertise GPUs next to the operator's.
    operator_note="OKE add-on NvidiaGpuOperator unused (this Helm release is the operator); OKE's NvidiaGpuPlugin "
                  "add-on is adopted and pinned to no node, so only the operator's device plugin advertises GPUs",
    # OKE takes full versions ("v1.35.1") from its supported list only; a pinned patch per minor keeps plans
    # deterministic (no control-plane upgrade because Oracle published a newer patch).
    # OKE supported versions (add-on version table up to 1.34): the three newest minors, named by their first OKE
    # build (v1.31.1, v1.32.1, v1.33.1 in OKE's supported lists). v1.35.1 follows that naming; check
    # `oci ce cluster-options get --cluster-option-id all` before a first `pulumi up` in a new region.
    kubernetes_versions={"1.34": "v1.34.1", "1.35": "v1.35.1"},
    kubernetes_version_form="patch",
    kubernetes_version_prefix="v",
    regions=_REGIONS,
    # OKE node pools have no autoscaling of their own: the Cluster Autoscaler resizes them within min/max.
    autoscaler="cluster-autoscaler",
    # The OCI autoscaler builds a node pool's scale-from-zero template from its shape's GPU count
    # (cloudprovider/oci/nodepools/oci_manager.go): only nvidia.com/gpu, never MIG resources.
    autoscaler_template_whole_gpus=True,
    # OCI region identifiers are <geo>-<name>-<n>, the name a city (us-ashburn-1) that government and dedicated
    # regions prefix (us-gov-ashburn-1, uk-gov-london-1, eu-dcc-milan-1); a compass word before the number means
    # an AWS region was pasted.
    region_pattern=r"(?!.*-(north|south|east|west|central|northeast|southeast|northwest|southwest)-[0-9]+$)"
                   r"[a-z]{2}(-[a-z]+)+-[0-9]+",
    region_example="us-ashburn-1",
    instance_type_pattern=r"(VM|BM)\.[A-Za-z0-9.]+",
    instance_type_example="VM.Standard.E5.Flex",
    # OKE node pools hold at most 1000 nodes (node pool size limit).
    max_pool_nodes=1000,
    # Bare-metal GPU pools on an RDMA cluster network of self-managed nodes (rdma.py), as Oracle's
    # oci-hpc-oke quickstart builds them.
    fabrics={"rdma": _OCI_RDMA},
    # RDMA and fabric-less OKE pools test with Oracle's own image: its registry is the cloud's, and its NCCL carries
    # no other cloud's network plugin.
    nccl_test=_OCI_NCCL_TESTS,
    # Neither OKE CNI enforces NetworkPolicy; Oracle's route is Calico ("Pod Networking").
    calico_policy_only=True,
    # Not OKE but Oracle's node labeler (oci-hpc-oke's oci-hpc-oke-utils chart, from instance metadata) writes
    # these; not installed: its image installs unpinned Python packages at start-up, it has no published chart
    # repository to pin, and its repository has no license file.
    network_topology=NetworkTopology(
        levels=("oci.oraclecloud.com/rdma.hpc_island_id", "oci.oraclecloud.com/rdma.network_block_id",
                "oci.oraclecloud.com/rdma.local_block_id"),
        instance_types=r"BM\.GPU.*",
        writer="Oracle's oci-hpc-oke node labeler (chart oci-hpc-oke-utils), not OKE, writes them and the "
               "platform does not install it (it installs unpinned Python packages when its pods start)"),
)
