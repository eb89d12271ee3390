"""GPU011: a production cluster's API server is private or limited to named networks."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import context
from policies.endpoints import CLUSTERS, OPEN_PUBLIC, report_open_endpoints
from policies.graph import Graph
from policies.rule import Report, stack_rule


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    production = context.production(graph.resources)
    if not graph.of_type(*CLUSTERS):
        if production:
            graph.outside_plan(args, "no cluster in the stack", "API endpoint settings")
        args.not_applicable("no cluster in the stack")
    if not production:
        args.not_applicable("not a production stack")
    report_open_endpoints(graph, report, lambda api, cluster, problem: (
        f"production {api.service} cluster {cluster.name!r} exposes its API server to the internet: {problem}"))


RULE = stack_rule(
    id="GPU011", slug="private-api-endpoint",
    title="A production cluster's API endpoint is private or limited to named networks",
    rationale=("A GPU cluster's API server controls nodes worth millions and tokens with cloud access; in "
               "production it must not answer the whole internet. Passes when the endpoint is private (EKS "
               "`endpointPublicAccess: false`, AKS `enablePrivateCluster`, GKE `enablePrivateEndpoint`, OKE "
               "`isPublicIpEnabled: false`, and no GKE DNS endpoint open to external traffic) or its public side is "
               "limited to named networks. Open is measured: the allowed CIDRs (for OKE the endpoint's NSG rules "
               "together with its subnet's security lists, since OCI admits what either admits) are merged per "
               "address family, private and reserved ranges are cut out, and more public addresses than a "
               f"/{OPEN_PUBLIC[4]} (IPv4) or a /{OPEN_PUBLIC[6]} (IPv6) holds counts as the internet, so "
               "`0.0.0.0/1` + `128.0.0.0/1`, a cloud provider's /8 or two /9s fail like `0.0.0.0/0`. Production is the stack's environment, else "
               "the one the program records on its `gpu-platform:policy:StackFacts` resource; a graph without "
               "that record counts as production. Non-production endpoints are GPU013."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Keep `cluster.privateEndpoint: true` (the production default) and reach the API through the VPC, a "
        "bastion or a VPN.",
        "If a public endpoint is required, limit it to your networks (`cluster.authorizedNetworks`, or the "
        "cloud field named in the finding), each no wider than it must be.",
    ),
    config_key="cluster.authorizedNetworks",
    check=check,
)
