"""EFA for EKS GPU node groups: every interface in the launch template, a cluster placement group, a self-referencing
security group (EKS user guide "node-efa", EC2 user guide "efa-start" and "p5-efa")."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws.ec2 as ec2
import pulumi_aws.eks as eks

from components.config.model import GpuPool

# EFA traffic must be allowed to and from the members of one security group, on every protocol and port.
ALL_TRAFFIC = {"protocol": "-1", "from_port": 0, "to_port": 0, "self": True}


def network_interfaces(interfaces: int, security_groups: list, on_primary_card: bool = True) -> list[dict[str, Any]]:
    """One EFA interface per network card, each at device index 0 of its card: card 0 is the primary, EFA with ENA;
    every other card EFA-only (EC2 user guide efa-acc-inst-types, p5-efa), which takes no IP address, so a p5 node
    uses one of its subnet's addresses for its interfaces instead of 32. No subnet: EKS puts every interface in the
    node group's subnet. Where card 0 takes no EFA (`on_primary_card` false), it keeps a plain ENA primary and the
    EFA-only interfaces take cards 1 to `interfaces`."""
    def interface(card: int, kind: str | None) -> dict[str, Any]:
        return {"network_card_index": card, "device_index": 0, **({"interface_type": kind} if kind else {}),
                "security_groups": security_groups, "delete_on_termination": "true"}
    if not on_primary_card:
        return [interface(0, None), *(interface(card, "efa-only") for card in range(1, interfaces + 1))]
    return [interface(card, "efa" if card == 0 else "efa-only") for card in range(interfaces)]


def efa_launch_settings(name: str, pool: GpuPool, cluster: eks.Cluster, reserved: bool,
                        opts: pulumi.ResourceOptions) -> dict[str, Any]:
    """Launch template arguments that give a pool's nodes all their EFA interfaces, next to each other."""
    group = ec2.SecurityGroup(
        f"{name}-efa", description=f"EFA traffic between nodes of GPU pool {pool.name}",
        vpc_id=cluster.vpc_config.vpc_id, ingress=[ALL_TRAFFIC], egress=[ALL_TRAFFIC],
        tags={"Name": f"{pool.name}-efa"}, opts=opts)
    # Interfaces listed in a launch template replace EKS's default security group, so the cluster's is named too.
    settings: dict[str, Any] = {"network_interfaces": network_interfaces(
        pool.instance.fabric_interfaces, [cluster.vpc_config.cluster_security_group_id, group.id],
        pool.instance.fabric_on_primary_card)}
    if not reserved:
        # A Capacity Block is already capacity in one AZ set aside for it; on-demand and spot nodes need a cluster
        # placement group to land on the same network spine.
        placement = ec2.PlacementGroup(f"{name}-placement", strategy="cluster", opts=opts)
        settings["placement"] = {"group_name": placement.name}
    return settings
