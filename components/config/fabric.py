"""gpuPools[].fabric: which fast inter-node fabric a GPU pool's nodes get (EFA on EKS, InfiniBand on AKS, GPUDirect
TCPX/TCPXO on GKE, RDMA on OKE), resolved from the catalog."""
from __future__ import annotations

from typing import Any

from components.clouds import profile
from components.clouds.facts import CloudProfile
from components.config.errors import Problems
from components.config.fields import Section, join, name_index
from components.config.model import PlatformConfig

AUTO = "auto"
NONE = "none"


def read_fabric(sec: Section, instance, workload: str | None, prof: CloudProfile | None,
                problems: Problems, *, driver: str | None = None, min_nodes: int | None = None,
                max_nodes: int | None = None, capacity_type: str | None = None, shared: bool = False) -> str | None:
    """The pool's fabric: `none` or one of the cloud's fabric names; None after reporting a problem.

    `auto` attaches the fabric the catalog gives the instance type, on training pools only: inference and
    interactive pools gain nothing from it, and it pins a pool to one subnet (a replacement on existing pools).
    A fabric whose nodes come in a fixed-size group (OCI cluster networks) is attached by `auto` only to pools
    that already have a fixed size, so `auto` never starts maxNodes bare-metal nodes for good.
    """
    offered = tuple(prof.fabrics) if prof else ()
    value = sec.str("fabric", AUTO, choices=(AUTO, NONE, *offered))
    if value in (None, NONE) or prof is None or instance is None:
        return value if value != AUTO else NONE
    kind = instance.interconnect
    attachable = kind in prof.fabrics and instance.fabric_interfaces > 0
    wrong_driver = attachable and prof.fabrics[kind].needs_managed_driver and driver not in (None, "managed")
    if value == AUTO:
        if not (attachable and instance.fabric_on_auto and workload == "training") or wrong_driver:
            return NONE
        why = _capacity_problem(prof.fabrics[kind], min_nodes, max_nodes, capacity_type)
        if why:
            if not shared:  # a pool sharing its GPUs runs no multi-node collective worth a warning
                problems.warn(sec.at("fabric"), f"auto leaves {instance.name} without {kind}: {why}; set fabric: "
                                                f"none to silence this, or fix it and set fabric: {kind}")
            return NONE
        _placement_warning(sec, prof, kind, max_nodes, problems)
        return kind
    if kind != value:
        problems.add(sec.at("fabric"), f"{instance.name} has no {value} (catalog interconnect: {kind or 'none'}); "
                                       f"allowed for it: {AUTO}, {NONE}")
        return None
    if not attachable:
        problems.add(sec.at("fabric"), f"the catalog has no {value} interface count for {instance.name}, so its "
                                       f"{prof.service} nodes cannot be given {value}; allowed for it: "
                                       f"{AUTO}, {NONE}")
        return None
    if wrong_driver:
        problems.add(sec.at("fabric"), f"{value} works with {prof.service}'s own GPU driver only (its NCCL plugin "
                                       f"installer writes next to it); set driver: managed, or fabric to one of: "
                                       f"{AUTO}, {NONE}")
        return None
    why = _capacity_problem(prof.fabrics[value], min_nodes, max_nodes, capacity_type)
    if why:
        problems.add(sec.at("fabric"), f"{value}: {why}; or use fabric: {NONE} (or {AUTO})")
        return None
    _placement_warning(sec, prof, value, max_nodes, problems)
    return value


def _placement_warning(sec: Section, prof: CloudProfile, fabric: str, max_nodes: int | None,
                       problems: Problems) -> None:
    """Fabric pools get compact placement; past the cloud's compact size the pool may not get all its nodes."""
    placed = prof.fabrics[fabric].placement_max_nodes if fabric in prof.fabrics else 0
    if placed and max_nodes is not None and max_nodes > placed:
        problems.warn(sec.at("maxNodes"), f"{fabric} pools get {prof.service} compact placement, which places at "
                                          f"most {placed} nodes close together; past that "
                                          f"scale-ups may fail: split the pool or lower maxNodes")


