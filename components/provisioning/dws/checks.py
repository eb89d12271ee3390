"""Queued provisioning's config checks: a cloud that sells capacity that way, no standing nodes, and a scheduler that
admits Workloads to ask for them."""
from __future__ import annotations

from typing import Any

from components.clouds.facts import CloudProfile
from components.config.errors import Problems
from components.config.fields import join
from components.config.model import GpuPool, Scheduler
from components.config.pools import declared
from components.provisioning.registry import ProvisionerChecks, ProvisioningStack
from components.scheduling.kinds import scheduler_kind


def queued_checks(pool_items: list[Any], pools: list[GpuPool], prof: CloudProfile, scheduler: Scheduler,
                  problems: Problems) -> None:
    """`provisioning: queued` pools: a cloud with queued provisioning, capacity it sells that way, no standing
    nodes, and Kueue to ask for them."""
    for i, pool in declared(pool_items, pools):
        if not pool.queued:
            continue
        path = join(join("gpuPools", i), "provisioning")
        if not prof.queued_provisioning_class:
            problems.add(path, f"queued provisioning is not available on {prof.service}; allowed: autoscaler "
                               "(queued is GKE's Dynamic Workload Scheduler)")
            continue
        if pool.capacity_type != "on-demand":
            # Queued nodes are flex-start capacity: neither spot VMs nor a reservation.
            problems.add(path, f"queued needs capacityType: on-demand (nodes come as flex-start capacity); got "
                               f"{pool.capacity_type!r}")
        if pool.min_nodes:
            problems.add(path, f"queued nodes exist only while an admitted workload holds them: minNodes must be 0; "
                               f"got {pool.min_nodes}")
        if scheduler.kind and not scheduler_kind(scheduler.kind).workloads:  # admission checks act on Workloads
            problems.add(path, f"queued nodes are requested by Kueue's ProvisioningRequest admission check: needs "
                               f"scheduler.kind: kueue; got {scheduler.kind!r}")


def check(stack: ProvisioningStack, problems: Problems) -> None:
    queued_checks(stack.pool_items, stack.pools, stack.prof, stack.scheduler, problems)


CHECKS = ProvisionerChecks(check=check)
