"""Each cloud's cluster API endpoint, read into the same facts: private or public, and which networks its public
side answers (GPU011, GPU013).

"Open to the internet" is measured, not matched: the allowed CIDRs are merged per address family with
`ipaddress`, the ranges no internet host has (private, reserved) are cut out, and more public addresses than a
named network needs (OPEN_PUBLIC: a /16's worth of IPv4, a /32's worth of IPv6, each an organisation's largest
allocation) count as open. So `0.0.0.0/1` + `128.0.0.0/1`, a cloud provider's /8, two /9s or a few IPv6 /12s are as
open as `0.0.0.0/0`, while `10.0.0.0/8` (no internet host) is not.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pulumi_policy import PolicyResource

from policies import cidrs
from policies.graph import Graph
from policies.props import Undecidable, get, items
from policies.rule import Report, check_each

# More public addresses than these prefixes hold are no longer "named networks".
OPEN_PUBLIC = {4: 16, 6: 32}
OKE_NSG_RULE = "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule"
OKE_SUBNET = "oci:Core/subnet:Subnet"
OKE_SECURITY_LIST = "oci:Core/securityList:SecurityList"
KUBE_API_PORT = 6443


@dataclass(frozen=True)
class Endpoint:
    """One cluster's API endpoint."""

    service: str
    private: bool  # no public endpoint at all
    networks: tuple[str, ...] | None  # what the public side answers; None: every address
    allow_field: str  # where the allow-list is set, for messages
    private_field: str  # how to make the endpoint private, for messages
    also_open: str = ""  # a setting that opens the endpoint beyond the list, when set


def public(networks: tuple[str, ...]) -> tuple[dict[int, int], list[str]]:
    """How many public IPv4 (4) and IPv6 (6) addresses the networks cover, overlaps merged, and the entries that
    are not addresses or CIDRs."""
    parsed, invalid = cidrs.parse(networks)
    return {v: cidrs.count(cidrs.subtract(found, cidrs.NOT_PUBLIC[v])) for v, found in parsed.items()}, invalid


def exposure(endpoint: Endpoint) -> str | None:
    """Why the endpoint answers (a large part of) the internet, or None when it is private or limited."""
    if endpoint.private:
        return None
    if endpoint.also_open:
        return endpoint.also_open
    if endpoint.networks is None:
        return f"the endpoint is public and {endpoint.allow_field} does not limit it"
    counts, invalid = public(endpoint.networks)
    if invalid:
        return f"{endpoint.allow_field} has entries that are not CIDRs ({', '.join(invalid)})"
    wide = [f"{n:,} public IPv{v} addresses, more than a /{OPEN_PUBLIC[v]}'s worth"
            for v, n in counts.items() if n > 2 ** ((32 if v == 4 else 128) - OPEN_PUBLIC[v])]
    if wide:
        return (f"{endpoint.allow_field} ({', '.join(endpoint.networks)}) covers {' and '.join(wide)}: that is "
                "a large part of the internet, not named networks")
    return None


def _eks(cluster: PolicyResource, graph: Graph) -> Endpoint:
    p = cluster.props
    cidrs = tuple(str(c) for c in items(get(p, "vpcConfig.publicAccessCidrs")))
    # EKS opens a public endpoint to 0.0.0.0/0 unless told otherwise.
    return Endpoint("EKS", get(p, "vpcConfig.endpointPublicAccess", True) is False, cidrs or None,
                    "vpcConfig.publicAccessCidrs", "vpcConfig.endpointPublicAccess: false")


def _aks(cluster: PolicyResource, graph: Graph) -> Endpoint:
    p = cluster.props
    ranges = tuple(str(r) for r in items(get(p, "apiServerAccessProfile.authorizedIPRanges")))
    # An empty authorizedIPRanges list means no restriction on AKS.
    return Endpoint("AKS", get(p, "apiServerAccessProfile.enablePrivateCluster") is True, ranges or None,
                    "apiServerAccessProfile.authorizedIPRanges", "apiServerAccessProfile.enablePrivateCluster: true")


def _gke(cluster: PolicyResource, graph: Graph) -> Endpoint:
    p = cluster.props
    config = get(p, "masterAuthorizedNetworksConfig")
    # The block itself turns authorized networks on; with no cidrBlocks only Google-internal sources get in.
    blocks = None if config is None else tuple(str(get(b, "cidrBlock", "")) for b in items(get(config, "cidrBlocks")))
    also_open = ("masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled lets every Google Cloud public IP in"
                 if get(config, "gcpPublicCidrsAccessEnabled") is True else "") if config is not None else ""
    # The DNS-based endpoint is a second way in: authorized networks do not apply to it, so with external
    # traffic allowed any address reaches the API server, whatever the IP endpoint's settings.
    dns = get(p, "controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic") is True
    if dns:
        also_open = ("controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic lets every address reach "
                     "the DNS endpoint, which authorized networks do not limit")
    return Endpoint("GKE", get(p, "privateClusterConfig.enablePrivateEndpoint") is True and not dns, blocks,
                    "masterAuthorizedNetworksConfig.cidrBlocks", "privateClusterConfig.enablePrivateEndpoint: true",
                    also_open)


