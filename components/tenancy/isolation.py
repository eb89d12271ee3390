"""What keeps one team's pods away from the nodes, the network and the other teams: Pod Security Admission
labels and NetworkPolicies for team namespaces, and the explicit labels of the platform's own namespaces.

Pod Security: team namespaces *enforce* `baseline` (no privileged containers, host namespaces, hostPath, host
ports or added capabilities: what would let a pod own its GPU node) and *audit* and *warn* on `restricted`, so
teams see what stricter hardening would refuse without being blocked. GPU pods need none of what baseline
forbids: the device plugin hands devices to the container through the runtime, not through hostPath or
privilege. The version is pinned to the cluster's minor rather than `latest`, so a managed control-plane upgrade
(GKE and AKS auto-upgrade) never tightens admission under running teams; the labels move with
`cluster.kubernetesVersion` in the same reviewed `pulumi up`.

Network: everything is denied, then allowed explicitly: DNS to kube-dns, traffic inside the team's own namespace,
Prometheus scraping from its namespace, and, unless `teams[].egress: none`, egress to public addresses only (never
private ranges, which hold other teams' pods and services, nor link-local, which holds the cloud metadata
endpoint and its node credentials). The API server is not reachable: training and serving pods have no use for
it, and a token reaching it from a team pod is exactly what isolation should contain.
"""
from __future__ import annotations

from typing import Any

from components import namespaces
from components.clouds.facts import PRIVATE_NETWORKS
from components.config.model import FABRIC_SIDECAR, PlatformConfig, Team
from components.tenancy.fabric_baseline import POLICY_LABEL, policy_name

PSA = "pod-security.kubernetes.io"
ENFORCED = "baseline"
AUDITED = "restricted"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace, not forgeable
DNS_NAMESPACE = namespaces.KUBE_SYSTEM
DNS_POD_LABELS = {"k8s-app": "kube-dns"}  # CoreDNS on EKS, AKS and OKE and kube-dns on GKE all carry it
# Never reachable as "internet": RFC 1918 and CGNAT (pod, service and node ranges on every cloud), link-local
# (169.254.169.254 metadata, node credentials), and the IPv6 unique-local and link-local ranges (fd00:ec2::254).
PRIVATE_V4 = (*map(str, PRIVATE_NETWORKS), "169.254.0.0/16")  # the created networks' space, then link-local
PRIVATE_V6 = ("fc00::/7", "fe80::/10")


def pod_security_labels(version: str, enforce: str = ENFORCED, audit: str = AUDITED) -> dict[str, str]:
    """Pod Security Admission labels: `enforce` refuses, `audit` and `warn` only report, all at one pinned version."""
    pinned = f"v{version}"
    return {f"{PSA}/enforce": enforce, f"{PSA}/enforce-version": pinned,
            f"{PSA}/audit": audit, f"{PSA}/audit-version": pinned,
            f"{PSA}/warn": audit, f"{PSA}/warn-version": pinned}


def team_pod_security(config: PlatformConfig, team: Team) -> dict[str, str]:
    """The team's enforced level (teams[].podSecurity, baseline unless a fabric needs more); audit and warn stay
    restricted, so what the team's pods would need to tighten keeps being reported."""
    if team.pod_security == FABRIC_SIDECAR:
        # Pod Security admission cannot except one container; the namespace's own admission policy
        # (fabric_baseline.py, named in the label) enforces baseline with the fabric sidecar's exception instead.
        return {**pod_security_labels(config.cluster.kubernetes_minor, enforce="privileged"),
                POLICY_LABEL: policy_name(team.name)}
    return pod_security_labels(config.cluster.kubernetes_minor, enforce=team.pod_security)


def privileged_namespace_labels() -> dict[str, str]:
    """For platform namespaces whose agents need the host (node-exporter: host network, PID and paths): said
    explicitly, so a cluster-wide PSA default can never silently break them, and a reader sees the exception."""
    return {f"{PSA}/enforce": "privileged"}


def _namespace(name: str) -> dict[str, Any]:
    return {"matchLabels": {NAMESPACE_NAME_LABEL: name}}


def network_policies(config: PlatformConfig, team: Team) -> dict[str, dict[str, Any]]:
    """The configured team's NetworkPolicy specs by object name."""
    return isolating_policies(team.egress, config.observability.prometheus.namespace)


def isolating_policies(egress: str, prometheus_namespace: str) -> dict[str, dict[str, Any]]:
    """NetworkPolicy specs by object name: default deny first, then each allowance on its own, so `kubectl get
    networkpolicy` reads as the list of what the team may do."""
    everyone = {"podSelector": {}}
    policies: dict[str, dict[str, Any]] = {
        "default-deny": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
        "allow-same-namespace": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                                 "ingress": [{"from": [everyone]}], "egress": [{"to": [everyone]}]},
        "allow-dns": {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{
            "to": [{"namespaceSelector": _namespace(DNS_NAMESPACE), "podSelector": {"matchLabels": DNS_POD_LABELS}}],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]},
        "allow-prometheus-scrape": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{
            "from": [{"namespaceSelector": _namespace(prometheus_namespace)}]}]},
    }
    if egress == "internet":
        policies["allow-internet-egress"] = {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [
            {"ipBlock": {"cidr": "0.0.0.0/0", "except": list(PRIVATE_V4)}},
            {"ipBlock": {"cidr": "::/0", "except": list(PRIVATE_V6)}}]}]}
    return policies
