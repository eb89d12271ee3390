"""Team NetworkPolicies are the platform's, not the team's.

The built-in `edit` ClusterRole teams get in their namespace may create, change and delete NetworkPolicies. A team
could then delete its `default-deny`, undo `egress: none`, or allow egress to the link-local cloud metadata address
(and with it the node's cloud credentials) or to private endpoints: everything isolation.py writes. A real API
server shows it (tests/cluster/test_cluster_tenancy.py). `edit` cannot be narrowed (it is aggregated, and a RoleBinding
can
only add), so this ValidatingAdmissionPolicy refuses NetworkPolicy writes in a team namespace by any configured
team group (`teams[].groups`, the identities the team RoleBindings name). The platform's deployer is not in one and
keeps managing them.
"""
from __future__ import annotations

import json

import pulumi

from components.config.model import PlatformConfig
from components.tenancy.deny_policy import deny_policy

POLICY = "gpu-platform-team-network-policies"


def guard_rules(config: PlatformConfig, team_label: str) -> dict:
    groups = json.dumps(sorted({group for team in config.teams for group in team.groups}))
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": team_label, "operator": "Exists"}]},
            "resourceRules": [{"apiGroups": ["networking.k8s.io"], "apiVersions": ["*"],
                               "operations": ["CREATE", "UPDATE", "DELETE"], "resources": ["networkpolicies"],
                               "scope": "Namespaced"}],
        },
        "variables": [{"name": "teamIdentity",
                       "expression": f"has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in {groups})"}],
        "validations": [{
            "expression": "!variables.teamIdentity",
            "message": "a team's NetworkPolicies are the platform's: change teams[].egress or add a platform-owned "
                       "policy instead (docs/tenancy.md)",
            "reason": "Forbidden",
        }],
    }


class TeamNetworkGuard(pulumi.ComponentResource):
    """The admission policy keeping team NetworkPolicies out of the teams' hands, and its binding."""

    TYPE = "gpu-platform:tenancy:TeamNetworkGuard"

    def __init__(self, name: str, config: PlatformConfig, team_label: str,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"policy": POLICY}, opts)
        deny_policy(name, POLICY, guard_rules(config, team_label), self)
        self.register_outputs({"policy": POLICY})
