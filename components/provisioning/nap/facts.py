"""Node auto-provisioning's row in the provisioner registry: free of Pulumi, so config validation can read it."""
from __future__ import annotations

from components.provisioning.registry import ProvisionerChecks, ProvisionerKind, register

# The extras key a cloud offers it under (declared with its shape in that cloud's facts).
KEY = "nodeAutoProvisioning"


def _checks() -> ProvisionerChecks:
    from components.provisioning.nap import checks  # the config layer: loaded when a stack is validated
    return checks.CHECKS


# Beside the chosen provisioner (the cloud's pool autoscaler): no choice names it, its extras key switches it on.
KIND = register(ProvisionerKind(name="node-auto-provisioning", choosable=False, checks=_checks))
