"""The provisioning layer: whatever the stack's chosen provisioner installs in the cluster (the Cluster Autoscaler's
chart on EKS and OKE, Karpenter's charts and NodePools with `cluster.aws.provisioner: karpenter`, the NodePools of the
Karpenter AKS runs with `cluster.azure.provisioner: nap`, the priority-expander ConfigMap of AKS's own autoscaler)."""
from __future__ import annotations

from components.clouds import profile
from components.context import Context
from components.provisioning.kinds import chosen_kind


def install(ctx: Context) -> None:
    kind = chosen_kind(ctx.config.cluster.extras, profile(ctx.config.cloud))
    if kind.installer is not None:
        kind.installer()(ctx)
