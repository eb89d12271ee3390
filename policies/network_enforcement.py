"""Whether each cloud's cluster enforces NetworkPolicy objects, read from the plan (GPU016).

A NetworkPolicy is only data: the CNI (or a policy engine beside it) enforces it, and on every one of the four
clouds a cluster can be created whose CNI ignores it. Each reader returns None when the cluster's own settings
enforce policies, else what is missing.
"""
from __future__ import annotations

import json
from typing import Callable

from collections.abc import Mapping

from pulumi_policy import PolicyResource

from policies.charts import Release, releases
from policies.graph import Graph
from policies.props import Undecidable, get

EKS_ADDON = "aws:eks/addon:Addon"
CALICO_OPERATOR = "tigera-operator"
# AKS's networkProfile.networkPolicy values that enforce (its API also takes `none`).
AKS_ENFORCERS = ("azure", "calico", "cilium")


def _eks(cluster: PolicyResource, graph: Graph) -> str | None:
    name = get(cluster.props, "name")
    addons = [a for a in graph.of_type(EKS_ADDON) if get(a.props, "addonName") == "vpc-cni"]
    mine = [a for a in addons if get(a.props, "clusterName") == name]
    if not mine:
        if addons and name is None:
            raise Undecidable(f"{cluster.name}: the cluster's name is not set in the plan, so its vpc-cni add-on "
                              "cannot be told apart")
        # The VPC CNI EKS installs by itself runs without its network policy agent.
        return ("no managed vpc-cni add-on for it, and the VPC CNI EKS installs by default runs without its network "
                "policy agent")
    for addon in mine:
        text = get(addon.props, "configurationValues", "")
        try:
            values = json.loads(text) if text else {}
        except (TypeError, ValueError):
            return f"its vpc-cni add-on's configurationValues are not JSON ({str(text)[:60]!r})"
        if isinstance(values, dict) and str(values.get("enableNetworkPolicy", "")).lower() == "true":
            return None
    return 'its vpc-cni add-on does not set configurationValues {"enableNetworkPolicy": "true"}'


def _aks(cluster: PolicyResource, graph: Graph) -> str | None:
    value = get(cluster.props, "networkProfile.networkPolicy")
    if value in AKS_ENFORCERS:
        return None
    return (f"networkProfile.networkPolicy is {value or 'not set'}; one of {', '.join(AKS_ENFORCERS)} enforces "
            "NetworkPolicy (chosen at cluster creation)")


def _gke(cluster: PolicyResource, graph: Graph) -> str | None:
    p = cluster.props
    if get(p, "datapathProvider") == "ADVANCED_DATAPATH":
        return None
    # The legacy Calico enforcement needs both the cluster setting and its add-on on.
    if get(p, "networkPolicy.enabled") is True and get(p, "addonsConfig.networkPolicyConfig.disabled") is not True:
        return None
    return ("neither Dataplane V2 (datapathProvider: ADVANCED_DATAPATH) nor networkPolicy.enabled with the "
            "networkPolicyConfig add-on is on")


def _oke(cluster: PolicyResource, graph: Graph) -> str | None:
    cnis = sorted({str(get(o, "cniType", "")) for o in get(cluster.props, "clusterPodNetworkOptions", [])
                   if get(o, "cniType")}) or ["FLANNEL_OVERLAY"]
    # Both OKE CNIs leave NetworkPolicy to Calico (OKE "Pod Networking"). The operator can run it beside flannel
    # only (Calico's CNI on host-local IPAM over the node podCIDR, which VCN-native pods do not use).
    if cnis != ["FLANNEL_OVERLAY"]:
        return (f"OKE's {', '.join(cnis)} CNI does not enforce NetworkPolicy objects, and Calico through the "
                "tigera operator fits only FLANNEL_OVERLAY clusters")
    operators = releases(graph, CALICO_OPERATOR)
    if not operators:
        return ("OKE's FLANNEL_OVERLAY CNI does not enforce NetworkPolicy objects; Oracle's route is Calico in "
                "policy-only mode, which this stack does not install (no tigera-operator release)")
    problems = [problem for release in operators if (problem := _calico_problem(release))]
    return None if len(problems) < len(operators) else "; ".join(problems)


def _calico_problem(release: Release) -> str | None:
    """Why a tigera-operator release does not make Calico police the pods, or None. Fail closed: only values the
    release sets count, not the operator's provider-dependent defaults."""
    installation = release.values.get("installation")
    if not isinstance(installation, Mapping) or installation.get("enabled") is not True:
        return f"{release.resource.name} does not set installation.enabled: true, so no Calico runs"
    cni = get(installation, "cni.type")
    if cni != "Calico":
        # Felix polices only the interfaces of the CNI it was told about; no other type names OKE's flannel.
        return f"{release.resource.name} sets installation.cni.type {cni or '(unset)'}, not Calico"
    return None


READERS: dict[str, Callable[[PolicyResource, Graph], str | None]] = {
    "aws:eks/cluster:Cluster": _eks,
    "azure-native:containerservice:ManagedCluster": _aks,
    "gcp:container/cluster:Cluster": _gke,
    "oci:ContainerEngine/cluster:Cluster": _oke,
}


def missing_enforcement(cluster: PolicyResource, graph: Graph) -> str | None:
    """What keeps `cluster` from enforcing NetworkPolicy objects, or None (raises for values unknown at preview)."""
    return READERS[cluster.resource_type](cluster, graph)
