"""AWS EC2 GPU instance types."""
from __future__ import annotations

from .gpus import A10G, A100_40GB, A100_80GB, B200_180GB, H100_80GB, H200_141GB, L4, L40S
from .types import GpuModel, InstanceType

# (name, GPU, GPUs, vCPUs, memory GiB, interconnect)
_P_FAMILY = (
    ("p4d.24xlarge", A100_40GB, 8, 96, 1152, "efa"),
    ("p4de.24xlarge", A100_80GB, 8, 96, 1152, "efa"),
    ("p5.48xlarge", H100_80GB, 8, 192, 2048, "efa"),
    ("p5e.48xlarge", H200_141GB, 8, 192, 2048, "efa"),
    ("p5en.48xlarge", H200_141GB, 8, 192, 2048, "efa"),
    ("p6-b200.48xlarge", B200_180GB, 8, 192, 2048, "efa"),
)

# g5, g6 and g6e share one size ladder: (size, GPUs, vCPUs). Only memory per vCPU differs.
_G_SIZES = (
    ("xlarge", 1, 4), ("2xlarge", 1, 8), ("4xlarge", 1, 16), ("8xlarge", 1, 32),
    ("12xlarge", 4, 48), ("16xlarge", 1, 64), ("24xlarge", 4, 96), ("48xlarge", 8, 192),
)


def _g_family(family: str, gpu: GpuModel, gib_per_vcpu: int) -> tuple[tuple, ...]:
    # EFA is offered from 8xlarge up in these families.
    return tuple(
        (f"{family}.{size}", gpu, gpus, vcpus, vcpus * gib_per_vcpu, "efa" if vcpus >= 32 else None)
        for size, gpus, vcpus in _G_SIZES
    )


_ROWS = _P_FAMILY + _g_family("g5", A10G, 4) + _g_family("g6", L4, 4) + _g_family("g6e", L40S, 8)

INSTANCE_TYPES: dict[str, InstanceType] = {
    name: InstanceType("aws", name, gpu, gpus, vcpus, memory, interconnect)
    for name, gpu, gpus, vcpus, memory, interconnect in _ROWS
}