def warn_peer_memory(sec: Section, fabric: str | None, driver: str | None, prof: CloudProfile | None,
                     problems: Problems) -> None:
    """A fabric whose GPUDirect RDMA needs the GPU Operator's nvidia-peermem still works on a cloud-installed driver,
    but through host memory: say so where the pool chooses its driver."""
    kind = prof.fabrics.get(fabric) if prof and fabric else None
    if kind is not None and kind.peer_memory_by_operator and driver == "managed":
        problems.warn(sec.at("driver"), f"{prof.service} installs this pool's driver without nvidia-peermem, so "
                                        f"{fabric} carries NCCL traffic through host memory, not GPUDirect RDMA; set "
                                        f"driver: operator for GPUDirect RDMA (docs/azure.md)")


def _capacity_problem(fabric, min_nodes: int | None, max_nodes: int | None, capacity_type: str | None) -> str | None:
    """Why the fabric's capacity path cannot give this pool its size or capacity type, or None."""
    if capacity_type in fabric.unsupported_capacity:
        return f"its nodes cannot be capacityType {capacity_type}"
    if fabric.fixed_size and isinstance(min_nodes, int) and isinstance(max_nodes, int) and min_nodes != max_nodes:
        return (f"its nodes come in a fixed-size group the Cluster Autoscaler does not resize, so minNodes must "
                f"equal maxNodes (got {min_nodes} and {max_nodes}): set both to the node count to run")
    return None


# The kubernetes.io / k8s.io label prefixes a kubelet may still set on its own node (kubelet --node-labels docs).
_KUBELET_ALLOWED = ("kubelet.kubernetes.io", "node.kubernetes.io")
_KUBELET_ALLOWED_KEYS = ("kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os",
                         "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
                         "failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
                         "topology.kubernetes.io/region", "topology.kubernetes.io/zone")


def kubelet_refuses(key: str) -> bool:
    """Whether the kubelet may not set label `key` on its own node (NodeRestriction)."""
    if "/" not in key or key in _KUBELET_ALLOWED_KEYS:
        return False
    domain = key.split("/", 1)[0]
    restricted = any(domain == d or domain.endswith(f".{d}") for d in ("kubernetes.io", "k8s.io"))
    return restricted and not any(domain == d or domain.endswith(f".{d}") for d in _KUBELET_ALLOWED)


def fabric_extras_checks(extras: dict[str, Any], adopted: bool, items: list[Any], pools, prof: CloudProfile,
                         problems: Problems) -> None:
    """cluster.<cloud> keys a fabric in use needs; an adopted cluster creates no cloud resources, so needs none."""
    if adopted:
        return
    used = {p.fabric for p in pools}
    for key in sorted({k for f in prof.fabrics.values() for k in f.required_extras}):
        users = [name for name, f in prof.fabrics.items() if key in f.required_extras]
        if key in extras and not used & set(users):
            problems.warn(f"cluster.{prof.name}.{key}", f"is used only by fabric: {', '.join(users)} pools, and no "
                                                        "pool has one; it creates nothing")
    index = name_index(items)
    for pool in pools:
        fabric = prof.fabrics.get(pool.fabric)
        if fabric and fabric.labels_via_kubelet:
            for key in pool.labels:
                if kubelet_refuses(key):
                    problems.add(join(join(join("gpuPools", index[pool.name]), "labels"), key),
                                 f"{pool.fabric} nodes label themselves through the kubelet, which may not set "
                                 "kubernetes.io or k8s.io labels (except under kubelet.kubernetes.io and "
                                 "node.kubernetes.io); use your own domain")
        for key in fabric.required_extras if fabric else ():
            if key not in extras:
                problems.add(join(join("gpuPools", index[pool.name]), "fabric"),
                             f"{pool.fabric} needs cluster.{prof.name}.{key} ({prof.extras[key].doc})")


def fabric_resources(config: PlatformConfig) -> list[str]:
    """The fabric NICs pools advertise (vpc.amazonaws.com/efa, rdma/ib): quota is counted in GPUs, and a Workload
    asking for a resource no ClusterQueue covers is never admitted, so Kueue leaves them to the kubelet."""
    fabrics = profile(config.cloud).fabrics
    # GKE GPUDirect's NICs are no resource (multi-networking); an empty name would be a prefix of every resource.
    return sorted({fabrics[p.fabric].resource for p in config.gpu_pools
                   if p.fabric in fabrics and fabrics[p.fabric].resource})
