"""Azure GPU VM sizes."""
from __future__ import annotations

from components.catalog.gpus import A10, A100_40GB, A100_80GB, H100_80GB, H100_NVL_94GB, H200_141GB, T4
from components.catalog.types import InstanceType

# (VM size, GPU, GPUs, vCPUs, memory GiB, interconnect, InfiniBand interfaces)
# InfiniBand interfaces: what one node advertises as rdma/ib (fabric: infiniband). Microsoft's size-series pages
# (ND A100 v4, NDm A100 v4, ND H100 v5, ND H200 v5) give each GPU "its own dedicated, topology-agnostic" InfiniBand
# connection: 8 x 200 Gb/s HDR on the A100 v4 sizes, 8 x 400 Gb/s NDR (Quantum-2 ConnectX-7) on H100/H200 v5,
# "automatically configured between VMs occupying the same virtual machine scale set".
# NV A10 v5 sizes below NV36ads get a fraction of one GPU, so only whole-GPU sizes are listed.
# NCv3 (V100) is not listed: Azure retired the series on 2025-09-30 and creates no new NCv3 VMs.
_ROWS = (
    ("Standard_ND96asr_v4", A100_40GB, 8, 96, 900, "infiniband", 8),
    ("Standard_ND96amsr_A100_v4", A100_80GB, 8, 96, 1900, "infiniband", 8),
    ("Standard_ND96isr_H100_v5", H100_80GB, 8, 96, 1900, "infiniband", 8),
    ("Standard_ND96isr_H200_v5", H200_141GB, 8, 96, 1850, "infiniband", 8),
    ("Standard_NC24ads_A100_v4", A100_80GB, 1, 24, 220, None, 0),
    ("Standard_NC48ads_A100_v4", A100_80GB, 2, 48, 440, None, 0),
    ("Standard_NC96ads_A100_v4", A100_80GB, 4, 96, 880, None, 0),
    ("Standard_NC40ads_H100_v5", H100_NVL_94GB, 1, 40, 320, None, 0),
    ("Standard_NC80adis_H100_v5", H100_NVL_94GB, 2, 80, 640, None, 0),
    ("Standard_NC4as_T4_v3", T4, 1, 4, 28, None, 0),
    ("Standard_NC8as_T4_v3", T4, 1, 8, 56, None, 0),
    ("Standard_NC16as_T4_v3", T4, 1, 16, 110, None, 0),
    ("Standard_NC64as_T4_v3", T4, 4, 64, 440, None, 0),
    ("Standard_NV36ads_A10_v5", A10, 1, 36, 440, None, 0),
    ("Standard_NV72ads_A10_v5", A10, 2, 72, 880, None, 0),
)

INSTANCE_TYPES: dict[str, InstanceType] = {
    name: InstanceType("azure", name, gpu, gpus, vcpus, memory, interconnect, fabric_interfaces=interfaces)
    for name, gpu, gpus, vcpus, memory, interconnect, interfaces in _ROWS
}
