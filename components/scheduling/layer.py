"""Teams and scheduling layer: team namespaces, priority classes, Kueue or Volcano queues, and job frameworks."""
from __future__ import annotations

from components.config.model import FABRIC_SIDECAR
from components.context import Context
from components.scheduling.frameworks import Frameworks
from components.scheduling.kinds import scheduler_kind
from components.scheduling.priorities import Priorities
from components.tenancy.fabric_baseline import FabricBaseline
from components.tenancy.network_guard import TeamNetworkGuard
from components.tenancy.pool_admission import GpuPoolAdmission
from components.tenancy.queue_gate import QueueGate, gates_pods
from components.tenancy.team import PRIORITY_LABEL, TEAM_LABEL, Team, TeamArgs


def install(ctx: Context) -> None:
    """Create every team's namespace and its scheduler's queues; hand the scheduler release on as a handle."""
    config = ctx.config
    kind = scheduler_kind(config.scheduler.kind)
    # Where the scheduler reads a namespace's default queue from an annotation, pods of a team go to its queue
    # unless they name another one.
    annotation = kind.namespace_queue_annotation
    # Before the namespaces: a fabric-sidecar team's namespace says privileged, so its policy must already hold.
    for team in config.teams:
        if team.pod_security == FABRIC_SIDECAR:
            ctx.handles[f"fabric-baseline/{team.name}"] = FabricBaseline(f"{team.name}-fabric-baseline", config, team,
                                                                         opts=ctx.k8s_opts())
    teams = {
        team.name: Team(team.name, TeamArgs.from_config(config, team, {annotation: team.name} if annotation else {}),
                        opts=ctx.k8s_opts(f"fabric-baseline/{team.name}"))
        for team in config.teams
    }
    for name, team in teams.items():
        ctx.handles[f"namespace/{name}"] = team.namespace  # where later layers bind roles in a team's namespace
    Priorities("priorities", TEAM_LABEL, PRIORITY_LABEL, kind.preemptible_below, opts=ctx.k8s_opts())
    GpuPoolAdmission("gpu-pools", config, TEAM_LABEL, opts=ctx.k8s_opts())
    TeamNetworkGuard("team-network", config, TEAM_LABEL, opts=ctx.k8s_opts())
    if gates_pods(config):
        QueueGate("queue-gate", config, TEAM_LABEL, opts=ctx.k8s_opts())
    ctx.handles[kind.name] = kind.install(ctx, teams)
    if config.scheduler.frameworks:
        Frameworks("frameworks", config, opts=ctx.k8s_opts())
    ctx.exports["scheduling"] = {"kind": kind.name,
                                 "teams": {name: {"namespace": name, "queue": kind.queue_of(name)} for name in teams}}
