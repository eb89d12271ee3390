"""Checks for a native node provisioner (`cluster.<cloud>.provisioner`: EKS Karpenter, AKS node auto-provisioning)
against the GPU pools."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from components import catalog
from components.clouds.facts import CloudProfile
from components.config.errors import Problems
from components.config.fabric import AUTO, NONE
from components.config.fields import join, name_index
from components.config.model import CAPACITY_TYPES, SHARING_MODES, GpuPool, Scheduler
from components.scheduling.kinds import scheduler_kind

KARPENTER = "karpenter"


def declared(pool_items: list[Any], pools: list[GpuPool]) -> list[tuple[int, GpuPool]]:
    """Each valid pool with its index in gpuPools, for error paths."""
    index = name_index(pool_items)
    return [(index[pool.name], pool) for pool in pools if pool.name in index]


def provisioner(extras: dict[str, Any], prof: CloudProfile) -> str:
    """The stack's node provisioner: the extras choice, else the cloud's autoscaler."""
    return extras.get(prof.provisioner_key, prof.autoscaler) if prof.provisioner_key else prof.autoscaler


def provisioner_fabrics(extras: dict[str, Any], pool_items: list[Any], pools: list[GpuPool],
                        prof: CloudProfile) -> list[GpuPool]:
    """The pools with `fabric: auto` resolved to none where the stack's native provisioner cannot attach a fabric:
    auto means the best the platform can attach. An explicit fabric stays, for provisioner_checks to refuse."""
    if provisioner(extras, prof) == prof.autoscaler or not prof.provisioner_refuses_fabric:
        return pools
    explicit = {name for name, i in name_index(pool_items).items()
                if isinstance(pool_items[i], dict) and pool_items[i].get("fabric", AUTO) != AUTO}
    return [pool if pool.name in explicit else replace(pool, fabric=NONE) for pool in pools]


def provisioner_version_check(extras: dict[str, Any], kubernetes_version: str, prof: CloudProfile,
                              problems: Problems) -> None:
    """A provisioner release the stack installs runs only on the Kubernetes minors it supports."""
    supported = prof.provisioner_kubernetes_versions
    if (provisioner(extras, prof) == prof.autoscaler or not supported or not kubernetes_version
            or kubernetes_version in supported):
        return
    key = f"cluster.{prof.name}.{prof.provisioner_key}"
    problems.add("cluster.kubernetesVersion",
                 f"{kubernetes_version} is not supported by the {extras[prof.provisioner_key]} release the stack "
                 f"pins ({key}); allowed with it: {', '.join(supported)}")


def provisioner_checks(extras: dict[str, Any], pool_items: list[Any], pools: list[GpuPool], prof: CloudProfile,
                       problems: Problems) -> None:
    """Pools a native provisioner cannot make: capacity it cannot buy, and nodes kept up without pending pods."""
    if provisioner(extras, prof) == prof.autoscaler:
        return
    key = f"cluster.{prof.name}.{prof.provisioner_key}"
    for i, pool in declared(pool_items, pools):
        path = join("gpuPools", i)
        if pool.capacity_type in prof.provisioner_unsupported_capacity:
            allowed = [t for t in CAPACITY_TYPES if t not in prof.provisioner_unsupported_capacity]
            why = f" ({prof.provisioner_capacity_note})" if prof.provisioner_capacity_note else ""
            problems.add(join(path, "capacityType"), f"{pool.capacity_type!r} is not supported with {key}: "
                                                     f"{extras[prof.provisioner_key]}{why}; allowed: {', '.join(allowed)}")
        if pool.sharing.mode == "mig" and prof.mig_via == "pool":
            # The cloud partitions GPUs through a node pool field, and a native provisioner makes no node pools.
            allowed = [m for m in SHARING_MODES if m != "mig"]
            problems.add(join(join(path, "sharing"), "mode"),
                         f"mig is not available with {key}: {extras[prof.provisioner_key]} ({prof.service} sets MIG "
                         f"through the node pool's {prof.mig_pool_field}, and its nodes come from no node pool); "
                         f"allowed: {', '.join(allowed)}")
        if pool.fabric != "none" and prof.provisioner_refuses_fabric:
            problems.add(join(path, "fabric"), f"{pool.fabric} is not available with {key}: "
                                               f"{extras[prof.provisioner_key]} ({prof.provisioner_fabric_note}); "
                                               "allowed: none")
        if pool.min_nodes:
            # Karpenter launches nodes for pending pods only and removes empty ones: a floor would be silently lost.
            problems.add(join(path, "minNodes"), f"must be 0 with {key}: {extras[prof.provisioner_key]} starts GPU "
                                                 f"nodes only for pending pods; got {pool.min_nodes}")


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


NAP_KEY = "nodeAutoProvisioning"


def nap_totals(pools: list[GpuPool]) -> dict[str, int]:
    """What the declared GPU pools reach at maxNodes: vCPUs, memory in GB (NAP's unit; the catalog has GiB) and GPUs
    per GKE accelerator type. NAP's limits are cluster-wide totals, so they must leave room for these."""
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
    """GPU types GKE knows, and limits that do not stop the declared pools short of their maxNodes."""
    if NAP_KEY not in extras:
        return
    path = f"cluster.{prof.name}.{NAP_KEY}"
    nap = extras[NAP_KEY]
    known = sorted({t.accelerator for t in catalog.instance_types(prof.name) if t.accelerator})
    for accelerator in nap.get("maxGpus", {}):
        if accelerator not in known:
            problems.add(join(join(path, "maxGpus"), accelerator), f"{accelerator!r} is not a GKE accelerator type "
                                                                   f"in the catalog; allowed: {', '.join(known)}")
    totals = nap_totals(pools)
    limits = {"cpu": nap.get("maxCpu", 0), "memory": nap.get("maxMemoryGb", 0), **nap.get("maxGpus", {})}
    where = {"cpu": "maxCpu", "memory": "maxMemoryGb"}
    for resource, needed in totals.items():
        if limits.get(resource, 0) < needed:
            at = join(path, where.get(resource, f"maxGpus.{resource}"))
            problems.add(at, f"must be at least {needed} (the GPU pools at maxNodes; NAP limits count every node of "
                             f"the cluster, and GKE stops scaling any pool at them); got {limits.get(resource, 0)}")