def _oke(cluster: PolicyResource, graph: Graph) -> Endpoint:
    p = cluster.props
    config = get(p, "endpointConfig")
    # Without endpointConfig the cluster has the legacy, always-public endpoint.
    private = config is not None and get(config, "isPublicIpEnabled") is not True
    nsgs = {str(n) for n in items(get(config, "nsgIds"))} if config is not None else set()
    networks = None
    if not private and nsgs:
        rules = [r for r in graph.of_type(OKE_NSG_RULE) if str(get(r.props, "networkSecurityGroupId", "")) in nsgs]
        if not rules:
            raise Undecidable(f"{cluster.name}: the endpoint's NSGs ({', '.join(sorted(nsgs))}) have no security "
                              "rules in this stack, so what they admit cannot be read")
        networks = tuple(str(get(r.props, "source", "")) for r in rules
                         if str(get(r.props, "direction", "")) == "INGRESS"
                         and str(get(r.props, "sourceType", "CIDR_BLOCK")) == "CIDR_BLOCK")
        # OCI admits a packet that any NSG rule or any security list of the subnet admits: a narrow NSG next to
        # an open security list is open.
        networks += _subnet_sources(cluster, graph, get(config, "subnetId"))
    return Endpoint("OKE", private, networks, "endpointConfig.nsgIds and the endpoint subnet's security lists "
                    "(ingress sources)", "endpointConfig.isPublicIpEnabled: false")


def _by_id(resource: PolicyResource, graph: Graph, type_: str, id_: str) -> PolicyResource | None:
    """The resource of `type_` an id input names: a dependency of that type (under the CLI), else the one whose
    offline id (`<name>-<8 hex>`) or name it is."""
    linked = [d for d in resource.dependencies or [] if d.resource_type == type_]
    named = [r for r in graph.of_type(type_) if id_ == r.name or
             (id_.startswith(f"{r.name}-") and len(id_) == len(r.name) + 9)]
    found = named or linked
    return found[0] if len(found) == 1 else None


def _subnet_sources(cluster: PolicyResource, graph: Graph, subnet_id) -> tuple[str, ...]:
    """The sources the endpoint subnet's security lists admit to the API port."""
    subnet = _by_id(cluster, graph, OKE_SUBNET, str(subnet_id)) if subnet_id else None
    if subnet is None:
        raise Undecidable(f"{cluster.name}: the endpoint subnet ({subnet_id}) is not in this stack, so what its "
                          "security lists admit cannot be read")
    sources = []
    for list_id in items(get(subnet.props, "securityListIds")):
        security_list = _by_id(subnet, graph, OKE_SECURITY_LIST, str(list_id))
        if security_list is None:
            raise Undecidable(f"{cluster.name}: the endpoint subnet's security list {list_id} is not in this "
                              "stack, so what it admits cannot be read")
        sources += [str(get(r, "source", "")) for r in items(get(security_list.props, "ingressSecurityRules"))
                    if str(get(r, "sourceType", "CIDR_BLOCK")) == "CIDR_BLOCK" and _admits_api(r)]
    return tuple(sources)


def _admits_api(rule) -> bool:
    """Whether a security list rule admits TCP to the API port: protocol all, or TCP without a port range or with
    one holding 6443 (port numbers may arrive as floats)."""
    protocol = str(get(rule, "protocol", ""))
    if protocol == "all":
        return True
    if protocol != "6":
        return False
    ports = get(rule, "tcpOptions")
    if not ports or get(ports, "min") is None:
        return True
    try:
        return float(get(ports, "min")) <= KUBE_API_PORT <= float(get(ports, "max", get(ports, "min")))
    except (TypeError, ValueError):
        return True  # unreadable ports: assume the rule admits the API


CLUSTERS: dict[str, Callable[[PolicyResource, Graph], Endpoint]] = {
    "aws:eks/cluster:Cluster": _eks,
    "azure-native:containerservice:ManagedCluster": _aks,
    "gcp:container/cluster:Cluster": _gke,
    "oci:ContainerEngine/cluster:Cluster": _oke,
}


def endpoint(cluster: PolicyResource, graph: Graph) -> Endpoint:
    """A cluster's API endpoint (raises for values unknown during preview, or NSG rules outside the stack)."""
    return CLUSTERS[cluster.resource_type](cluster, graph)


def report_open_endpoints(graph: Graph, report: Report, message: Callable[[Endpoint, PolicyResource, str], str]) -> None:
    """Report every cluster whose endpoint is open, with `message(endpoint, cluster, problem)`; clusters that cannot
    be decided at preview are reported as such once all were looked at."""

    def check_cluster(cluster: PolicyResource) -> None:
        api = endpoint(cluster, graph)
        if problem := exposure(api):
            report(message(api, cluster, problem), cluster.urn)

    check_each(graph.of_type(*CLUSTERS), check_cluster)
