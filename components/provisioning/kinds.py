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

__all__ = ["KINDS", "ProvisionerKind", "chosen", "chosen_kind", "chosen_name", "kind_of"]


def chosen(extras: dict[str, Any], prof: CloudProfile) -> str:
    """The stack's provisioner value: the cloud's extras choice, else the cloud's autoscaler."""
    return extras.get(prof.provisioner_key, prof.autoscaler) if prof.provisioner_key else prof.autoscaler


def chosen_name(extras: dict[str, Any], prof: CloudProfile) -> str:
    """The name of the stack's provisioner: the choice, as the cloud spells it, translated."""
    value = chosen(extras, prof)
    return prof.provisioner_kinds.get(value, value)


def chosen_kind(extras: dict[str, Any], prof: CloudProfile) -> ProvisionerKind:
    """The row that installs the stack's provisioner."""
    return kind_of(chosen_name(extras, prof))


def kind_of(name: str) -> ProvisionerKind:
    """The row of a provisioner a cloud can choose; any other name is refused with the names that are offered."""
    kind = KINDS.get(name)
    if kind is None or not kind.choosable:
        offered = [k.name for k in KINDS.values() if k.choosable]
        raise ValueError(f"no provisioner {name!r} to choose; allowed: {', '.join(offered)}")
    return kind
