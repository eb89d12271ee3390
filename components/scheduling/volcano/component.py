"""Volcano: the pinned chart with a scheduler configuration for GPU quotas, and one Queue per team.

Queues use the `capacity` plugin (per-resource `deserved`, `capability`, `guarantee`), so `proportion` is off:
the two must never run together. The mapping from Kueue terms: nominal quota -> `deserved` (lent when idle,
reclaimed back), nominal + borrowingLimit -> `capability`, nominal - lendingLimit -> `guarantee` (reserved,
never lent).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pulumi
import yaml
from pulumi_kubernetes.apiextensions import CustomResource
from pulumi_kubernetes.helm.v3 import Release, ReleaseArgs, RepositoryOptsArgs

from components.config.model import PRIORITIES, PlatformConfig, Team
from components.config.shares import gpu_resources, has_cohort, team_ceiling, team_nominal, team_reserved, \
    team_weight
from components.scheduling.volcano.facts import KIND
from components.system_pool import tolerating

if TYPE_CHECKING:
    from components.context import Context
    from components.tenancy.team import Team as TeamNamespace

CHART, VERSION, REPOSITORY, NAMESPACE, API = KIND.chart, KIND.version, KIND.repository, KIND.namespace, KIND.api
# enqueue admits jobs whose minimum fits; preempt works inside a queue by priority, reclaim takes lent
# capacity back across queues; backfill fills gaps with best-effort pods.
ACTIONS = ("enqueue", "allocate", "preempt", "reclaim", "backfill")


def scheduler_conf(config: PlatformConfig) -> dict[str, Any]:
    """`volcano-scheduler.conf`: the chart default with reclaim and preemption, capacity instead of proportion.

    The gang plugin stays on even with `scheduler.gang.enabled: false`: it is what reads a PodGroup's minMember,
    and a job with minMember 1 is simply not a gang. overcommit is dropped so `enqueue` admits only jobs that fit.
    """
    gpu_names = gpu_resources(config)
    return {
        "actions": ", ".join(ACTIONS),
        "tiers": [
            {"plugins": [
                {"name": "priority"},
                {"name": "gang", "enablePreemptable": False},
                {"name": "conformance"},
            ]},
            {"plugins": [
                {"name": "drf", "enablePreemptable": False},
                {"name": "predicates"},
                {"name": "capacity"},
                {"name": "nodeorder"},
                # binpack scores only CPU and memory unless told: pack GPUs so whole nodes stay free for gangs.
                {"name": "binpack", "arguments": {
                    "binpack.resources": ", ".join(gpu_names),
                    **{f"binpack.resources.{n}": 10 for n in gpu_names}}},
            ]},
        ],
    }


def queue_spec(config: PlatformConfig, team: Team) -> dict[str, Any]:
    """The team's Queue; resources it has no share of are left out (its ResourceQuota holds them at 0)."""
    nominal = team_nominal(config, team)
    ceiling = team_ceiling(config, team)
    spec: dict[str, Any] = {
        "weight": team_weight(config, team),
        "reclaimable": True,
        # Higher-priority queues are scheduled first and reclaimed from last.
        "priority": len(PRIORITIES) - PRIORITIES.index(team.priority),
        "deserved": nominal,
        "capability": {name: ceiling[name] for name in nominal},
    }
    reserved = team_reserved(config, team)
    if has_cohort(config) and reserved:
        spec["guarantee"] = {"resource": reserved}
    return spec


class Volcano(pulumi.ComponentResource):
    """Volcano and one Queue per team."""

    TYPE = "gpu-platform:scheduling:Volcano"

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"chart": CHART, "version": VERSION, "namespace": NAMESPACE,
                                           "teams": [t.name for t in config.teams]}, opts)
        self.release = Release(
            f"{name}-release",
            ReleaseArgs(
                name="volcano", chart=CHART, version=VERSION, namespace=NAMESPACE, create_namespace=True,
                repository_opts=RepositoryOptsArgs(repo=REPOSITORY),
                values={"custom": {"scheduler_config_override": yaml.safe_dump(scheduler_conf(config),
                                                                               sort_keys=False),
                                   # Admission, controllers and scheduler (its agent keeps its own list).
                                   "default_tolerations": tolerating()}},
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        # A team's queue is protected like its namespace (tenancy/team.py says why).
        team_guard = pulumi.ResourceOptions(parent=self, depends_on=[self.release], protect=config.protected)
        for team in config.teams:
            CustomResource(f"{name}-queue-{team.name}", api_version=API, kind="Queue", metadata={"name": team.name},
                           spec=queue_spec(config, team), opts=team_guard)
        self.register_outputs({"release": self.release.status})


def install(ctx: Context, teams: dict[str, TeamNamespace]) -> Release:
    """The scheduling layer's entry (its row in facts.py names it): Volcano, one cluster-wide Queue per team."""
    return Volcano("volcano", ctx.config, opts=ctx.k8s_opts()).release
