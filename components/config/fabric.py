"""gpuPools[].fabric: which fast inter-node fabric a GPU pool's nodes get (EFA on EKS, InfiniBand on AKS), resolved
from the catalog."""
from __future__ import annotations

from components.clouds.profiles import CloudProfile
from components.config.errors import Problems
from components.config.fields import Section

AUTO = "auto"
NONE = "none"


def read_fabric(sec: Section, instance, workload: str | None, prof: CloudProfile | None,
                problems: Problems) -> str | None:
    """The pool's fabric: `none` or one of the cloud's fabric names; None after reporting a problem.

    `auto` attaches the fabric the catalog gives the instance type, on training pools only: inference and
    interactive pools gain nothing from it, and it pins a pool to one subnet (a replacement on existing pools).
    """
    offered = tuple(prof.fabrics) if prof else ()
    value = sec.str("fabric", AUTO, choices=(AUTO, NONE, *offered))
    if value in (None, NONE) or prof is None or instance is None:
        return value if value != AUTO else NONE
    kind = instance.interconnect
    attachable = kind in prof.fabrics and instance.fabric_interfaces > 0
    if value == AUTO:
        return kind if attachable and instance.fabric_on_auto and workload == "training" else NONE
    if kind != value:
        problems.add(sec.at("fabric"), f"{instance.name} has no {value} (catalog interconnect: {kind or 'none'}); "
                                       f"allowed for it: {AUTO}, {NONE}")
        return None
    if not attachable:
        problems.add(sec.at("fabric"), f"the catalog has no {value} interface count for {instance.name}, so its "
                                       f"{prof.service} nodes cannot be given {value}; allowed for it: "
                                       f"{AUTO}, {NONE}")
        return None
    return value


def warn_peer_memory(sec: Section, fabric: str | None, driver: str | None, prof: CloudProfile | None,
                     problems: Problems) -> None:
    """A fabric whose GPUDirect RDMA needs the GPU Operator's nvidia-peermem still works on a cloud-installed driver,
    but through host memory: say so where the pool chooses its driver."""
    kind = prof.fabrics.get(fabric) if prof and fabric else None
    if kind is not None and kind.peer_memory_by_operator and driver == "managed":
        problems.warn(sec.at("driver"), f"{prof.service} installs this pool's driver without nvidia-peermem, so "
                                        f"{fabric} carries NCCL traffic through host memory, not GPUDirect RDMA; set "
                                        f"driver: operator for GPUDirect RDMA (docs/azure.md)")
