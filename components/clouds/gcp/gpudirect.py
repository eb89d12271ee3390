"""GKE GPUDirect-TCPX/TCPXO for A3 High/Mega node pools: one VPC and subnet per GPU NIC with a firewall rule for the
NIC ranges, the pool's additional node networks, gVNIC, and compact placement in one zone (GKE "Maximize GPU network
bandwidth with GPUDirect and multi-networking", "Define compact placement for GKE nodes"; GoogleCloudPlatform
cluster-toolkit modules/network/multivpc and compute/gke-node-pool)."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp.compute as compute

from components.clouds.facts import Fabric
from components.clouds.gcp.facts import GPUDIRECT, short, subnet_name, vpc_name
from components.config.model import GpuPool, PlatformConfig

# Every GPU NIC subnet is a /20 inside this range; each VPC's firewall admits it (GKE guide: SOURCE_RANGE).
NIC_RANGE = "192.168.0.0/16"
NIC_RULES = [{"protocol": "tcp", "ports": ["0-65535"]}, {"protocol": "udp", "ports": ["0-65535"]},
             {"protocol": "icmp"}]


def nic_counts(config: PlatformConfig) -> dict[str, int]:
    """GPU NICs per GPUDirect fabric the pools use, by fabric name (each fabric is one machine type's): the NIC VPCs
    the cluster creates and the Network objects inside it."""
    return dict(sorted({p.fabric: p.instance.fabric_interfaces for p in config.gpu_pools
                        if p.fabric in GPUDIRECT}.items()))


def nic_cidr(fabric: Fabric, nic: int) -> str:
    return f"192.168.{GPUDIRECT[fabric.name].subnet_offset + 16 * nic}.0/20"


def nic_networks(name: str, cluster: str, project: str, region: str, fabric: Fabric, nics: int,
                 opts: pulumi.ResourceOptions) -> list[tuple[compute.Network, compute.Subnetwork]]:
    """One custom-mode VPC per GPU NIC (a VM cannot have two NICs in one VPC) with the jumbo MTU GPUDirect uses, a
    subnet for the NIC's node addresses, and a rule admitting GPU-to-GPU traffic from the NIC ranges."""
    created = []
    for nic in range(nics):
        prefix = f"{name}-{short(fabric.name)}-{nic}"
        vpc = compute.Network(f"{prefix}-vpc", name=vpc_name(cluster, fabric.name, nic), project=project,
                              auto_create_subnetworks=False, mtu=GPUDIRECT[fabric.name].mtu, opts=opts)
        subnet = compute.Subnetwork(f"{prefix}-subnet", name=subnet_name(cluster, fabric.name, nic), project=project,
                                    region=region, network=vpc.id, ip_cidr_range=nic_cidr(fabric, nic), opts=opts)
        compute.Firewall(f"{prefix}-internal", name=f"{cluster}-{short(fabric.name)}-internal-{nic}",
                         project=project, network=vpc.name, direction="INGRESS", allows=NIC_RULES,
                         source_ranges=[NIC_RANGE], opts=opts)
        created.append((vpc, subnet))
    return created


def compact(pool: GpuPool) -> bool:
    """Compact placement, except where capacity is placed already: a reservation holds its own machines (a COMPACT
    policy would only find them if the reservation was made compact), and queued (flex-start) nodes come from
    wherever Dynamic Workload Scheduler finds the whole request."""
    return pool.capacity_type != "reserved" and not pool.queued


def node_pool_settings(pool: GpuPool, networks: list[tuple[compute.Network, compute.Subnetwork]],
                       zones: list[str]) -> dict[str, Any]:
    """NodePool arguments that attach every GPU NIC and keep the nodes close together."""
    settings: dict[str, Any] = {
        # Only the GPU NICs, one per VPC: an extra gVNIC network would take a GPU NIC's PCI slot on A3 Mega.
        "network_config": {"additional_node_network_configs": [
            {"network": vpc.name, "subnetwork": subnet.name} for vpc, subnet in networks]},
        # A compact placement lives in one zone, and GPU-to-GPU traffic across zones would lose what the NICs gain.
        "node_locations": zones[:1],
    }
    if compact(pool):
        settings["placement_policy"] = {"type": "COMPACT"}
    return settings
