"""OCI GPU compute shapes."""
from __future__ import annotations

from .gpus import A10, A100_40GB, A100_80GB, B200_180GB, H100_80GB, H200_141GB, L40S
from .types import InstanceType

# (shape, GPU, GPUs, vCPUs, memory GiB, interconnect); OCI sells OCPUs, one OCPU = 2 vCPUs.
_ROWS = (
    ("BM.GPU4.8", A100_40GB, 8, 128, 2048, "rdma"),
    ("BM.GPU.A100-v2.8", A100_80GB, 8, 256, 2048, "rdma"),
    ("BM.GPU.H100.8", H100_80GB, 8, 224, 2048, "rdma"),
    ("BM.GPU.H200.8", H200_141GB, 8, 224, 3072, "rdma"),
    ("BM.GPU.B200.8", B200_180GB, 8, 256, 4096, "rdma"),
    ("BM.GPU.L40S.4", L40S, 4, 224, 1024, "rdma"),
    ("BM.GPU.A10.4", A10, 4, 128, 1024, None),
    ("VM.GPU.A10.1", A10, 1, 30, 240, None),
    ("VM.GPU.A10.2", A10, 2, 60, 480, None),
)

INSTANCE_TYPES: dict[str, InstanceType] = {
    name: InstanceType("oci", name, gpu, gpus, vcpus, memory, interconnect)
    for name, gpu, gpus, vcpus, memory, interconnect in _ROWS
}
