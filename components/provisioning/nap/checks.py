"""Node auto-provisioning's config checks: GPU types the cloud knows, and limits that leave the declared pools room."""
from __future__ import annotations

import math
from typing import Any

from components import catalog
from components.clouds.facts import CloudProfile
from components.config.errors import Problems
from components.config.fields import join
from components.config.model import GpuPool
from components.provisioning.nap.facts import KEY
from components.provisioning.registry import ProvisionerChecks, ProvisioningStack


def nap_totals(pools: list[GpuPool]) -> dict[str, int]:
    """What the declared GPU pools reach at maxNodes: vCPUs, memory in GB (NAP's unit; the catalog has GiB) and GPUs
    per accelerator type. NAP's limits are cluster-wide totals, so they must leave room for these."""
    totals: dict[str, int] = {"cpu": 0, "memory": 0}
    gib = 0
    for pool in pools:
        totals["cpu"] += pool.max_nodes * pool.instance.vcpus
        gib += pool.max_nodes * pool.instance.memory_gib
        if pool.instance.accelerator:
            totals[pool.instance.accelerator] = totals.get(pool.instance.accelerator, 0) + pool.max_nodes * pool.instance.gpus
    totals["memory"] = math.ceil(gib * 2**30 / 10**9)
    return totals


def nap_checks(extras: dict[str, Any], pools: list[GpuPool], prof: CloudProfile, problems: Problems) -> None:
    """GPU types the cloud knows, and limits that do not stop the declared pools short of their maxNodes."""
    if KEY not in extras:
        return
    path = f"cluster.{prof.name}.{KEY}"
    nap = extras[KEY]
    known = sorted({t.accelerator for t in catalog.instance_types(prof.name) if t.accelerator})
    for accelerator in nap.get("maxGpus", {}):
        if accelerator not in known:
            problems.add(join(join(path, "maxGpus"), accelerator),
                         f"{accelerator!r} is not a {prof.service} accelerator type in the catalog; allowed: "
                         f"{', '.join(known)}")
    totals = nap_totals(pools)
    limits = {"cpu": nap.get("maxCpu", 0), "memory": nap.get("maxMemoryGb", 0), **nap.get("maxGpus", {})}
    where = {"cpu": "maxCpu", "memory": "maxMemoryGb"}
    for resource, needed in totals.items():
        if limits.get(resource, 0) < needed:
            at = join(path, where.get(resource, f"maxGpus.{resource}"))
            problems.add(at, f"must be at least {needed} (the GPU pools at maxNodes; NAP limits count every node of "
                             f"the cluster, and {prof.service} stops scaling any pool at them); "
                             f"got {limits.get(resource, 0)}")


def check(stack: ProvisioningStack, problems: Problems) -> None:
    if stack.extras is not None:
        nap_checks(stack.extras, stack.pools, stack.prof, problems)


CHECKS = ProvisionerChecks(check=check)
