"""GPU016: a cluster with team namespaces enforces NetworkPolicy objects (its CNI or policy engine is on)."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import k8s
from policies.graph import Graph
from policies.network_enforcement import READERS, missing_enforcement
from policies.rule import Pending, Report, stack_rule


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    if not k8s.team_namespaces(graph):
        args.not_applicable("no team namespaces (Namespaces labelled gpu-platform.io/team)")
    clusters = graph.of_type(*READERS)
    if not clusters:
        graph.outside_plan(args, "no cluster in the stack: an adopted cluster's CNI is outside the plan",
                           "CNI and network policy settings")
    pending = Pending()
    for cluster in clusters:
        with pending.each():
            if problem := missing_enforcement(cluster, graph):
                report(f"cluster {cluster.name!r} does not enforce NetworkPolicy: {problem}. Every team's "
                       "default deny (GPU015) is then only an object, and team pods reach each other", cluster.urn)
    pending.finish()


RULE = stack_rule(
    id="GPU016", slug="network-policy-enforced",
    title="A cluster with team namespaces enforces NetworkPolicy objects",
    rationale=("GPU015 checks that every team namespace denies by default; the CNI decides whether that means "
               "anything. EKS enforces NetworkPolicy only with the vpc-cni add-on's network policy agent "
               "(`enableNetworkPolicy: \"true\"`), AKS with `networkProfile.networkPolicy` azure, calico or "
               "cilium, GKE with Dataplane V2 (or the legacy Calico add-on), and OKE's VCN-native and flannel CNIs "
               "never: Oracle's route there is Calico, which passes here on a flannel cluster with a tigera-operator "
               "release setting installation.enabled: true and cni.type: Calico. A cluster that ignores the policies lets any team's pods "
               "reach every other team's services, rendezvous ports and notebooks."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Create the cluster with the platform's cluster components: they turn enforcement on for EKS (vpc-cni "
        "add-on), AKS (`networkPolicy: cilium`), GKE (`ADVANCED_DATAPATH`) and OKE (flannel overlay plus Calico "
        "in policy-only mode from the tigera-operator chart, components/tenancy/calico.py).",
    ),
    config_key="cluster",
    check=check,
)
