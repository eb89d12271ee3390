"""GPU pools in the stack config: instance types, sharing, MIG layouts, taints, and the checks across pools."""
from __future__ import annotations

import re
from typing import Any

from components import catalog
# A module reference, not a name: labels imports the config model, so it may still be initializing here.
from components.config import labels as node_facts
from components.catalog.placement import placement_problem
from components.catalog.types import mig_shape
from components.clouds.facts import CloudProfile
from components.config import capacity
from components.config.errors import Problems
from components.config.fabric import read_fabric, warn_peer_memory
from components.config.fields import DNS1123_LABEL, DNS1123_WHAT, INT32_MAX, Section, join, name_index
from components.config.model import (
    CAPACITY_TYPES, DRIVER_OWNERS, PROVISIONING, SHARING_MODES, TAINT_EFFECTS, WORKLOADS, GpuPool, Sharing, Taint,
    default,
)

_LABEL_KEY = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_TAINT_STRING = re.compile(r"(?P<key>[^=:]+)(=(?P<value>[^:]*))?:(?P<effect>\w+)")


def declared(pool_items: list[Any], pools: list[GpuPool]) -> list[tuple[int, GpuPool]]:
    """Each valid pool with its index in gpuPools, for error paths."""
    index = name_index(pool_items)
    return [(index[pool.name], pool) for pool in pools if pool.name in index]


def read_pools(items: list[Any], prof: CloudProfile | None, problems: Problems, zones: int = 1) -> list[GpuPool]:
    """The pools of `gpuPools`; `zones`: how many zones of the cluster each pool spans."""
    if not items and not any(p.path == "gpuPools" for p in problems.errors):
        problems.add("gpuPools", "must list at least one GPU pool")
    pools: list[GpuPool] = []
    cloud_names: dict[str, str] = {}
    for i, item in enumerate(items):
        path = join("gpuPools", i)
        pool = _pool(item, path, prof, problems, zones)
        if pool is None:
            continue
        if any(p.name == pool.name for p in pools):
            problems.add(join(path, "name"), f"duplicate pool name {pool.name!r}")
            continue
        if pool.cloud_name in cloud_names:
            problems.add(join(path, "name"), f"{pool.name!r} and {cloud_names[pool.cloud_name]!r} both become "
                                             f"{prof.service} pool name {pool.cloud_name!r}; rename one")
        cloud_names[pool.cloud_name] = pool.name
        pools.append(pool)
    return pools


