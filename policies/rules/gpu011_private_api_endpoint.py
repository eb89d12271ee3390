"""GPU011: a production cluster's API server is private or limited to named networks."""
from __future__ import annotations

from typing import Callable, Mapping

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, Severity

from policies import context
from policies.props import get, items
from policies.rule import Report, resource_rule

OPEN = ("0.0.0.0/0", "::/0")


def _cidrs_closed(cidrs: list) -> bool:
    return bool(cidrs) and not any(str(c) in OPEN for c in cidrs)


def _eks(p: Mapping) -> str | None:
    if get(p, "vpcConfig.endpointPublicAccess", True) is False:
        return None
    # EKS opens a public endpoint to 0.0.0.0/0 unless told otherwise.
    if _cidrs_closed(items(get(p, "vpcConfig.publicAccessCidrs"))):
        return None
    return "vpcConfig.endpointPublicAccess is not false and publicAccessCidrs does not limit it"


def _aks(p: Mapping) -> str | None:
    if get(p, "apiServerAccessProfile.enablePrivateCluster") is True:
        return None
    if _cidrs_closed(items(get(p, "apiServerAccessProfile.authorizedIPRanges"))):
        return None
    return "apiServerAccessProfile.enablePrivateCluster is not true and authorizedIPRanges does not limit it"


def _gke(p: Mapping) -> str | None:
    if get(p, "privateClusterConfig.enablePrivateEndpoint") is True:
        return None
    blocks = [get(b, "cidrBlock") for b in items(get(p, "masterAuthorizedNetworksConfig.cidrBlocks"))]
    if _cidrs_closed(blocks) and get(p, "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled") is not True:
        return None
    return "privateClusterConfig.enablePrivateEndpoint is not true and masterAuthorizedNetworksConfig does not limit it"


def _oke(p: Mapping) -> str | None:
    if get(p, "endpointConfig") is not None and get(p, "endpointConfig.isPublicIpEnabled") is not True:
        return None
    return "endpointConfig.isPublicIpEnabled is true (or the cluster has no VCN-native endpoint)"


CLUSTERS: dict[str, tuple[str, Callable[[Mapping], str | None]]] = {
    "aws:eks/cluster:Cluster": ("EKS", _eks),
    "azure-native:containerservice:ManagedCluster": ("AKS", _aks),
    "gcp:container/cluster:Cluster": ("GKE", _gke),
    "oci:ContainerEngine/cluster:Cluster": ("OKE", _oke),
}


def check(args: ResourceValidationArgs, report: Report) -> None:
    if not context.production(args.opts.protect):
        args.not_applicable("not a production stack")
    service, problem_of = CLUSTERS[args.resource_type]
    problem = problem_of(args.props)
    if problem:
        report(f"production {service} cluster {args.name!r} exposes its API server to the internet: {problem}")


RULE = resource_rule(
    id="GPU011", slug="private-api-endpoint",
    title="A production cluster's API endpoint is private or limited to named networks",
    rationale=("A GPU cluster's API server controls nodes worth millions and tokens with cloud access; in "
               "production it must not answer the whole internet. Passes when the endpoint is private (EKS "
               "`endpointPublicAccess: false`, AKS `enablePrivateCluster`, GKE `enablePrivateEndpoint`, OKE "
               "`isPublicIpEnabled: false`) or its public side is limited to explicit CIDRs other than "
               "0.0.0.0/0. Production is the stack's environment (or, for a bare plan file, protected resources)."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Keep `cluster.privateEndpoint: true` (the production default) and reach the API through the VPC, a "
        "bastion or a VPN.",
        "If a public endpoint is required, limit it to your networks with `cluster.authorizedNetworks`.",
    ),
    config_key="cluster",
    types=tuple(CLUSTERS),
    check=check,
)
