"""Volcano's row in the scheduler registry: free of Pulumi, so config validation can read it."""
from __future__ import annotations

from components.pins import PINS
from components.scheduling.registry import SchedulerKind, SchedulerParts, register


def _parts() -> SchedulerParts:
    from components.scheduling.volcano import component, monitoring  # Pulumi: loaded only when a stack uses it
    return SchedulerParts(component.install, monitoring)  # type: ignore[arg-type]


KIND = register(SchedulerKind(
    name="volcano", title="Volcano", namespace="volcano-system",
    chart="volcano", version=PINS["volcano"].version, repository="https://volcano-sh.github.io/helm-charts",
    api="scheduling.volcano.sh/v1beta1", queue_kinds=("Queue",),
    local_queue=None, parts=_parts,
    workloads=False, topology=False, frameworks=False,
    namespace_queue_annotation="scheduling.volcano.sh/queue-name",
    reserved_queue_names=("root",),  # Volcano's own root queue
    max_flavor_tolerations=None,
    # The capacity plugin lets a queue take idle capacity up to its capability (deserved plus borrowingLimit).
    borrowing_adds_capacity=True,
    reach_rule="a Volcano queue grows at most to its nominal quota plus borrowingLimit",
    # Aborts the Volcano Job through a bus.volcano.sh Command.
    reclaim_rules=((("batch.volcano.sh",), ("jobs",), ("get",)), (("bus.volcano.sh",), ("commands",), ("create",))),
))
