"""The Cluster Autoscaler's rows in the provisioner registry: free of Pulumi, so config validation can read them."""
from __future__ import annotations

from typing import Any, Callable

from components.provisioning.registry import ProvisionerKind, register


def _chart() -> Callable[[Any], None]:
    from components.provisioning.cluster_autoscaler import component  # Pulumi: loaded only when a stack installs it
    return component.install_chart


def _priorities() -> Callable[[Any], None]:
    from components.provisioning.cluster_autoscaler import component  # Pulumi: loaded only when a stack installs it
    return component.install_priorities


# Installed by the stack, sized by the cloud's node groups (CloudProfile.autoscaler "cluster-autoscaler").
CHART = register(ProvisionerKind(
    name="cluster-autoscaler", choosable=True, installer=_chart,
    newer_minor_note="the Cluster Autoscaler the stack installs stays on its newest pinned release"))
# Run by the cloud as part of its node pools (CloudProfile.autoscaler "pool"): the stack only ranks the pools.
CLOUD_RUN = register(ProvisionerKind(name="pool", choosable=True, installer=_priorities))
