"""The schedulers the platform installs, one typed row each, like `CloudProfile` for clouds.

Everything that differs between Kueue and Volcano and is read outside the scheduler's own component lives here:
config validation, tenancy, observability and the layer ask the row, never `kind == "kueue"`. Adding a scheduler
is one row here plus its component module with an `install(ctx, teams)` function.

Dependency-free on purpose: the config model validates `scheduler.kind` against this table, and the scheduler
components import the config model, so the row names its installer by module path and loads it on use.

Two copies stay outside on purpose: the policy pack (`policies/`) is standalone and never imports `components/`,
and the reclaimer script (`observability/reclaimer/job.py`) runs from a ConfigMap with the standard library only.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from components.pins import PINS

if TYPE_CHECKING:
    from components.context import Context


@dataclass(frozen=True)
class SchedulerKind:
    """One batch scheduler: its release, its queue objects, and what the rest of the platform must know of it."""

    name: str  # the `scheduler.kind` value
    title: str  # how messages name it
    namespace: str  # where its release runs (a reserved namespace: no team may take it)
    chart: str
    version: str
    repository: str | None  # None: the chart is an OCI reference
    api: str  # apiVersion of its queue objects
    queue_kinds: tuple[str, ...]  # the kinds of the queue objects it creates per team
    local_queue: str | None  # a team's queue inside its namespace, None: the cluster queue named after the team
    installer: str  # "module:function" that creates the component, `install(ctx, teams) -> release`
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
    # The scheduling gate its pod webhook puts on every pod it must admit (None: it gates no pods), and the label a
    # pod names its queue with.
    admission_gate: str | None = None
    queue_label: str | None = None

    def queue_of(self, team: str) -> str:
        """A team's queue as its jobs name it (the team's namespace has the team's name)."""
        return f"{team}/{self.local_queue}" if self.local_queue else team

    def install(self, ctx: Context, teams: dict[str, Any]) -> Any:
        """Create the scheduler component; returns its Helm release for later layers to depend on."""
        module, function = self.installer.split(":")
        installer: Callable[[Context, dict[str, Any]], Any] = getattr(importlib.import_module(module), function)
        return installer(ctx, teams)


KINDS: dict[str, SchedulerKind] = {k.name: k for k in (
    SchedulerKind(
        name="kueue", title="Kueue", namespace="kueue-system",
        chart="oci://registry.k8s.io/kueue/charts/kueue", version=PINS["kueue"].version, repository=None,
        api="kueue.x-k8s.io/v1beta2", queue_kinds=("ClusterQueue", "LocalQueue"),
        # Kueue's LocalQueue defaulting sends unlabeled jobs of a namespace to its `default` queue.
        local_queue="default", installer="components.scheduling.kueue:install",
        workloads=True, topology=True, frameworks=True, namespace_queue_annotation=None, reserved_queue_names=(),
        max_flavor_tolerations=8,  # ResourceFlavor.spec.tolerations maxItems in the v1beta2 CRD
        # A cohort lends only its members' unused nominal quota (the simulator's QuotaBook.available).
        borrowing_adds_capacity=False,
        reach_rule="Kueue admits at most the teams' nominal quotas: borrowing moves unused quota between teams, it "
                   "adds none",
        admission_gate="kueue.x-k8s.io/admission", queue_label="kueue.x-k8s.io/queue-name",
    ),
    SchedulerKind(
        name="volcano", title="Volcano", namespace="volcano-system",
        chart="volcano", version=PINS["volcano"].version, repository="https://volcano-sh.github.io/helm-charts",
        api="scheduling.volcano.sh/v1beta1", queue_kinds=("Queue",),
        local_queue=None, installer="components.scheduling.volcano:install",
        workloads=False, topology=False, frameworks=False,
        namespace_queue_annotation="scheduling.volcano.sh/queue-name",
        reserved_queue_names=("root",),  # Volcano's own root queue
        max_flavor_tolerations=None,
        # The capacity plugin lets a queue take idle capacity up to its capability (deserved plus borrowingLimit).
        borrowing_adds_capacity=True,
        reach_rule="a Volcano queue grows at most to its nominal quota plus borrowingLimit",
    ),
)}
SCHEDULERS: tuple[str, ...] = tuple(KINDS)


def scheduler_kind(name: str) -> SchedulerKind:
    """The row for a `scheduler.kind` value; an unknown one names the allowed values."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown scheduler kind {name!r}; allowed: {', '.join(SCHEDULERS)}") from None
