"""Team groups against the cloud's identities: RBAC binds them by name, so the cloud must put that name in tokens."""
from __future__ import annotations

from components.clouds.facts import CloudProfile
from components.config.errors import Problems
from components.config.fields import join
from components.config.model import Cluster, Team


def team_group_rules(cluster: Cluster, teams: list[Team], prof: CloudProfile, problems: Problems) -> None:
    """Group names the cloud can deliver, and the cluster setting that delivers them."""
    if prof.team_group_check is None:
        return
    for i, team in enumerate(teams):
        for j, group in enumerate(team.groups):
            problem = prof.team_group_check(group)
            if problem:
                problems.add(join(join(join("teams", i), "groups"), j), problem)
    grouped = [t.name for t in teams if t.groups]
    path = join(f"cluster.{prof.name}", prof.team_groups_key)
    already = any(p.path == path for p in problems.errors)  # set but invalid: that error says enough
    # An adopted cluster's identity mapping is whatever its owner configured; nothing here would create it.
    if prof.team_groups_key and grouped and not cluster.adopted and prof.team_groups_key not in cluster.extras \
            and not already:
        problems.add(path,
                     f"is required when teams list groups ({', '.join(grouped)}): without it {prof.service} passes no "
                     f"group to Kubernetes RBAC and the teams' RoleBindings match nobody "
                     f"({prof.extras[prof.team_groups_key].doc})")
