"""The scheduler registry: one `SchedulerKind` row per scheduler package, like `CloudProfile` for clouds.

Everything that differs between schedulers and is read outside a scheduler's own package lives in its row:
config validation, tenancy, observability, the reclaimer and the layer ask the row, never `kind == "kueue"`.
Each package (`components/scheduling/<kind>/`) registers its row from its `facts.py` when
`components/scheduling/kinds.py` imports it: adding a scheduler is one package plus one import line there.

Free of Pulumi on purpose: config validation imports only facts, so a row reaches its installer and its monitoring
through a function of its own package that imports them only when called.

Two copies stay outside on purpose: the policy pack (`policies/`) is standalone and never imports `components/`,
and the reclaimer script (`observability/reclaimer/job.py`) runs from a ConfigMap with the standard library only
(tests/scheduling/test_scheduler_kinds.py checks both against the rows).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from components.rows import Rows


class SchedulerMonitoring(Protocol):
    """What a scheduler's `monitoring` module offers the observability layer (plain data, no Pulumi)."""

    SCRAPE: dict[str, Any] | None  # ServiceMonitor selector and endpoints of the service serving its metrics

    def recording_rules(self) -> list[dict[str, Any]]: ...

    def pending_alert(self, minutes: int) -> tuple[str, str, str] | None: ...  # expr, description, runbook

    def dashboard_panels(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class SchedulerParts:
    """The Pulumi side of a scheduler package, which its row loads only when a stack installs or watches it."""

    # `install(ctx, teams) -> release`; ctx is the component context (components.context.Context), which this
    # Pulumi-free table sits below and so names only in words.
    install: Callable[[Any, dict[str, Any]], Any]
    monitoring: SchedulerMonitoring


@dataclass(frozen=True)
class SchedulerKind:
    """One batch scheduler: its release, its queue objects, and what the rest of the platform must know of it."""

    name: str  # the `scheduler.kind` value
    title: str  # how messages name it
    namespace: str  # where its release runs (a reserved namespace: no team may take it)
    chart: str
    version: str
    repository: str | None  # None: the chart is an OCI reference or a local package
    api: str  # apiVersion of its queue objects
    queue_kinds: tuple[str, ...]  # the kinds of the queue objects it creates per team
    local_queue: str | None  # a team's queue inside its namespace, None: the cluster queue named after the team
    parts: Callable[[], SchedulerParts]  # its installer and monitoring, imported from its own package on call
    workloads: bool  # admits Workload objects and exports per-ClusterQueue workload and quota metrics
    topology: bool  # supports topology-aware placement (gpuPools[].topology)
    frameworks: bool  # job frameworks (scheduler.frameworks) are enabled as its integrations
    namespace_queue_annotation: str | None  # annotation on a team namespace naming its default queue
    reserved_queue_names: tuple[str, ...]  # queue names the scheduler keeps for itself
    max_flavor_tolerations: int | None  # tolerations one pool's queue flavor can carry, None: no limit
    # Whether borrowing lets a team's queue grow into idle capacity beyond the teams' nominal quotas together, and
    # the reason the unreachable-capacity warning gives (components/config/quota_reach.py).
    borrowing_adds_capacity: bool
    reach_rule: str
    # What the reclaimer's role may do in an opted-in namespace besides reading pods and writing Events, as
    # (apiGroups, resources, verbs); None: the reclaimer cannot act through this scheduler.
    reclaim_rules: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] | None
    # The scheduling gate its pod webhook puts on every pod it must admit (None: it gates no pods), and the label a
    # pod names its queue with.
    admission_gate: str | None = None
    queue_label: str | None = None
    # The `spec.schedulerName` a pod sets to be placed by it (None: it holds pods at admission and the default
    # scheduler places them once it lets them go), and where its gang objects name their queue in their own spec,
    # as (api group, resource, spec field): a pod's queue label is not the only way into a queue there.
    scheduler_name: str | None = None
    group_queue_field: tuple[str, str, str] | None = None
    # PriorityClass values at or above which it refuses to preempt a workload and so keeps it within its queue's
    # quota (None: it reads no preemptibility from the value); components/scheduling/priorities.py renumbers the
    # waiting classes below it.
    preemptible_below: int | None = None
    # What the simulator would need to model before its numbers meant anything for this scheduler; None: modelled
    # (gpu_platform/simulator has its model).
    not_simulated: str | None = None

    def queue_of(self, team: str) -> str:
        """A team's queue as its jobs name it (the team's namespace has the team's name)."""
        return f"{team}/{self.local_queue}" if self.local_queue else team

    def install(self, ctx: Any, teams: dict[str, Any]) -> Any:
        """Create the scheduler component; returns its Helm release for later layers to depend on."""
        return self.parts().install(ctx, teams)

    def monitoring(self) -> SchedulerMonitoring:
        """Its scrape target, recording rules, pending-work alert and dashboard panels."""
        return self.parts().monitoring


KINDS: Rows[SchedulerKind] = Rows("scheduler kind")
register = KINDS.register
