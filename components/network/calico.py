"""Calico in policy-only mode, where the cluster's own CNI ignores NetworkPolicy (OKE): the tigera-operator chart
and its CRD chart, each a Helm release in the operator's namespace.

The operator's Installation has no CNI type for OKE's CNIs, so it runs Calico's own CNI plugin on host-local IPAM
over each node's podCIDR, without BGP or IP pools: Calico wires the pods and enforces policy while flannel keeps
routing between nodes (the layout of Calico's canal and calico-policy-only manifests). That is why OKE clusters
here run flannel overlay: VCN-native pods have no node podCIDR (docs/oci.md).
"""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes.core.v1 as core
import pulumi_kubernetes.helm.v3 as helm

from components import namespaces
from components.pins import PINS
from components.tenancy.isolation import privileged_namespace_labels

REPOSITORY = "https://docs.tigera.io/calico/charts"
OPERATOR_CHART = "tigera-operator"
# From v3.32 the operator chart carries no CRDs; this chart installs them (chart README).
CRD_CHART = "crd.projectcalico.org.v1"
VERSION = PINS[OPERATOR_CHART].version
NAMESPACE = namespaces.CALICO

POLICY_ONLY_INSTALLATION: dict[str, Any] = {
    "enabled": True,
    "cni": {"type": "Calico", "ipam": {"type": "HostLocal"}},
    "calicoNetwork": {"bgp": "Disabled", "ipPools": []},
}


def operator_values() -> dict[str, Any]:
    return {"installation": POLICY_ONLY_INSTALLATION}


class CalicoPolicyOnly(pulumi.ComponentResource):
    """The operator's namespace, the Calico CRDs, then the operator with the policy-only Installation."""

    TYPE = "gpu-platform:network:CalicoPolicyOnly"

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"version": VERSION, "namespace": NAMESPACE}, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The operator runs on the host network, as calico-node does in calico-system (which the operator labels).
        namespace = core.Namespace(f"{name}-namespace", metadata={
            "name": NAMESPACE, "labels": privileged_namespace_labels()}, opts=child)
        after_namespace = pulumi.ResourceOptions(parent=self, depends_on=[namespace])
        crds = helm.Release(f"{name}-crds", helm.ReleaseArgs(
            name="calico-crds", chart=CRD_CHART, version=PINS[CRD_CHART].version,
            repository_opts=helm.RepositoryOptsArgs(repo=REPOSITORY), namespace=NAMESPACE), opts=after_namespace)
        self.release = helm.Release(f"{name}-release", helm.ReleaseArgs(
            name="calico", chart=OPERATOR_CHART, version=VERSION,
            repository_opts=helm.RepositoryOptsArgs(repo=REPOSITORY), namespace=NAMESPACE,
            values=operator_values()), opts=pulumi.ResourceOptions(parent=self, depends_on=[crds]))
        self.register_outputs({"release": self.release.name})
