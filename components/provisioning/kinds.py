"""The provisioners the platform offers: one import line per provisioner package, each registering its row.

Only the packages' Pulumi-free `facts` modules load here; their checks load when a stack is validated, their
components when it is installed.
"""
from __future__ import annotations

from typing import Any

import components.provisioning.cluster_autoscaler.facts  # noqa: F401,I001  (Cluster Autoscaler: ours or the cloud's)
import components.provisioning.karpenter.facts  # noqa: F401  (Karpenter: ours or the cloud's)
import components.provisioning.nap.facts  # noqa: F401  (node auto-provisioning limits)
import components.provisioning.dws.facts  # noqa: F401  (queued provisioning through Kueue)
from components.clouds.facts import CloudProfile
from components.provisioning.registry import KINDS, ProvisionerKind

__all__ = ["KINDS", "ProvisionerKind", "chosen", "chosen_kind", "kind_of"]


def chosen(extras: dict[str, Any], prof: CloudProfile) -> str:
    """The stack's provisioner value: the cloud's extras choice, else the cloud's autoscaler."""
    return extras.get(prof.provisioner_key, prof.autoscaler) if prof.provisioner_key else prof.autoscaler


def chosen_kind(extras: dict[str, Any], prof: CloudProfile) -> ProvisionerKind:
    """The row that installs the stack's provisioner."""
    return kind_of(chosen(extras, prof))


def kind_of(value: str) -> ProvisionerKind:
    """The row answering a provisioner value; a value no row answers names the ones that are offered."""
    for kind in KINDS.values():
        if value in kind.values:
            return kind
    offered = [v for kind in KINDS.values() for v in kind.values]
    raise ValueError(f"no provisioner answers {value!r}; allowed: {', '.join(offered)}")
