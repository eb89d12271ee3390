"""The EKS network: a private VPC across up to three AZs, or the subnets a stack names."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Callable

import pulumi
import pulumi_aws.ec2 as ec2

from components.config.model import PlatformConfig

DEFAULT_VPC_CIDR = "10.0.0.0/16"
MAX_ZONES = 3
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
    """Private and public subnet CIDRs: three quarters of the VPC for nodes and pods, small public ones for NAT/LBs.

    The VPC CNI gives every pod a VPC address, so private subnets get the bulk of the space.
    """
    vpc = ipaddress.IPv4Network(vpc_cidr)
    quarters = list(vpc.subnets(prefixlen_diff=2))
    private = [str(net) for net in quarters[:zones]]
    public = [str(net) for net in list(quarters[3].subnets(prefixlen_diff=3))[:zones]]
    return private, public


def existing(config: PlatformConfig, provider: pulumi.ProviderResource) -> Network:
    """The stack's own subnets; a reserved pool's AZ is looked up among them."""
    ids = list(config.cluster.extras["subnetIds"])

    def zone_subnet(zone: str) -> pulumi.Output[list[str]]:
        found = ec2.get_subnets_output(filters=[{"name": "subnet-id", "values": ids},
                                                {"name": "availability-zone", "values": [zone]}],
                                       opts=pulumi.InvokeOutputOptions(provider=provider))
        return found.ids

    return Network(private_subnet_ids=ids, zone_subnet=zone_subnet)


def pick_zones(available: list[str], required: list[str]) -> list[str]:
    """Up to three AZs, always including the ones reserved capacity lives in."""
    unknown = [z for z in required if z not in available]
    if unknown:
        raise pulumi.RunError(f"cluster.aws.capacityBlocks: availability zone(s) {', '.join(unknown)} not in this "
                              f"region; available: {', '.join(available)}")
    if len(set(required)) > MAX_ZONES:
        raise pulumi.RunError(f"cluster.aws.capacityBlocks: blocks span {len(set(required))} zones; the VPC this "
                              f"platform creates has {MAX_ZONES}: give subnetIds instead")
    chosen = set(required)
    for zone in available:
        if len(chosen) < MAX_ZONES:
            chosen.add(zone)
    # Region order, so adding a block in one of the usual zones leaves existing subnets where they are.
    return [zone for zone in available if zone in chosen]


def create(name: str, config: PlatformConfig, zones: list[str], opts: Opts) -> Network:
    """VPC, public and private subnets per AZ, internet gateway, NAT (one per AZ in production) and routes."""
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
    return Network(private_subnet_ids=[s.id for s in private], zone_subnet=lambda zone: [by_zone[zone].id])
