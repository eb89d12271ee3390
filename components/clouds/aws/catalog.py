"""AWS EC2 GPU instance types."""
from __future__ import annotations

from components.catalog.gpus import A10G, A100_40GB, A100_80GB, B200_180GB, B300_269GB, H100_80GB, H200_141GB, L4, L40S, T4, V100, V100_32GB
from components.catalog.types import GpuModel, InstanceType

# (name, GPU, GPUs, vCPUs, memory GiB, interconnect, EFA interfaces)
# EFA interfaces: one per network card, the count a node group's launch template attaches (fabric: efa). Network
# cards per type are the "Network cards" column of AWS's "Specifications for Amazon EC2 accelerated computing
# instances" (network specifications): p3dn 1, p4d/p4de 4, p5/p5e 32, p5en 16, p6-b200 8, p6-b300 17 of which 16
# take EFA; P5/P5e also in the EC2 user guide "Maximize network bandwidth on accelerated computing instances with
# EFA" (p5-efa).
_P_FAMILY = (
    # p3 takes no EFA; p3dn.24xlarge (V100 32 GB) takes one.
    ("p3.2xlarge", V100, 1, 8, 61, None, 0),
    ("p3.8xlarge", V100, 4, 32, 244, None, 0),
    ("p3.16xlarge", V100, 8, 64, 488, None, 0),
    ("p3dn.24xlarge", V100_32GB, 8, 96, 768, "efa", 1),
    ("p4d.24xlarge", A100_40GB, 8, 96, 1152, "efa", 4),
    ("p4de.24xlarge", A100_80GB, 8, 96, 1152, "efa", 4),
    ("p5.48xlarge", H100_80GB, 8, 192, 2048, "efa", 32),
    ("p5e.48xlarge", H200_141GB, 8, 192, 2048, "efa", 32),
    ("p5en.48xlarge", H200_141GB, 8, 192, 2048, "efa", 16),
    ("p6-b200.48xlarge", B200_180GB, 8, 192, 2048, "efa", 8),
    ("p6-b300.48xlarge", B300_269GB, 8, 192, 4096, "efa", 16),
)
# Network card 0 of these types carries no EFA (its EFA limit is 0: launching with one fails AttachmentLimitExceeded),
# so the primary interface there is plain ENA and the EFA-only interfaces take cards 1 to N.
_ENA_ONLY_PRIMARY = {"p6-b300.48xlarge"}

# g5, g6 and g6e share one size ladder: (size, GPUs, vCPUs). Only memory per vCPU differs.
_G_SIZES = (
    ("xlarge", 1, 4), ("2xlarge", 1, 8), ("4xlarge", 1, 16), ("8xlarge", 1, 32),
    ("12xlarge", 4, 48), ("16xlarge", 1, 64), ("24xlarge", 4, 96), ("48xlarge", 8, 192),
)
# EFA from 8xlarge up (the same AWS table's EFA column); one network card each, except g6e.24xlarge (2) and
# g6e.48xlarge (4) (its "Network cards" column).
_G_NETWORK_CARDS = {"g6e.24xlarge": 2, "g6e.48xlarge": 4}


def _g_family(family: str, gpu: GpuModel, gib_per_vcpu: int, sizes: tuple = _G_SIZES) -> tuple[tuple, ...]:
    rows = []
    for size, gpus, vcpus in sizes:
        name, efa = f"{family}.{size}", vcpus >= 32
        rows.append((name, gpu, gpus, vcpus, vcpus * gib_per_vcpu, "efa" if efa else None,
                     _G_NETWORK_CARDS.get(name, 1) if efa else 0))
    return tuple(rows)


# g4dn (T4) stops at 16xlarge: the ladder's first six sizes, with the same GPU counts and EFA from 8xlarge.
_ROWS = _P_FAMILY + _g_family("g4dn", T4, 4, _G_SIZES[:6]) + _g_family("g5", A10G, 4) + _g_family("g6", L4, 4) + _g_family("g6e", L40S, 8)

INSTANCE_TYPES: dict[str, InstanceType] = {
    # `fabric: auto` attaches EFA to the P family only: a g-family node with EFA keeps the bandwidth it has without it
    # and gains OS bypass, while attaching it pins the pool to one subnet, a replacement of every existing g-family
    # training pool on upgrade. `fabric: efa` attaches it there on request.
    name: InstanceType("aws", name, gpu, gpus, vcpus, memory, interconnect, fabric_interfaces=interfaces,
                       fabric_on_auto=name.startswith("p"), fabric_on_primary_card=name not in _ENA_ONLY_PRIMARY)
    for name, gpu, gpus, vcpus, memory, interconnect, interfaces in _ROWS
}
