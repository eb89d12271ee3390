"""The VCN an OKE cluster lives in: created private by default, or adopted from `cluster.oci` subnet ids."""
from __future__ import annotations

import ipaddress
import re

import pulumi
import pulumi_oci.core as core

from components.config.model import PlatformConfig

DEFAULT_VCN_CIDR = "10.0.0.0/16"
KUBE_API_PORT = 6443
# The Oracle Services Network entry a service gateway needs (OCIR, Object Storage, OKE's own services).
_ALL_SERVICES = re.compile(r"All .* Services In Oracle Services Network")
_ICMP_PATH_MTU = core.SecurityListIngressSecurityRuleIcmpOptionsArgs(type=3, code=4)


def subnet_plan(vcn_cidr: str) -> dict[str, str]:
    """Endpoint, load balancer and node subnets of a /16 VCN (flannel pods take addresses off the VCN)."""
    vcn = ipaddress.IPv4Network(vcn_cidr)
    slash24 = list(vcn.subnets(new_prefix=24))
    return {
        "endpoint": str(next(slash24[0].subnets(new_prefix=28))),
        "lb": str(slash24[1]),
        "nodes": str(list(vcn.subnets(new_prefix=20))[1]),
    }


def dns_label(name: str) -> str:
    """An OCI DNS label: letters and digits, starting with a letter, at most 15."""
    label = re.sub(r"[^a-z0-9]", "", name.lower())
    return ("k" + label if not label[:1].isalpha() else label)[:15]


