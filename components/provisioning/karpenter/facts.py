"""Karpenter's row in the provisioner registry: free of Pulumi, so config validation can read it."""
from __future__ import annotations

from typing import Any, Callable

from components.provisioning.registry import ProvisionerChecks, ProvisionerKind, register


def _checks() -> ProvisionerChecks:
    from components.provisioning.karpenter import checks  # the config layer: loaded when a stack is validated
    return checks.CHECKS


def _installer() -> Callable[[Any], None]:
    from components.provisioning.karpenter import component  # Pulumi: loaded only when a stack installs it
    return component.install


# Installed by the stack, or run by the cloud (which then spells its choice its own way: CloudProfile.provisioner_kinds).
KIND = register(ProvisionerKind(name="karpenter", choosable=True, checks=_checks, installer=_installer))