def _pool(raw: Any, path: str, prof: CloudProfile | None, problems: Problems, zones: int) -> GpuPool | None:
    sec = Section(raw, path, problems, ("name", "instanceType", "minNodes", "maxNodes", "capacityType", "workload",
                                        "sharing", "driver", "labels", "taints", "topology", "fabric",
                                        "provisioning"))
    name = sec.str("name", pattern=DNS1123_LABEL, what=DNS1123_WHAT)
    instance_type = sec.str("instanceType")
    limit, why = prof.pool_node_limit(zones) if prof else (INT32_MAX, "")
    min_nodes = sec.int("minNodes", default(GpuPool, "min_nodes"), minimum=0, maximum=limit, why=why)
    max_nodes = sec.int("maxNodes", minimum=1, maximum=limit, why=why)
    if isinstance(min_nodes, int) and isinstance(max_nodes, int) and min_nodes > max_nodes:
        problems.add(sec.at("maxNodes"), f"must be >= minNodes ({min_nodes}); got {max_nodes}")
    capacity_type = sec.str("capacityType", default(GpuPool, "capacity_type"), choices=CAPACITY_TYPES)
    workload = sec.str("workload", default(GpuPool, "workload"), choices=WORKLOADS)
    driver = sec.str("driver", prof.default_driver if prof else default(GpuPool, "driver"), choices=DRIVER_OWNERS)
    if prof and driver and (problem := driver_problem(driver, prof)):
        problems.add(sec.at("driver"), problem)
        driver = None
    labels = sec.str_map("labels")
    for key, value in labels.items():
        if not _LABEL_KEY.fullmatch(key) or not LABEL_VALUE.fullmatch(value) or len(value) > 63:
            problems.add(join(sec.at("labels"), key), f"{key}={value!r:.80} is not a valid Kubernetes label (key "
                                                      "[prefix/]name, name and value at most 63 characters)")
        elif _platform_key(key):
            problems.add(join(sec.at("labels"), key), f"{node_facts.LABEL_PREFIX}/* labels are the platform's own "
                                                      "(Kueue flavors and quotas select pools by them); use your own "
                                                      "domain")
        elif (setter := _operator_label(key, prof)) is not None:
            problems.add(join(sec.at("labels"), key), f"{key} changes what the pool's nodes run or advertise, behind "
                                                      "the quotas and policies that count its GPUs; "
                                                      f"{setter}; use your own domain for your labels")
    taints = tuple(read_taint(t, join(sec.at("taints"), j), problems) for j, t in enumerate(sec.list("taints")))

    instance = None
    if prof and instance_type:
        try:
            instance = catalog.lookup(prof.name, instance_type)
        except catalog.CatalogError as exc:
            problems.add(sec.at("instanceType"), str(exc))
    sharing = _sharing(sec.value("sharing", {}), sec.at("sharing"), instance, prof, problems)
    if prof and instance and sharing and driver:
        _pool_sharing_limits(sharing, driver, instance, sec, prof, problems)

    cloud_name = ""
    if prof and name:
        cloud_name = prof.pool_naming.derive(name)
        if not prof.pool_naming.valid(cloud_name):
            problems.add(sec.at("name"), f"{name!r} becomes {prof.service} pool name {cloud_name!r}, which must match "
                                         f"{prof.pool_naming.pattern}")
    topology = sec.bool("topology", default(GpuPool, "topology"))
    fabric = read_fabric(sec, instance, workload, prof, problems, driver=driver, min_nodes=min_nodes,
                         max_nodes=max_nodes, capacity_type=capacity_type,
                         shared=bool(sharing and sharing.mode != "none"))
    warn_peer_memory(sec, fabric, driver, prof, problems)
    provisioning = sec.str("provisioning", default(GpuPool, "provisioning"), choices=PROVISIONING)
    if None in (name, instance, max_nodes, min_nodes, capacity_type, workload, driver, sharing, topology,
                fabric, provisioning) or None in taints:
        return None
    return GpuPool(name=name, instance_type=instance_type, instance=instance, min_nodes=min_nodes, max_nodes=max_nodes,
                   capacity_type=capacity_type, workload=workload, sharing=sharing, driver=driver, labels=labels,
                   taints=taints, cloud_name=cloud_name, topology=topology, fabric=fabric, provisioning=provisioning)


def driver_problem(driver: str, prof: CloudProfile) -> str | None:
    """Why `driver` cannot own a pool's driver on this cloud, or None."""
    if driver in prof.driver_owners:
        return None
    return (f"{driver!r} is not supported on {prof.service} ({prof.driver_note}); "
            f"allowed: {', '.join(prof.driver_owners)}")


def no_mig_problem(instance) -> str | None:
    """Why MIG cannot partition this instance type's GPUs, or None."""
    if instance.gpu.supports_mig:
        return None
    return f"mig is not available on {instance.name} ({instance.gpu.name} has no MIG); use none, mps or time-slicing"


def mixed_driver_problem(driver: str, prof: CloudProfile) -> str:
    """Why `driver` cannot sit beside the cloud's default owner under one GPU Operator on this cloud."""
    return (f"{driver} cannot be mixed with {prof.default_driver} pools on {prof.service}: the operator reads "
            f"{prof.service}-installed drivers from {prof.managed_driver_root} cluster-wide; give every GPU pool the "
            "same driver owner")


def _pool_sharing_limits(sharing: Sharing, driver: str, instance, sec: Section, prof: CloudProfile,
                         problems: Problems) -> None:
    """What a cloud can express when its node pool API, not the GPU operator, partitions or shares GPUs."""
    path = sec.at("sharing")
    by_pool = ((sharing.mode == "mig" and prof.mig_via == "pool")
               or (sharing.mode in ("mps", "time-slicing") and prof.sharing_via == "pool"))
    if by_pool and driver == "operator" and prof.pool_sharing_needs_managed_driver:
        problems.add(sec.at("driver"), f"operator cannot be combined with sharing mode {sharing.mode} on {prof.service}: "
                                       f"{prof.service} partitions and shares GPUs through its own driver and device "
                                       "plugin, which driver: operator turns off; use driver: managed")
    limit = prof.max_pool_sharing_replicas
    if by_pool and limit and sharing.replicas and sharing.replicas > limit:
        problems.add(join(path, "replicas"), f"must be <= {limit} on {prof.service}; got {sharing.replicas}")
    if sharing.mode == "mig" and prof.mig_via == "pool":
        _pool_mig_layout(sharing.mig_profile, join(path, "migProfile"), instance.gpu, prof, problems)


