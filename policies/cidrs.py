"""Address sets measured by what they cover, not how they are spelled: CIDR lists are merged per family with
`ipaddress`, holes (`except`, reserved ranges) are cut out, and what is left is counted. `0.0.0.0/1` +
`128.0.0.0/1`, `0.0.0.0/0` except one /32, and two /9s are measured by their addresses like anything else."""
from __future__ import annotations

import ipaddress
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Sources no internet host has: IANA special-purpose ranges that are not globally reachable (RFC 6890), and for
# IPv6 everything outside global unicast 2000::/3 (plus its documentation range).
NOT_PUBLIC = {
    4: tuple(ipaddress.ip_network(n) for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
        "224.0.0.0/3")),
    6: tuple(ipaddress.ip_network(n) for n in ("::/3", "4000::/2", "8000::/1", "2001:db8::/32")),
}
# Where a cluster's own nodes, pods and services live on every cloud the platform supports (RFC 1918, the
# shared CGNAT range some CNIs use, link-local; IPv6 unique-local and link-local).
INTERNAL = {
    4: tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10",
                                                 "169.254.0.0/16")),
    6: tuple(ipaddress.ip_network(n) for n in ("fc00::/7", "fe80::/10")),
}


def parse(texts: Iterable) -> tuple[dict[int, list[Network]], list[str]]:
    """The networks per family (4, 6) and the entries that are not addresses or CIDRs."""
    found: dict[int, list[Network]] = {4: [], 6: []}
    invalid = []
    for text in texts:
        try:
            network = ipaddress.ip_network(str(text).strip(), strict=False)
        except ValueError:
            invalid.append(str(text))
            continue
        found[network.version].append(network)
    return found, invalid


def subtract(networks: Iterable[Network], holes: Iterable[Network]) -> list[Network]:
    """`networks` without the addresses of `holes` (one family), merged."""
    left = list(ipaddress.collapse_addresses(networks))
    for hole in holes:
        cut = []
        for network in left:
            if hole.supernet_of(network):
                continue
            cut.extend(network.address_exclude(hole) if network.supernet_of(hole) else [network])
        left = list(ipaddress.collapse_addresses(cut))
    return left


def intersect(networks: Iterable[Network], within: Iterable[Network]) -> list[Network]:
    """The addresses of `networks` that are also in `within` (one family), merged."""
    within = list(within)
    return list(ipaddress.collapse_addresses(
        a if b.supernet_of(a) else b for a in networks for b in within if a.overlaps(b)))


def count(networks: Iterable[Network]) -> int:
    return sum(n.num_addresses for n in ipaddress.collapse_addresses(networks))