class OkeNetwork(pulumi.ComponentResource):
    """VCN, gateways, route tables, security lists and the three subnets OKE uses, or the ids of existing ones."""

    TYPE = "gpu-platform:oci:OkeNetwork"

    vcn_id: pulumi.Output[str]
    endpoint_subnet_id: pulumi.Output[str]
    lb_subnet_id: pulumi.Output[str]
    node_subnet_id: pulumi.Output[str]
    endpoint_nsg_ids: list[pulumi.Output[str]]

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        extras = config.cluster.extras
        super().__init__(self.TYPE, name, {"existing": "vcnId" in extras}, opts)
        if "vcnId" in extras:
            self.vcn_id = pulumi.Output.from_input(extras["vcnId"])
            self.endpoint_subnet_id = pulumi.Output.from_input(extras["endpointSubnetId"])
            self.lb_subnet_id = pulumi.Output.from_input(extras["serviceLbSubnetId"])
            self.node_subnet_id = pulumi.Output.from_input(extras["nodeSubnetId"])
        else:
            self._create(name, config, extras["compartmentId"], extras.get("vcnCidr", DEFAULT_VCN_CIDR))
        self.endpoint_nsg_ids = self._authorized_networks(name, config, extras["compartmentId"])
        self.register_outputs({"vcnId": self.vcn_id, "nodeSubnetId": self.node_subnet_id,
                               "endpointSubnetId": self.endpoint_subnet_id,
                               "lbSubnetId": self.lb_subnet_id, "endpointNsgIds": self.endpoint_nsg_ids})

    def _authorized_networks(self, name: str, config: PlatformConfig, compartment: str) -> list[pulumi.Output[str]]:
        """An NSG on the API endpoint admitting 6443 from `cluster.authorizedNetworks` only, or none."""
        cidrs = config.cluster.authorized_networks
        if not cidrs:
            return []
        child = pulumi.ResourceOptions(parent=self)
        nsg = core.NetworkSecurityGroup(f"{name}-endpoint-nsg", compartment_id=compartment, vcn_id=self.vcn_id,
                                        display_name=f"{config.cluster.name}-endpoint-authorized", opts=child)
        for i, cidr in enumerate(cidrs):
            core.NetworkSecurityGroupSecurityRule(
                f"{name}-endpoint-authorized-{i}", network_security_group_id=nsg.id, direction="INGRESS",
                protocol="6", source=cidr, source_type="CIDR_BLOCK", description="kubectl from an authorized network",
                tcp_options=core.NetworkSecurityGroupSecurityRuleTcpOptionsArgs(
                    destination_port_range=core.NetworkSecurityGroupSecurityRuleTcpOptionsDestinationPortRangeArgs(
                        min=KUBE_API_PORT, max=KUBE_API_PORT)),
                opts=child)
        return [nsg.id]

    def _create(self, name: str, config: PlatformConfig, compartment: str, cidr: str) -> None:
        child = pulumi.ResourceOptions(parent=self)
        private = config.cluster.private_endpoint
        # Security list and NSG rules add up: with authorized networks the list admits the VCN only and the
        # endpoint NSG admits those networks; otherwise a public endpoint is open to any address.
        open_api = not private and not config.cluster.authorized_networks
        cidrs = subnet_plan(cidr)
        vcn = core.Vcn(f"{name}-vcn", compartment_id=compartment, cidr_blocks=[cidr],
                       display_name=config.cluster.name, dns_label=dns_label(config.cluster.name), opts=child)
        base = {"compartment_id": compartment, "vcn_id": vcn.id}
        # Public load balancers and a public API endpoint (development) route through the internet gateway.
        igw = core.InternetGateway(f"{name}-igw", display_name=f"{config.cluster.name}-igw", enabled=True,
                                   **base, opts=child)
        # Private nodes reach container registries outside OCI only through NAT.
        nat = core.NatGateway(f"{name}-nat", display_name=f"{config.cluster.name}-nat", **base, opts=child)
        # OKE nodes must reach OCI services (OKE control plane, OCIR, Object Storage) without the internet.
        osn = core.get_services_output(opts=pulumi.InvokeOutputOptions(parent=self)).services.apply(
            lambda services: next(s for s in services if _ALL_SERVICES.fullmatch(s.name)))
        sgw = core.ServiceGateway(f"{name}-sgw", display_name=f"{config.cluster.name}-sgw",
                                  services=[core.ServiceGatewayServiceArgs(service_id=osn.id)], **base, opts=child)

        public_rt = core.RouteTable(f"{name}-public-rt", display_name=f"{config.cluster.name}-public", route_rules=[
            core.RouteTableRouteRuleArgs(destination="0.0.0.0/0", destination_type="CIDR_BLOCK",
                                         network_entity_id=igw.id)], **base, opts=child)
        private_rt = core.RouteTable(f"{name}-private-rt", display_name=f"{config.cluster.name}-private", route_rules=[
            core.RouteTableRouteRuleArgs(destination="0.0.0.0/0", destination_type="CIDR_BLOCK",
                                         network_entity_id=nat.id),
            core.RouteTableRouteRuleArgs(destination=osn.cidr_block, destination_type="SERVICE_CIDR_BLOCK",
                                         network_entity_id=sgw.id)], **base, opts=child)

        egress_all = [core.SecurityListEgressSecurityRuleArgs(destination="0.0.0.0/0", protocol="all")]
        # Nodes, pods and the API endpoint talk freely inside the VCN (kubelet, webhooks, pod-to-pod, NCCL);
        # ICMP 3/4 keeps path-MTU discovery working for the large frames GPU traffic uses.
        private_sl = core.SecurityList(f"{name}-private-sl", display_name=f"{config.cluster.name}-private",
                                       ingress_security_rules=[
                                           core.SecurityListIngressSecurityRuleArgs(protocol="all", source=cidr),
                                           core.SecurityListIngressSecurityRuleArgs(
                                               protocol="1", source="0.0.0.0/0", icmp_options=_ICMP_PATH_MTU)],
                                       egress_security_rules=egress_all, **base, opts=child)
        # The API endpoint admits kubectl on 6443: from the VCN only, or from anywhere on an open public endpoint.
        endpoint_sl = core.SecurityList(f"{name}-endpoint-sl", display_name=f"{config.cluster.name}-endpoint",
                                        ingress_security_rules=[
                                            core.SecurityListIngressSecurityRuleArgs(
                                                protocol="6", source="0.0.0.0/0" if open_api else cidr,
                                                tcp_options=core.SecurityListIngressSecurityRuleTcpOptionsArgs(
                                                    min=KUBE_API_PORT, max=KUBE_API_PORT)),
                                            core.SecurityListIngressSecurityRuleArgs(protocol="all", source=cidr)],
                                        egress_security_rules=egress_all, **base, opts=child)
        lb_sl = core.SecurityList(f"{name}-lb-sl", display_name=f"{config.cluster.name}-lb",
                                  ingress_security_rules=[
                                      core.SecurityListIngressSecurityRuleArgs(
                                          protocol="6", source="0.0.0.0/0",
                                          tcp_options=core.SecurityListIngressSecurityRuleTcpOptionsArgs(
                                              min=port, max=port)) for port in (80, 443)],
                                  egress_security_rules=[core.SecurityListEgressSecurityRuleArgs(
                                      destination=cidr, protocol="6")], **base, opts=child)

        def subnet(suffix: str, public: bool, route_table, security_list) -> core.Subnet:
            return core.Subnet(f"{name}-{suffix}", display_name=f"{config.cluster.name}-{suffix}",
                               cidr_block=cidrs[suffix], dns_label=suffix, prohibit_public_ip_on_vnic=not public,
                               route_table_id=route_table.id, security_list_ids=[security_list.id], **base,
                               opts=child)

        self.vcn_id = vcn.id
        endpoint = subnet("endpoint", not private, private_rt if private else public_rt, endpoint_sl)
        self.endpoint_subnet_id = endpoint.id
        self.lb_subnet_id = subnet("lb", True, public_rt, lb_sl).id
        self.node_subnet_id = subnet("nodes", False, private_rt, private_sl).id
