"""Typed rows of the GPU catalog: GPU models, their MIG profiles, and cloud instance types."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_MIG_NAME = re.compile(r"(\d+)g\.(\d+)gb(\+me)?")


@dataclass(frozen=True)
class MigShape:
    """What a MIG profile name says: `2g.20gb+me` is 2 compute slices, 20 GB, with the media extensions."""

    compute: int
    memory_gb: int
    media: bool


def mig_shape(name: str) -> MigShape:
    """Parse a MIG profile name (`<compute>g.<memory>gb`, optionally `+me`); the one place that reads one."""
    match = _MIG_NAME.fullmatch(name)
    if match is None:
        raise ValueError(f"{name!r} is not a MIG profile name like 1g.10gb or 1g.10gb+me")
    return MigShape(int(match.group(1)), int(match.group(2)), bool(match.group(3)))


@dataclass(frozen=True)
class MigProfile:
    """One MIG profile of a GPU model, e.g. ``1g.10gb``."""

    name: str
    max_per_gpu: int  # instances of this profile that fit on one GPU when all share it

    @property
    def resource_name(self) -> str:
        """Kubernetes extended resource the device plugin advertises under the mixed strategy."""
        return f"nvidia.com/mig-{self.name}"


@dataclass(frozen=True)
class GpuModel:
    """A GPU model and what it can be partitioned into."""

    name: str  # e.g. "H100-80GB"
    memory_gib: int
    mig_profiles: tuple[MigProfile, ...] = ()
    mig_balanced: tuple[tuple[str, int], ...] = ()  # mig-parted "all-balanced" layout per GPU

    @property
    def supports_mig(self) -> bool:
        return bool(self.mig_profiles)

    def mig_profile(self, name: str) -> MigProfile | None:
        return next((p for p in self.mig_profiles if p.name == name), None)


@dataclass(frozen=True)
class InstanceType:
    """A GPU instance type (VM size, machine type, shape) of one cloud."""

    cloud: str  # aws | azure | gcp | oci
    name: str
    gpu: GpuModel
    gpus: int
    vcpus: int
    memory_gib: int
    interconnect: str | None = None  # "efa" | "infiniband" | "rdma" | "gpudirect-tcpx" | "gpudirect-tcpxo" | None
    accelerator: str | None = None  # GKE guest accelerator type, e.g. "nvidia-h100-80gb"
    # Fabric interfaces one node takes (one per network card), when the platform can attach them (0: unknown).
    fabric_interfaces: int = 0
    fabric_on_auto: bool = True  # whether gpuPools[].fabric `auto` attaches that fabric on training pools
    # Whether the primary network card takes a fabric interface too (AWS: EFA with ENA on card 0), or the fabric
    # interfaces take the cards after it.
    fabric_on_primary_card: bool = True
    # NCCL settings this type's fabric needs on top of the fabric's own (e.g. which RDMA NICs, OCI: NCCL_IB_HCA).
    fabric_env: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = field(default=())
    # The cloud's machine type, when the row's name also names the GPUs attached to it (GKE N1 + guestAccelerators).
    machine_type: str = ""

    @property
    def machine(self) -> str:
        """What the cloud API's machine type / size / shape field takes."""
        return self.machine_type or self.name
