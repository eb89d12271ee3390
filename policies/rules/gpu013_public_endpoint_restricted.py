"""GPU013: a public cluster API endpoint answers only authorized networks (outside production, which is GPU011's)."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import context
from policies.endpoints import CLUSTERS, OPEN_PUBLIC, report_open_endpoints
from policies.graph import Graph
from policies.rule import Report, stack_rule


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    if not graph.of_type(*CLUSTERS):
        args.not_applicable("no cluster in the stack")
    if context.production(graph.resources):
        args.not_applicable("a production stack: GPU011 holds its endpoint")
    report_open_endpoints(graph, report, lambda api, cluster, problem: (
        f"{api.service} cluster {cluster.name!r} has a public API endpoint without authorized networks: {problem}. "
        f"Limit {api.allow_field} to the networks that administer it, or set {api.private_field}."))


RULE = stack_rule(
    id="GPU013", slug="public-endpoint-restricted",
    title="A public cluster API endpoint answers only authorized networks",
    rationale=("Development and staging clusters hold the same cloud credentials and GPU quota as production, and "
               "an API server open to the internet is scanned within minutes of creation. Every cloud can limit "
               "the public endpoint: EKS `vpcConfig.publicAccessCidrs`, AKS "
               "`apiServerAccessProfile.authorizedIPRanges`, GKE `masterAuthorizedNetworksConfig.cidrBlocks` "
               "(without `gcpPublicCidrsAccessEnabled`), OKE the endpoint's NSGs (`endpointConfig.nsgIds`) and "
               "their ingress rules with the endpoint subnet's security lists; a GKE DNS endpoint open to external "
               "traffic is open. The allow-list is measured as in GPU011 (more public addresses than a "
               f"/{OPEN_PUBLIC[4]} or an IPv6 /{OPEN_PUBLIC[6]} holds is open). Production stacks are GPU011's "
               "(mandatory, critical); this one is mandatory too, since the stack config requires "
               "`cluster.authorizedNetworks` for every public endpoint; an open development endpoint needs an "
               "exemption with a reason and an expiry."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "List the networks that administer the cluster in `cluster.authorizedNetworks` (office, VPN, CI egress).",
        "Or make the endpoint private (`cluster.privateEndpoint: true`) and reach it through the VPC.",
    ),
    config_key="cluster.authorizedNetworks",
    check=check,
)
