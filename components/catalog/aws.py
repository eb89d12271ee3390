"""AWS EC2 GPU instance types."""
from __future__ import annotations

from .gpus import A10G, A100_40GB, A100_80GB, B200_180GB, H100_80GB, H200_141GB, L4, L40S
from .types import GpuModel, InstanceType

# (name, GPU, GPUs, vCPUs, memory GiB, interconnect, EFA interfaces)
# EFA interfaces: one per network card, the count a node group's launch template attaches (fabric: efa).
# - p5/p5e 32: AWS EC2 User Guide "Maximize network bandwidth on accelerated computing instances with EFA"
#   (p5-efa): "P5 and P5e instances support up to 32 network cards", one EFA interface per card.
# - p4d/p4de 4: four network cards (4 x 100 Gbps EFA); from the EC2 network-cards listing (p4d.24xlarge "4x15"
#   interfaces), not re-read from AWS's EFA table here.
# - p5en 16, p6-b200 8: NOT verified against AWS's table (the EFA pages found cover P5/P5e only); check
#   `aws ec2 describe-instance-types --query 'InstanceTypes[].NetworkInfo.EfaInfo.MaximumEfaInterfaces'` first.
_P_FAMILY = (
    ("p4d.24xlarge", A100_40GB, 8, 96, 1152, "efa", 4),
    ("p4de.24xlarge", A100_80GB, 8, 96, 1152, "efa", 4),
    ("p5.48xlarge", H100_80GB, 8, 192, 2048, "efa", 32),
    ("p5e.48xlarge", H200_141GB, 8, 192, 2048, "efa", 32),
    ("p5en.48xlarge", H200_141GB, 8, 192, 2048, "efa", 16),
    ("p6-b200.48xlarge", B200_180GB, 8, 192, 2048, "efa", 8),
)

# g5, g6 and g6e share one size ladder: (size, GPUs, vCPUs). Only memory per vCPU differs.
_G_SIZES = (
    ("xlarge", 1, 4), ("2xlarge", 1, 8), ("4xlarge", 1, 16), ("8xlarge", 1, 32),
    ("12xlarge", 4, 48), ("16xlarge", 1, 64), ("24xlarge", 4, 96), ("48xlarge", 8, 192),
)


def _g_family(family: str, gpu: GpuModel, gib_per_vcpu: int) -> tuple[tuple, ...]:
    # EFA is offered from 8xlarge up in these families; their per-size interface counts are not in the catalog, so
    # the platform does not attach EFA to them (fabric: efa is refused there).
    return tuple(
        (f"{family}.{size}", gpu, gpus, vcpus, vcpus * gib_per_vcpu, "efa" if vcpus >= 32 else None, 0)
        for size, gpus, vcpus in _G_SIZES
    )


_ROWS = _P_FAMILY + _g_family("g5", A10G, 4) + _g_family("g6", L4, 4) + _g_family("g6e", L40S, 8)

INSTANCE_TYPES: dict[str, InstanceType] = {
    name: InstanceType("aws", name, gpu, gpus, vcpus, memory, interconnect, fabric_interfaces=interfaces)
    for name, gpu, gpus, vcpus, memory, interconnect, interfaces in _ROWS
}