def _pool_mig_layout(layout, path: str, gpu, prof: CloudProfile, problems: Problems) -> None:
    field = f"{prof.service} {prof.mig_pool_field}"
    if isinstance(layout, dict) or layout == "all-balanced":
        shown = layout if isinstance(layout, str) else "a custom layout"
        problems.add(path, f"{shown} cannot be expressed on {prof.service}: {field} gives every GPU of a pool one "
                           "profile; use all-<profile>, or one pool per profile")
        return
    name = layout.removeprefix("all-")
    if "+" in name:
        problems.add(path, f"{layout} cannot be expressed on {prof.service}: {field} has no media-extension (+me) "
                           "profiles; use the plain profile")
        return
    if prof.mig_by_slices:
        slices = mig_shape(name).compute
        reachable = min((p.name for p in gpu.mig_profiles
                         if not mig_shape(p.name).media and mig_shape(p.name).compute == slices),
                        key=lambda n: mig_shape(n).memory_gb)
        if reachable != name:
            problems.add(path, f"{layout} cannot be expressed on {prof.service}: {field} MIG{slices}g always "
                               f"creates {reachable} on {gpu.name}; use all-{reachable}")


def read_taint(raw: Any, path: str, problems: Problems, platform_keys: bool = False) -> Taint | None:
    """A taint from `key=value:Effect` or a mapping; `platform_keys`: the platform's own taints (spot) are allowed,
    as in a pool's computed taints, never in a config's."""
    if isinstance(raw, str):
        match = _TAINT_STRING.fullmatch(raw)
        if not match:
            problems.add(path, f"{raw!r} is not a taint; write key=value:Effect or {{key, value, effect}}")
            return None
        raw = match.groupdict()
    sec = Section(raw, path, problems, ("key", "value", "effect"))
    key = sec.str("key", pattern=_LABEL_KEY, what="a valid taint key")
    value = sec.str("value", "", pattern=LABEL_VALUE, what="a valid taint value")
    effect = sec.str("effect", default(Taint, "effect"), choices=TAINT_EFFECTS)
    if key and _platform_key(key) and not platform_keys:
        problems.add(sec.at("key"), f"{node_facts.LABEL_PREFIX}/* taints are the platform's own (spot pools carry "
                                    f"{node_facts.LABEL_PREFIX}/spot); use your own domain")
        return None
    if key is None or value is None or effect is None:
        return None
    return Taint(key, value, effect)


# nvidia.com/* node labels switch the GPU Operator's operands, select its device plugin's sharing entry and
# mig-manager's layout, and are written by GPU feature discovery: the platform sets them from these fields.
_OPERATOR_LABELS = (
    (("nvidia.com/device-plugin.", "nvidia.com/gpu.replicas", "nvidia.com/gpu.sharing", "nvidia.com/mps."),
     "gpuPools[].sharing (mode, replicas) sets it"),
    (("nvidia.com/mig.",), "gpuPools[].sharing (mode: mig, migProfile) sets it"),
    (("nvidia.com/gpu.deploy.",), "gpuPools[].driver sets it (which operands run on which pool)"),
    (("nvidia.com/",), "the GPU Operator and GPU feature discovery own nvidia.com/* node labels"),
)


def _operator_label(key: str, prof: CloudProfile | None) -> str | None:
    """Which field sets `key` properly, when it is a label the GPU Operator or the cloud's GPU nodes act on."""
    for prefixes, setter in _OPERATOR_LABELS:
        if key.startswith(prefixes):
            return setter
    if prof and key in prof.operator_driver_labels:
        return "gpuPools[].driver sets it (it turns off the cloud's own device plugin)"
    if prof and key == prof.autoscaler_gpu_label:
        return (f"the platform sets it on pools advertising whole GPUs (the {prof.service} Cluster Autoscaler "
                "waits for their GPUs)")
    return None


def _platform_key(key: str) -> bool:
    domain = key.split("/", 1)[0] if "/" in key else ""
    return domain == node_facts.LABEL_PREFIX or domain.endswith(f".{node_facts.LABEL_PREFIX}")


def max_replicas(mode: str | None) -> int:
    """The most clients one GPU may serve: MPS serves at most 48 (Volta and later); time-slicing has no such limit,
    only sense."""
    return 48 if mode == "mps" else 256


