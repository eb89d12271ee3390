"""KAI Scheduler's row in the scheduler registry: free of Pulumi, so config validation can read it."""
from __future__ import annotations

from components.pins import PINS
from components.scheduling.registry import SchedulerKind, SchedulerParts, register

# The department queue every team queue hangs under (KAI accepts workloads in leaf queues only), and the two queues
# the chart creates on install unless told not to: a team must not take any of their names.
DEPARTMENT = "gpu-platform"
CHART_QUEUES = ("default-parent-queue", "default-queue")


def _parts() -> SchedulerParts:
    from components.scheduling.kai import component, monitoring  # Pulumi: loaded only when a stack uses it
    return SchedulerParts(component.install, monitoring)  # type: ignore[arg-type]


KIND = register(SchedulerKind(
    name="kai", title="KAI Scheduler", namespace="kai-scheduler",
    chart="oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", version=PINS["kai-scheduler"].version,
    repository=None, api="scheduling.run.ai/v2", queue_kinds=("Queue",),
    local_queue=None, parts=_parts,
    workloads=False, topology=True, frameworks=False,
    # KAI reads a workload's queue from a label on it or its top owner, never from its namespace.
    namespace_queue_annotation=None,
    reserved_queue_names=(DEPARTMENT, *CHART_QUEUES),
    max_flavor_tolerations=None,
    # Over-quota sharing lets a queue take idle GPUs up to its `limit` (nominal quota plus borrowingLimit).
    borrowing_adds_capacity=True,
    reach_rule="a KAI queue grows at most to its limit, nominal quota plus borrowingLimit",
    # The reclaimer acts through Kueue Workloads or Volcano Jobs; KAI has neither.
    reclaim_rules=None,
    queue_label="kai.scheduler/queue", scheduler_name="kai-scheduler",
    # A hand-made PodGroup (with `kai.scheduler/skip-podgrouper`) names its queue in spec.queue.
    group_queue_field=("scheduling.run.ai", "podgroups", "queue"),
    # Without a `kai.scheduler/preemptibility` label, a workload of a class valued 100 or more is non-preemptible
    # and kept within its queue's quota (docs/priority/README.md:22-23 in the v0.17.0 tree).
    preemptible_below=100,
    not_simulated=("hierarchical queues with over-quota weights, reclaim between queues by fair share, "
                   "preemptibility from PriorityClass values, GPU fractions and PodGroup gangs"),
))
