"""Kueue's row in the scheduler registry: free of Pulumi, so config validation can read it."""
from __future__ import annotations

from components.pins import PINS
from components.scheduling.registry import SchedulerKind, SchedulerParts, register


def _parts() -> SchedulerParts:
    from components.scheduling.kueue import component, monitoring  # Pulumi: loaded only when a stack uses it
    return SchedulerParts(component.install, monitoring)  # type: ignore[arg-type]


KIND = register(SchedulerKind(
    name="kueue", title="Kueue", namespace="kueue-system",
    chart="oci://registry.k8s.io/kueue/charts/kueue", version=PINS["kueue"].version, repository=None,
    api="kueue.x-k8s.io/v1beta2", queue_kinds=("ClusterQueue", "LocalQueue"),
    # Kueue's LocalQueue defaulting sends unlabeled jobs of a namespace to its `default` queue.
    local_queue="default", parts=_parts,
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