def _sharing(raw: Any, path: str, instance, prof: CloudProfile | None, problems: Problems) -> Sharing | None:
    sec = Section(raw, path, problems, ("mode", "migProfile", "replicas"))
    mode = sec.str("mode", "none", choices=SHARING_MODES)
    mig_profile = sec.value("migProfile", None)
    replicas = sec.int("replicas", None, minimum=2, maximum=max_replicas(mode), why=f"clients per GPU with {mode}")
    if mode is None:
        return None
    if mode != "mig" and mig_profile is not None:
        problems.add(sec.at("migProfile"), f"only applies with mode: mig (this pool has mode: {mode}"
                                           f"{'; MPS does not work on MIG devices' if mode == 'mps' else ''})")
    if mode in ("mps", "time-slicing") and replicas is None and not sec.has("replicas"):
        problems.add(sec.at("replicas"), f"is required with mode: {mode} (clients per GPU, >= 2)")
    if mode not in ("mps", "time-slicing") and sec.has("replicas"):
        problems.add(sec.at("replicas"), f"only applies with mode: mps or time-slicing (this pool has mode: {mode})")
    if mode == "mig":
        mig_profile = _mig_profile(mig_profile, sec.at("migProfile"), instance, prof, problems)
        if mig_profile is None:
            return None
    return Sharing(mode=mode, mig_profile=mig_profile if mode == "mig" else None,
                   replicas=replicas if mode in ("mps", "time-slicing") else None)


def _mig_profile(raw: Any, path: str, instance, prof: CloudProfile | None, problems: Problems):
    if instance is None:
        return None
    gpu = instance.gpu
    if problem := no_mig_problem(instance):
        problems.add(path.rsplit(".", 1)[0] + ".mode", problem)
        return None
    allowed = [f"all-{p.name}" for p in gpu.mig_profiles] + ["all-balanced"]
    if raw is None:
        problems.add(path, f"is required with mode: mig; allowed for {gpu.name}: {', '.join(allowed)} or {{<profile>: count}}")
        return None
    if isinstance(raw, str):
        if raw not in allowed:
            problems.add(path, f"{raw!r} is not a MIG layout of {gpu.name}; allowed: {', '.join(allowed)}")
            return None
        return raw
    if isinstance(raw, dict) and raw:
        return _custom_layout(raw, path, gpu, problems)
    problems.add(path, f"must be one of {', '.join(allowed)} or a mapping {{<profile>: count}}; got {raw!r}")
    return None


def _custom_layout(raw: dict, path: str, gpu, problems: Problems) -> dict[str, int] | None:
    names = [p.name for p in gpu.mig_profiles]
    ok = True
    for name, count in raw.items():
        profile = gpu.mig_profile(str(name))
        if profile is None:
            problems.add(join(path, str(name)), f"not a MIG profile of {gpu.name}; allowed: {', '.join(names)}")
            ok = False
        elif isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= profile.max_per_gpu:
            problems.add(join(path, str(name)), f"count must be 1..{profile.max_per_gpu} per GPU; got {count!r}")
            ok = False
    if not ok:
        return None
    # A GPU has fixed compute and memory slices, and each profile fixed positions: the layout must fit all three.
    problem = placement_problem(gpu, {str(k): v for k, v in raw.items()})
    if problem:
        problems.add(path, problem)
        return None
    return {str(k): v for k, v in raw.items()}


def _one_rdma_setting(index: dict[str, int], pools: list[GpuPool], prof: CloudProfile, problems: Problems) -> None:
    """GPUDirect RDMA (the operator's driver.rdma) is cluster-wide: it makes the operator's driver wait for the fabric's
    NIC driver (its mofed-validation init container) on every node the operator drives, and only fabric pools get one."""
    rdma = [p for p in pools if p.driver == "operator" and p.fabric in prof.fabrics
            and prof.fabrics[p.fabric].peer_memory_by_operator]
    if not rdma:
        return
    first = rdma[0]
    for pool in pools:
        if pool.driver == "operator" and pool not in rdma:
            problems.add(join(join("gpuPools", index[pool.name]), "driver"),
                         f"the GPU Operator cannot own this pool's driver while it owns {first.fabric} pool "
                         f"{first.name!r}'s: GPUDirect RDMA (driver.rdma) is cluster-wide and would hold this pool's "
                         f"driver until a {first.fabric} NIC driver loads, which only {first.fabric} pools get; "
                         f"allowed here: managed (or driver: managed on {first.name!r})")


