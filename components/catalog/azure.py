"""Azure GPU VM sizes."""
from __future__ import annotations

from .gpus import A10, A100_40GB, A100_80GB, H100_80GB, H100_NVL_94GB, H200_141GB
from .types import InstanceType

# (VM size, GPU, GPUs, vCPUs, memory GiB, interconnect)
# NV A10 v5 sizes below NV36ads get a fraction of one GPU, so only whole-GPU sizes are listed.
_ROWS = (
    ("Standard_ND96asr_v4", A100_40GB, 8, 96, 900, "infiniband"),
    ("Standard_ND96amsr_A100_v4", A100_80GB, 8, 96, 1900, "infiniband"),
    ("Standard_ND96isr_H100_v5", H100_80GB, 8, 96, 1900, "infiniband"),
    ("Standard_ND96isr_H200_v5", H200_141GB, 8, 96, 1850, "infiniband"),
    ("Standard_NC24ads_A100_v4", A100_80GB, 1, 24, 220, None),
    ("Standard_NC48ads_A100_v4", A100_80GB, 2, 48, 440, None),
    ("Standard_NC96ads_A100_v4", A100_80GB, 4, 96, 880, None),
    ("Standard_NC40ads_H100_v5", H100_NVL_94GB, 1, 40, 320, None),
    ("Standard_NC80adis_H100_v5", H100_NVL_94GB, 2, 80, 640, None),
    ("Standard_NV36ads_A10_v5", A10, 1, 36, 440, None),
    ("Standard_NV72ads_A10_v5", A10, 2, 72, 880, None),
)

INSTANCE_TYPES: dict[str, InstanceType] = {
    name: InstanceType("azure", name, gpu, gpus, vcpus, memory, interconnect)
    for name, gpu, gpus, vcpus, memory, interconnect in _ROWS
}
