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
from policies.exemptions import review

KEY = "authorizedNetworkMinPrefix"
# A /16 is an organisation's largest usual IPv4 allocation: anything wider is a large part of the internet, not a
# network someone administers the cluster from. Keyed by IP version; IPv4 only, as authorizedNetworks takes no IPv6.
DEFAULT_MIN_PREFIX = {"ipv4": 16}
_BITS = {"ipv4": 32}
# The policy that fails a production endpoint open to the internet (HIGH, so exemptable); its exemption waives this.
RULE = "GPU011"


def min_prefixes(raw: Any, problems: Problems) -> dict[int, int]:
    """cluster.authorizedNetworkMinPrefix by IP version, defaults where unset or invalid."""
    sec = Section(raw, join("cluster", KEY), problems, tuple(DEFAULT_MIN_PREFIX))
    return {int(family[-1]): sec.int(family, default, minimum=1, maximum=_BITS[family]) or default
            for family, default in DEFAULT_MIN_PREFIX.items()}


def named_network_checks(networks: Any, bounds: dict[int, int], cluster: Cluster, prof: CloudProfile,
                         policy: Policy, production: bool, problems: Problems) -> None:
    """In production, each authorized network no wider than its bound; a GPU011 exemption for the cluster turns the
    errors into warnings, as `check` would waive the finding."""
    if not production or not isinstance(networks, list):
        return
    wide = []
    for i, value in enumerate(networks):
        try:
            net = ipaddress.IPv4Network(value)
        except (ValueError, TypeError):
            continue  # reported where the list is read
        if 0 < net.prefixlen < bounds[net.version]:
            wide.append((join(join("cluster", "authorizedNetworks"), i), net))
    if not wide:
        return
    resource = f"{cluster.name}-{prof.cluster_resource_suffix}"
    exempted = review(policy, {RULE: True}, date.today()).waive(RULE, "", (resource,), "")
    for path, net in wide:
        message = (f"{net} is wider than a named network: production allows /{bounds[net.version]} or narrower for "
                   f"IPv{net.version} (cluster.{KEY}.ipv{net.version}); list the networks that administer the "
                   f"cluster, or exempt {resource} from {RULE} with a reason (policy.exemptions)")
        if exempted:
            problems.warn(path, f"{message}; exempted by {exempted.path} until {exempted.exemption.expires}")
        else:
            problems.add(path, message)
