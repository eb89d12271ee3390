"""Queued provisioning's row in the provisioner registry: free of Pulumi, so config validation can read it."""
from __future__ import annotations

from components.provisioning.registry import ProvisionerChecks, ProvisionerKind, register


def _checks() -> ProvisionerChecks:
    from components.provisioning.dws import checks  # the config layer: loaded when a stack is validated
    return checks.CHECKS


# Beside the chosen provisioner: no choice names it, a pool's `provisioning: queued` does; its in-cluster part is
# the admission check Kueue's installer creates.
KIND = register(ProvisionerKind(name="queued", choosable=False, checks=_checks))
