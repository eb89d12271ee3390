"""Karpenter's config checks (`cluster.<cloud>.provisioner`: EKS Karpenter, AKS node auto-provisioning) against the GPU
pools: what it cannot buy or attach, and the Kubernetes minors the pinned release runs on. What each cloud's Karpenter
cannot do is that cloud's `CloudProfile.provisioner_*` facts."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from components.clouds.facts import CloudProfile
from components.config.errors import Problems
from components.config.fabric import AUTO, NONE
from components.config.fields import join, name_index
from components.config.model import CAPACITY_TYPES, SHARING_MODES, GpuPool
from components.config.pools import declared
from components.provisioning.karpenter.facts import KIND
from components.provisioning.kinds import chosen, chosen_name
from components.provisioning.registry import ProvisionerChecks, ProvisioningStack


def chosen_here(extras: dict[str, Any], prof: CloudProfile) -> bool:
    """By name, not through kinds.chosen_kind: a choice the cloud's extras refuse is an error there, not here."""
    return chosen_name(extras, prof) == KIND.name


def provisioner_fabrics(extras: dict[str, Any], pool_items: list[Any], pools: list[GpuPool],
                        prof: CloudProfile) -> list[GpuPool]:
    """The pools with `fabric: auto` resolved to none where Karpenter cannot attach a fabric: auto means the best the
    platform can attach. An explicit fabric stays, for provisioner_checks to refuse."""
    if not chosen_here(extras, prof) or not prof.provisioner_refuses_fabric:
        return pools
    explicit = {name for name, i in name_index(pool_items).items()
                if isinstance(pool_items[i], dict) and pool_items[i].get("fabric", AUTO) != AUTO}
    return [pool if pool.name in explicit else replace(pool, fabric=NONE) for pool in pools]


def provisioner_version_check(extras: dict[str, Any], kubernetes_version: str, prof: CloudProfile,
                              problems: Problems) -> None:
    """A provisioner release the stack installs runs only on the Kubernetes minors it supports."""
    supported = prof.provisioner_kubernetes_versions
    if not chosen_here(extras, prof) or not supported or not kubernetes_version or kubernetes_version in supported:
        return
    key = f"cluster.{prof.name}.{prof.provisioner_key}"
    problems.add("cluster.kubernetesVersion",
                 f"{kubernetes_version} is not supported by the {extras[prof.provisioner_key]} release the stack "
                 f"pins ({key}); allowed with it: {', '.join(supported)}")


def provisioner_checks(extras: dict[str, Any], pool_items: list[Any], pools: list[GpuPool], prof: CloudProfile,
                       problems: Problems) -> None:
    """Pools Karpenter cannot make: capacity it cannot buy, and nodes kept up without pending pods."""
    if not chosen_here(extras, prof):
        return
    key = f"cluster.{prof.name}.{prof.provisioner_key}"
    for i, pool in declared(pool_items, pools):
        path = join("gpuPools", i)
        if pool.capacity_type in prof.provisioner_unsupported_capacity:
            allowed = [t for t in CAPACITY_TYPES if t not in prof.provisioner_unsupported_capacity]
            why = f" ({prof.provisioner_capacity_note})" if prof.provisioner_capacity_note else ""
            problems.add(join(path, "capacityType"), f"{pool.capacity_type!r} is not supported with {key}: "
                                                     f"{chosen(extras, prof)}{why}; allowed: {', '.join(allowed)}")
        if pool.sharing.mode == "mig" and prof.mig_via == "pool":
            # The cloud partitions GPUs through a node pool field, and Karpenter makes no node pools.
            allowed = [m for m in SHARING_MODES if m != "mig"]
            problems.add(join(join(path, "sharing"), "mode"),
                         f"mig is not available with {key}: {chosen(extras, prof)} ({prof.service} sets MIG "
                         f"through the node pool's {prof.mig_pool_field}, and its nodes come from no node pool); "
                         f"allowed: {', '.join(allowed)}")
        if pool.fabric != "none" and prof.provisioner_refuses_fabric:
            problems.add(join(path, "fabric"), f"{pool.fabric} is not available with {key}: "
                                               f"{chosen(extras, prof)} ({prof.provisioner_fabric_note}); "
                                               "allowed: none")
        if pool.min_nodes:
            # Karpenter launches nodes for pending pods only and removes empty ones: a floor would be silently lost.
            problems.add(join(path, "minNodes"), f"must be 0 with {key}: {chosen(extras, prof)} starts GPU "
                                                 f"nodes only for pending pods; got {pool.min_nodes}")


def check(stack: ProvisioningStack, problems: Problems) -> None:
    if stack.extras is None:
        return
    provisioner_checks(stack.extras, stack.pool_items, stack.pools, stack.prof, problems)
    provisioner_version_check(stack.extras, stack.kubernetes_minor, stack.prof, problems)


CHECKS = ProvisionerChecks(check=check, resolve_pools=provisioner_fabrics)
