"""Teams and scheduling layer: team namespaces, priority classes, Kueue or Volcano queues, and job frameworks."""
from __future__ import annotations

from components.context import Context
from components.scheduling import volcano
from components.scheduling.frameworks import Frameworks
from components.scheduling.kueue import LOCAL_QUEUE, Kueue, KueueArgs
from components.scheduling.priorities import Priorities
from components.scheduling.volcano import Volcano
from components.tenancy.pool_admission import GpuPoolAdmission
from components.tenancy.team import PRIORITY_LABEL, TEAM_LABEL, Team, TeamArgs


def install(ctx: Context) -> None:
    """Create every team's namespace and its scheduler's queues; hand the scheduler release on as a handle."""
    config = ctx.config
    kind = config.scheduler.kind
    teams = {
        team.name: Team(team.name, TeamArgs.from_config(
            config, team, volcano.namespace_annotations(team) if kind == "volcano" else {}), opts=ctx.k8s_opts())
        for team in config.teams
    }
    for name, team in teams.items():
        ctx.handles[f"namespace/{name}"] = team.namespace  # where later layers bind roles in a team's namespace
    Priorities("priorities", TEAM_LABEL, PRIORITY_LABEL, opts=ctx.k8s_opts())
    GpuPoolAdmission("gpu-pools", config, TEAM_LABEL, opts=ctx.k8s_opts())
    if kind == "kueue":
        scheduler = Kueue("kueue", KueueArgs.from_config(
            config, {name: t.namespace.metadata.name for name, t in teams.items()}), opts=ctx.k8s_opts())
        queues = {name: f"{name}/{LOCAL_QUEUE}" for name in teams}
    else:
        scheduler = Volcano("volcano", config, opts=ctx.k8s_opts())
        queues = dict(zip(teams, teams))
    ctx.handles[kind] = scheduler.release
    if config.scheduler.frameworks:
        Frameworks("frameworks", config, opts=ctx.k8s_opts())
    ctx.exports["scheduling"] = {"kind": kind,
                                 "teams": {name: {"namespace": name, "queue": queues[name]} for name in teams}}
