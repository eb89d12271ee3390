"""Kueue's row in the scheduler registry: free of Pulumi, so config validation can read it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components.pins import PINS
from components.scheduling.registry import SchedulerKind, SchedulerMonitoring, register

if TYPE_CHECKING:
    from components.context import Context


def _install(ctx: Context, teams: dict[str, Any]) -> Any:
    from components.scheduling.kueue.component import install  # Pulumi: loaded only when a stack installs Kueue
    return install(ctx, teams)


def _monitoring() -> SchedulerMonitoring:
    from components.scheduling.kueue import monitoring
    return monitoring  # type: ignore[return-value]


KIND = register(SchedulerKind(
    name="kueue", title="Kueue", namespace="kueue-system",
    chart="oci://registry.k8s.io/kueue/charts/kueue", version=PINS["kueue"].version, repository=None,
    api="kueue.x-k8s.io/v1beta2", queue_kinds=("ClusterQueue", "LocalQueue"),
    # Kueue's LocalQueue defaulting sends unlabeled jobs of a namespace to its `default` queue.
    local_queue="default", installer=_install, monitoring=_monitoring,
    workloads=True, topology=True, frameworks=True, namespace_queue_annotation=None, reserved_queue_names=(),
    max_flavor_tolerations=8,  # ResourceFlavor.spec.tolerations maxItems in the v1beta2 CRD
    # A cohort lends only its members' unused nominal quota (the simulator's QuotaBook.available).
    borrowing_adds_capacity=False,
    reach_rule="Kueue admits at most the teams' nominal quotas: borrowing moves unused quota between teams, it "
               "adds none",
    # Reclaims by deactivating the Workload that admitted the job.
    reclaim_rules=((("batch",), ("jobs",), ("get",)), (("kueue.x-k8s.io",), ("workloads",), ("list", "patch"))),
    admission_gate="kueue.x-k8s.io/admission", queue_label="kueue.x-k8s.io/queue-name",
))