def one_gpu_operator(items: list[Any], pools: list[GpuPool], prof: CloudProfile | None, problems: Problems) -> None:
    """One GPU Operator serves every pool: its cluster-wide settings must mean the same on all of them."""
    if prof is None:
        return
    index = name_index(items)
    if prof.managed_driver_root and len({p.driver for p in pools}) > 1:
        for pool in pools:
            if pool.driver != prof.default_driver:
                problems.add(join(join("gpuPools", index[pool.name]), "driver"),
                             mixed_driver_problem(pool.driver, prof))
    _one_rdma_setting(index, pools, prof, problems)
    if prof.mig_via != "operator":
        return
    layouts: dict[str, GpuPool] = {}
    for pool in pools:
        if pool.sharing.mode != "mig":
            continue
        path = join(join(join("gpuPools", index[pool.name]), "sharing"), "migProfile")
        name = pool.sharing.mig_config_name
        first = layouts.setdefault(name, pool)
        layout, first_layout = pool.sharing.mig_layout(pool.instance), first.sharing.mig_layout(first.instance)
        if layout != first_layout:
            problems.add(path, f"{name} is {layout} on {pool.instance.gpu.name} but {first_layout} on pool "
                               f"{first.name!r} ({first.instance.gpu.name}), and mig-manager looks layouts up by "
                               "name cluster-wide; give one of them an explicit {<profile>: count} layout")


def cloud_pool_checks(extras: dict[str, Any], items: list[Any], pools: list[GpuPool], prof: CloudProfile,
                       problems: Problems) -> None:
    """Pools against the cloud: labels it refuses, what the chosen GPU image runs, reservations reserved pools need."""
    index = name_index(items)
    extras_path = f"cluster.{prof.name}"
    if prof.gpu_image_key:
        image_type = extras.get(prof.gpu_image_key, next(iter(prof.gpu_images)))
        image = prof.gpu_images[image_type]
        for pool in pools:
            if pool.sharing.mode not in image.sharing_modes:
                problems.add(join(join(join("gpuPools", index[pool.name]), "sharing"), "mode"),
                             f"{pool.sharing.mode} is not available on {extras_path}.{prof.gpu_image_key} {image_type} "
                             f"({image.note}); allowed: {', '.join(image.sharing_modes)}")
    for pool in pools:
        for key in pool.labels:
            domain = key.split("/", 1)[0] if "/" in key else ""
            if any(domain == d or domain.endswith(f".{d}") for d in prof.reserved_label_domains):
                problems.add(join(join(join("gpuPools", index[pool.name]), "labels"), key),
                             f"{prof.service} refuses node labels in {', '.join(prof.reserved_label_domains)} "
                             "(or their subdomains); use your own domain")
    if prof.reservations_key:
        reservations = extras.get(prof.reservations_key, {})
        reserved = {p.name for p in pools if p.capacity_type == "reserved"}
        for name in sorted(reserved - set(reservations)):
            problems.add(join(join("gpuPools", index[name]), "capacityType"),
                         f"reserved on {prof.service} needs {extras_path}.{prof.reservations_key}.{name} "
                         f"({prof.extras[prof.reservations_key].doc})")
        for name in reservations:
            if name not in reserved:
                problems.add(join(join(extras_path, prof.reservations_key), str(name)),
                             f"no reserved GPU pool named {name!r}; reserved pools: {', '.join(sorted(reserved)) or '(none)'}")


def spot_warnings(pools: list[GpuPool], production: bool, problems: Problems) -> None:
    for i, pool in enumerate(pools):
        if production and pool.capacity_type == "spot" and pool.min_nodes > 0:
            problems.warn(join(join("gpuPools", i), "minNodes"),
                          f"spot pool {pool.name!r} keeps {pool.min_nodes} node(s) warm in production; spot capacity "
                          "can vanish, so warm spares are usually wasted: consider minNodes: 0")


def scale_from_zero_warnings(items: list[Any], pools: list[GpuPool], prof: CloudProfile | None,
                              problems: Problems) -> None:
    """Pools the Cluster Autoscaler cannot start from zero nodes for the resources their pods ask for."""
    if not (prof and prof.autoscaler_template_whole_gpus):
        return
    index = name_index(items)
    strategy = capacity.mig_strategy(pools)
    for pool in pools:
        unseen = sorted(set(capacity.pool_units(pool, strategy)) - {capacity.GPU_RESOURCE})
        if pool.min_nodes == 0 and unseen:
            problems.warn(join(join("gpuPools", index[pool.name]), "minNodes"),
                          f"pool {pool.name!r} starts at 0 nodes but its pods ask for {', '.join(unseen)}; the "
                          f"{prof.service} Cluster Autoscaler only knows a pool's whole GPUs before its first node "
                          "exists, so such pods never trigger one: set minNodes: 1")
