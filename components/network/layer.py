"""The network layer: a NetworkPolicy engine on clusters whose CNI enforces none, before any team namespace exists."""
from __future__ import annotations

from components.clouds import profile
from components.context import Context
from components.network.calico import CalicoPolicyOnly


def install(ctx: Context) -> None:
    """Calico where the cloud profile asks for it, on clusters the stack creates: an adopted cluster's CNI is
    outside the plan, and Calico's CNI on a VCN-native OKE cluster would take its pods off the VCN."""
    config = ctx.config
    if config.teams and profile(config.cloud).calico_policy_only and not config.cluster.adopted:
        CalicoPolicyOnly("calico", opts=ctx.k8s_opts())
