"""The pair each of the platform's own admission rules is: a ValidatingAdmissionPolicy and the binding that makes it
deny (a policy without a binding enforces nothing)."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes.admissionregistration.v1 as admission
import pulumi_kubernetes.meta.v1 as meta


def deny_policy(name: str, policy: str, spec: dict[str, Any], parent: pulumi.Resource,
                match_resources: dict[str, Any] | None = None) -> None:
    """Policy `policy` as child `{name}-policy`, bound with Deny as `{name}-binding` (to `match_resources` only,
    when given)."""
    created = admission.ValidatingAdmissionPolicy(
        f"{name}-policy", metadata=meta.ObjectMetaArgs(name=policy), spec=spec,
        opts=pulumi.ResourceOptions(parent=parent))
    binding: dict[str, Any] = {"policyName": policy, "validationActions": ["Deny"]}
    if match_resources:
        binding["matchResources"] = match_resources
    admission.ValidatingAdmissionPolicyBinding(
        f"{name}-binding", metadata=meta.ObjectMetaArgs(name=policy), spec=binding,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[created]))
