"""KAI Scheduler: the pinned chart, the `gpu-platform` department queue with one leaf Queue per team, and a
Topology per set of node-label levels the topology-aware pools use.

Gang scheduling needs nothing of ours: KAI's pod-grouper makes a PodGroup for every workload (a PyTorchJob, an
MPIJob or a JobSet is one gang of all its pods; a batch Job asks with `kai.scheduler/batch-min-member`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pulumi
from pulumi_kubernetes.apiextensions import CustomResource
from pulumi_kubernetes.helm.v3 import Release, ReleaseArgs

from components.config.model import PlatformConfig
from components.scheduling import topology
from components.scheduling.kai.facts import DEPARTMENT, KIND
from components.scheduling.kai.queues import department_spec, team_queue_spec
from components.system_pool import tolerating

if TYPE_CHECKING:
    from components.context import Context
    from components.tenancy.team import Team as TeamNamespace

CHART, VERSION, NAMESPACE, API = KIND.chart, KIND.version, KIND.namespace, KIND.api
TOPOLOGY_API = "kai.scheduler/v1alpha1"
SHARES_GPUS = ("mps", "time-slicing")  # pool sharing modes whose GPUs KAI may hand out as fractions


def offers_fractions(config: PlatformConfig) -> bool:
    """GPU fractions (the `gpu-fraction` pod annotation) are offered where some pool already shares its GPUs."""
    return any(pool.sharing.mode in SHARES_GPUS for pool in config.gpu_pools)


def chart_values(config: PlatformConfig) -> dict[str, Any]:
    return {
        # No catch-all: the chart's default-queue has no GPU limit, so a workload naming no queue would run
        # outside every team's quota. Without it such a workload waits, and its PodGroup says why.
        "defaultQueue": {"createDefaultQueue": False},
        # The platform's gpu-* PriorityClasses are the only vocabulary teams get (and the ceiling policy checks);
        # KAI's train/build/inference classes would sit below every one of them.
        "defaultPriorityClasses": {"enabled": False},
        # global.tolerations reach the operator, its hook Jobs and, through the Config CR, every component the
        # operator deploys: all on the system pool.
        "global": {"gpuSharing": offers_fractions(config), "tolerations": tolerating()},
    }


class Kai(pulumi.ComponentResource):
    """KAI Scheduler and the queue tree of the teams."""

    TYPE = "gpu-platform:scheduling:Kai"

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"chart": CHART, "version": VERSION, "namespace": NAMESPACE,
                                           "teams": [t.name for t in config.teams]}, opts)
        self.release = Release(
            f"{name}-release",
            ReleaseArgs(name="kai-scheduler", chart=CHART, version=VERSION, namespace=NAMESPACE,
                        create_namespace=True, values=chart_values(config)),
            opts=pulumi.ResourceOptions(parent=self),
        )
        after = pulumi.ResourceOptions(parent=self, depends_on=[self.release])
        # A team's queue is protected like its namespace (tenancy/team.py says why).
        team_guard = pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(protect=config.protected))
        for topology_name, levels in topology.topologies(config).items():
            CustomResource(f"{name}-topology-{topology_name}", api_version=TOPOLOGY_API, kind="Topology",
                           metadata={"name": topology_name}, spec=topology.topology_spec(levels), opts=after)
        department = CustomResource(f"{name}-department", api_version=API, kind="Queue",
                                    metadata={"name": DEPARTMENT}, spec=department_spec(config), opts=after)
        for team in config.teams:
            CustomResource(f"{name}-queue-{team.name}", api_version=API, kind="Queue", metadata={"name": team.name},
                           spec=team_queue_spec(config, team),
                           opts=pulumi.ResourceOptions.merge(team_guard,
                                                             pulumi.ResourceOptions(depends_on=[department])))
        self.register_outputs({"release": self.release.status})


def install(ctx: Context, teams: dict[str, TeamNamespace]) -> Release:
    """The scheduling layer's entry (its row in facts.py names it): KAI, one leaf Queue per team."""
    return Kai("kai", ctx.config, opts=ctx.k8s_opts()).release
