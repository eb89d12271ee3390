"""gpuPools[].fabric: which fast inter-node fabric a GPU pool's nodes get (EFA on EKS), resolved from the catalog."""
from __future__ import annotations

from components.clouds.profiles import CloudProfile
from components.config.errors import Problems
from components.config.fields import Section

AUTO = "auto"
NONE = "none"


def read_fabric(sec: Section, instance, workload: str | None, prof: CloudProfile | None,
                problems: Problems, driver: str | None = None, max_nodes: int | None = None) -> str | None:
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
    wrong_driver = attachable and prof.fabrics[kind].needs_managed_driver and driver not in (None, "managed")
    if value == AUTO:
        chosen = kind if attachable and workload == "training" and not wrong_driver else NONE
        _placement_warning(sec, prof, chosen, max_nodes, problems)
        return chosen
    if kind != value:
        problems.add(sec.at("fabric"), f"{instance.name} has no {value} (catalog interconnect: {kind or 'none'}); "
                                       f"allowed for it: {AUTO}, {NONE}")
        return None
    if not attachable:
        problems.add(sec.at("fabric"), f"the catalog has no {value} interface count for {instance.name}, so its "
                                       f"{prof.service} launch template cannot attach {value}; allowed for it: "
                                       f"{AUTO}, {NONE}")
        return None
    if wrong_driver:
        problems.add(sec.at("fabric"), f"{value} works with {prof.service}'s own GPU driver only (its NCCL plugin "
                                       f"installer writes next to it); set driver: managed, or fabric to one of: "
                                       f"{AUTO}, {NONE}")
        return None
    _placement_warning(sec, prof, value, max_nodes, problems)
    return value


def _placement_warning(sec: Section, prof: CloudProfile, fabric: str, max_nodes: int | None,
                       problems: Problems) -> None:
    """Fabric pools get compact placement; past the cloud's compact size the pool may not get all its nodes."""
    gpudirect = prof.fabrics[fabric].gpudirect if fabric in prof.fabrics else None
    if gpudirect and max_nodes is not None and max_nodes > gpudirect.placement_max_nodes:
        problems.warn(sec.at("maxNodes"), f"{fabric} pools get {prof.service} compact placement, which places at "
                                          f"most {gpudirect.placement_max_nodes} nodes close together; past that "
                                          f"scale-ups may fail: split the pool or lower maxNodes")
