"""cluster.authorizedNetworks in production: named networks only, none wider than a bound
(cluster.authorizedNetworkMinPrefix), unless a policy exemption for GPU011 names the cluster."""
from __future__ import annotations

import ipaddress
from datetime import date
from typing import Any

from components.clouds.facts import CloudProfile
from components.config.errors import Problems
from components.config.fields import Section, join
from components.config.model import Cluster, Policy
from policies import cidrs
from policies.exemptions import review

KEY = "authorizedNetworkMinPrefix"
# A /16 is an organisation's largest usual IPv4 allocation: anything wider is a large part of the internet, not a
# network someone administers the cluster from; a /48 is the usual IPv6 site allocation. Keyed by IP version.
DEFAULT_MIN_PREFIX = {"ipv4": 16, "ipv6": 48}
_BITS = {"ipv4": 32, "ipv6": 128}
# The policy that fails a production endpoint open to the internet (HIGH, so exemptable); its exemption waives this.
RULE = "GPU011"


def min_prefixes(raw: Any, problems: Problems) -> dict[int, int]:
    """cluster.authorizedNetworkMinPrefix by IP version, defaults where unset or invalid."""
    sec = Section(raw, join("cluster", KEY), problems, tuple(DEFAULT_MIN_PREFIX))
    return {int(family[-1]): sec.int(family, default, minimum=1, maximum=_BITS[family]) or default
            for family, default in DEFAULT_MIN_PREFIX.items()}


def named_network_checks(networks: Any, bounds: dict[int, int], cluster: Cluster, prof: CloudProfile,
                         policy: Policy, production: bool, problems: Problems) -> None:
    """In production, each authorized network, and all of them together, no wider than the bound of its IP version
    (measured by the public addresses covered, so two adjacent /17s or a handful of /9s count as what they cover); a
    GPU011 exemption for the cluster turns the errors into warnings, as `check` would waive the finding."""
    if not production or not isinstance(networks, list):
        return
    path = join("cluster", "authorizedNetworks")
    parsed: dict[int, list] = {4: [], 6: []}
    wide = []
    for i, value in enumerate(networks):
        try:
            net = ipaddress.ip_network(value)
        except (ValueError, TypeError):
            continue  # reported where the list is read
        if net.prefixlen == 0 or (net.version == 6 and not prof.authorized_networks_ipv6):
            continue  # refused where the list is read
        parsed[net.version].append(net)
        if 0 < net.prefixlen < bounds[net.version]:
            wide.append((join(path, i), net.version, f"{net} is wider than a named network"))
    for version, found in parsed.items():
        covered = cidrs.count(cidrs.subtract(found, cidrs.NOT_PUBLIC[version]))
        if covered > 2 ** (_BITS[f"ipv{version}"] - bounds[version]) and not any(v == version for _, v, _ in wide):
            wide.append((path, version, f"together these IPv{version} networks cover {covered:,} public addresses, "
                                        "more than one named network"))
    if not wide:
        return
    resource = f"{cluster.name}-{prof.cluster_resource_suffix}"
    exempted = review(policy, {RULE: True}, date.today()).waive(RULE, "", (resource,), "")
    for where, version, what in wide:
        message = (f"{what}: production allows /{bounds[version]} or narrower for IPv{version} "
                   f"(cluster.{KEY}.ipv{version}); list the networks that administer the cluster, or exempt "
                   f"{resource} from {RULE} with a reason (policy.exemptions)")
        if exempted:
            problems.warn(where, f"{message}; exempted by {exempted.path} until {exempted.exemption.expires}")
        else:
            problems.add(where, message)
