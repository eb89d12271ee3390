"""The EKS network: a private VPC across three AZs (plus one for reserved capacity elsewhere), or the subnets a
stack names.

Zones are chosen once and kept: `cluster.aws.zones`, or else the region's first three, never from the pools. A
subnet's AZ and CIDR are fixed for its life (changing either replaces it, and with it every node group on it), so
a reserved pool in a fourth AZ gets a subnet of its own in a slot no other subnet uses, and only that pool's node
group lands there.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Callable

import pulumi
import pulumi_aws.ec2 as ec2

from components.config.model import PlatformConfig

DEFAULT_VPC_CIDR = "10.0.0.0/16"
MAX_ZONES = 3  # zones the cluster and its general pools span
MAX_SUBNET_SLOTS = 4  # ... plus one zone only reserved pools use
# EKS finds subnets for load balancers by these tags: internal ones in private subnets, internet-facing in public.
INTERNAL_ELB_TAG = "kubernetes.io/role/internal-elb"
PUBLIC_ELB_TAG = "kubernetes.io/role/elb"

Opts = Callable[..., pulumi.ResourceOptions]


@dataclass
class Network:
    """Where the control plane and nodes go."""

    private_subnet_ids: list[pulumi.Input[str]]
    zone_subnet: Callable[[str], pulumi.Input[list[str]]]  # the private subnet ids of one AZ


def subnet_cidrs(vpc_cidr: str, zones: int) -> tuple[list[str], list[str]]:
    """Private and public subnet CIDRs by slot: three quarters of the VPC for nodes and pods, small public ones.

    A slot's CIDRs never depend on how many slots there are, so adding a zone never moves a subnet. The VPC CNI
    gives every pod a VPC address, so private subnets get the bulk of the space; the fourth slot (a reserved
    pool's own zone) takes the upper half of the last quarter, clear of the public /21s in its lower half.
    """
    if zones > MAX_SUBNET_SLOTS:
        raise ValueError(f"at most {MAX_SUBNET_SLOTS} subnet slots; asked for {zones}")
    vpc = ipaddress.IPv4Network(vpc_cidr)
    quarters = list(vpc.subnets(prefixlen_diff=2))
    private = [*quarters[:MAX_ZONES], list(quarters[3].subnets(prefixlen_diff=1))[1]]
    public = list(quarters[3].subnets(prefixlen_diff=3))
    return [str(net) for net in private[:zones]], [str(net) for net in public[:zones]]


def existing(config: PlatformConfig, provider: pulumi.ProviderResource) -> Network:
    """The stack's own subnets; a reserved pool's AZ is looked up among them."""
    ids = list(config.cluster.extras["subnetIds"])

    def zone_subnet(zone: str) -> pulumi.Output[list[str]]:
        found = ec2.get_subnets_output(filters=[{"name": "subnet-id", "values": ids},
                                                {"name": "availability-zone", "values": [zone]}],
                                       opts=pulumi.InvokeOutputOptions(provider=provider))
        return found.ids

    return Network(private_subnet_ids=ids, zone_subnet=zone_subnet)


def pick_zones(available: list[str], required: list[str], pinned: list[str] | None = None) -> tuple[list[str], list[str]]:
    """The cluster's zones (pinned, or the region's first three) and the extra zones only reserved pools use.

    Neither depends on which pools exist beyond their reserved AZs, and extra zones come after the cluster's, so
    adding or removing a reserved pool never moves a subnet of the cluster.
    """
    general = list(pinned) if pinned else available[:MAX_ZONES]
    unknown = [z for z in dict.fromkeys([*general, *required]) if z not in available]
    if unknown:
        raise pulumi.RunError(f"cluster.aws: availability zone(s) {', '.join(unknown)} not in this region; "
                              f"available: {', '.join(available)}")
    extra = sorted(set(required) - set(general))
    if len(general) + len(extra) > MAX_SUBNET_SLOTS:
        raise pulumi.RunError(f"cluster.aws.capacityBlocks: blocks in {', '.join(extra)} need more zones than the "
                              f"{MAX_SUBNET_SLOTS} subnet slots of the VPC this platform creates: list them in "
                              "cluster.aws.zones, or give subnetIds")
    return general, extra


def create(name: str, config: PlatformConfig, general: list[str], extra: list[str], opts: Opts) -> Network:
    """VPC, public and private subnets per AZ, internet gateway, NAT (one per AZ in production) and routes.

    The control plane and every pool not tied to a reservation use the `general` zones' subnets; `extra` zones'
    subnets serve only the reserved pools placed there.
    """
    zones = [*general, *extra]
    cidr = config.cluster.extras.get("vpcCidr", DEFAULT_VPC_CIDR)
    private_cidrs, public_cidrs = subnet_cidrs(cidr, len(zones))
    vpc = ec2.Vpc(f"{name}-vpc", cidr_block=cidr, enable_dns_support=True,
                  # EKS private endpoints resolve through the VPC's DNS, which needs both DNS settings.
                  enable_dns_hostnames=True, tags={"Name": name}, opts=opts())
    igw = ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags={"Name": name}, opts=opts())
    public_rt = ec2.RouteTable(f"{name}-public", vpc_id=vpc.id, tags={"Name": f"{name}-public"}, opts=opts())
    ec2.Route(f"{name}-public-default", route_table_id=public_rt.id, destination_cidr_block="0.0.0.0/0",
              gateway_id=igw.id, opts=opts())

    public, private = [], []
    for i, zone in enumerate(zones):
        pub = ec2.Subnet(f"{name}-public-{i}", vpc_id=vpc.id, cidr_block=public_cidrs[i], availability_zone=zone,
                         tags={"Name": f"{name}-public-{zone}", PUBLIC_ELB_TAG: "1"}, opts=opts())
        ec2.RouteTableAssociation(f"{name}-public-{i}", subnet_id=pub.id, route_table_id=public_rt.id, opts=opts())
        public.append(pub)
        private.append(ec2.Subnet(f"{name}-private-{i}", vpc_id=vpc.id, cidr_block=private_cidrs[i],
                                  availability_zone=zone,
                                  tags={"Name": f"{name}-private-{zone}", INTERNAL_ELB_TAG: "1"}, opts=opts()))

    # Production keeps each AZ's egress in that AZ, so losing one AZ's NAT does not cut the others off.
    nat_zones = len(zones) if config.production else 1
    nats = []
    for i in range(nat_zones):
        eip = ec2.Eip(f"{name}-nat-{i}", domain="vpc", tags={"Name": f"{name}-nat-{zones[i]}"}, opts=opts())
        nats.append(ec2.NatGateway(f"{name}-nat-{i}", allocation_id=eip.allocation_id, subnet_id=public[i].id,
                                   tags={"Name": f"{name}-{zones[i]}"},
                                   opts=opts(depends_on=[igw])))
    for i, subnet in enumerate(private):
        rt = ec2.RouteTable(f"{name}-private-{i}", vpc_id=vpc.id, tags={"Name": f"{name}-private-{zones[i]}"},
                            opts=opts())
        ec2.Route(f"{name}-private-{i}-default", route_table_id=rt.id, destination_cidr_block="0.0.0.0/0",
                  nat_gateway_id=nats[i % nat_zones].id, opts=opts())
        ec2.RouteTableAssociation(f"{name}-private-{i}", subnet_id=subnet.id, route_table_id=rt.id, opts=opts())

    by_zone = dict(zip(zones, private))
    return Network(private_subnet_ids=[s.id for s in private[:len(general)]],
                   zone_subnet=lambda zone: [by_zone[zone].id])
