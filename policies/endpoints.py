"""Each cloud's cluster API endpoint, read into the same facts: private or public, and which networks its public
side answers (GPU011, GPU013).

"Open to the internet" is measured, not matched: the allowed CIDRs are merged per address family with
`ipaddress`, and an allow-list covering more than OPEN_SHARE of the IPv4 or of the IPv6 address space (more
than a /8's worth of addresses) counts as open, so `0.0.0.0/1` + `128.0.0.0/1` is as open as `0.0.0.0/0`.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from pulumi_policy import PolicyResource

from policies.graph import Graph
from policies.props import Undecidable, get, items
from policies.rule import Pending, Report

# More than 1/256 of an address family (a /8's worth) is no longer "named networks".
OPEN_SHARE = Fraction(1, 256)
OKE_NSG_RULE = "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule"


@dataclass(frozen=True)
class Endpoint:
    """One cluster's API endpoint."""

    service: str
    private: bool  # no public endpoint at all
    networks: tuple[str, ...] | None  # what the public side answers; None: every address
    allow_field: str  # where the allow-list is set, for messages
    private_field: str  # how to make the endpoint private, for messages
    also_open: str = ""  # a setting that opens the endpoint beyond the list, when set


def coverage(networks: tuple[str, ...]) -> tuple[dict[int, Fraction], list[str]]:
    """The share of the IPv4 (4) and IPv6 (6) address space the networks cover, overlaps merged, and the entries
    that are not addresses or CIDRs."""
    parsed: dict[int, list] = {4: [], 6: []}
    invalid = []
    for text in networks:
        try:
            network = ipaddress.ip_network(str(text).strip(), strict=False)
        except ValueError:
            invalid.append(str(text))
            continue
        parsed[network.version].append(network)
    space = {4: 2 ** 32, 6: 2 ** 128}
    return ({version: Fraction(sum(n.num_addresses for n in ipaddress.collapse_addresses(found)), space[version])
             for version, found in parsed.items()}, invalid)


def exposure(endpoint: Endpoint) -> str | None:
    """Why the endpoint answers (a large part of) the internet, or None when it is private or limited."""
    if endpoint.private:
        return None
    if endpoint.networks is None:
        return f"the endpoint is public and {endpoint.allow_field} does not limit it"
    if endpoint.also_open:
        return endpoint.also_open
    shares, invalid = coverage(endpoint.networks)
    if invalid:
        return f"{endpoint.allow_field} has entries that are not CIDRs ({', '.join(invalid)})"
    wide = [f"{float(share):.1%} of the IPv{version} space" for version, share in shares.items() if share > OPEN_SHARE]
    if wide:
        return (f"{endpoint.allow_field} ({', '.join(endpoint.networks)}) covers {' and '.join(wide)}; more than "
                f"1/{OPEN_SHARE.denominator} of an address family is the internet, not named networks")
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
    return Endpoint("GKE", get(p, "privateClusterConfig.enablePrivateEndpoint") is True, blocks,
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
    return Endpoint("OKE", private, networks, "endpointConfig.nsgIds (ingress rules' source CIDRs)",
                    "endpointConfig.isPublicIpEnabled: false")


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
    pending = Pending()
    for cluster in graph.of_type(*CLUSTERS):
        with pending.each():
            api = endpoint(cluster, graph)
            if problem := exposure(api):
                report(message(api, cluster, problem), cluster.urn)
    pending.finish()
