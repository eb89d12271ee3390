"""OCI GPU compute shapes."""
from __future__ import annotations

from components.catalog.gpus import A10, A100_40GB, A100_80GB, B200_180GB, H100_80GB, H200_141GB, L40S, V100
from components.catalog.types import InstanceType

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
    # V100 shapes predate RDMA cluster networks: no fabric, even on bare metal.
    ("VM.GPU3.1", V100, 1, 12, 90, None),
    ("VM.GPU3.2", V100, 2, 24, 180, None),
    ("VM.GPU3.4", V100, 4, 48, 360, None),
    ("BM.GPU3.8", V100, 8, 104, 768, None),
)

# The RDMA NICs (mlx5 devices) NCCL must use on each bare-metal shape, in Oracle's order, from
# oracle-quickstart/oci-hpc-oke docs/recommended-nccl-rccl-parameters-by-shape.md; the leading "=" makes NCCL take
# exactly these names, not every device whose name starts with one (the front-end VCN NICs are mlx5 too).
# Dual-port shapes (A100, H100) have 16 RDMA ports, single-port 400 Gb shapes (H200, B200) 8 (the same file and
# docs/using-rdma-network-interfaces-in-manifests.md). BM.GPU.L40S.4 has RDMA but no published list: left out.
_RDMA_HCAS = {
    "BM.GPU4.8": "mlx5_0,mlx5_2,mlx5_6,mlx5_8,mlx5_10,mlx5_12,mlx5_14,mlx5_16,mlx5_1,mlx5_3,mlx5_7,mlx5_9,mlx5_11,"
                 "mlx5_13,mlx5_15,mlx5_17",
    "BM.GPU.A100-v2.8": "mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_14,mlx5_15,mlx5_16,mlx5_17,"
                        "mlx5_9,mlx5_10,mlx5_11,mlx5_12",
    "BM.GPU.H100.8": "mlx5_0,mlx5_1,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_9,mlx5_10,mlx5_12,mlx5_13,mlx5_14,"
                     "mlx5_15,mlx5_16,mlx5_17",
    "BM.GPU.H200.8": "mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11",
    "BM.GPU.B200.8": "mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11",
}
# Oracle's per-shape extras beyond the common RDMA settings (profiles.py _OCI_RDMA): A100 shapes spread each
# connection over 4 queue pairs; Hopper and Blackwell turn off cuMem and CPU affinity and bootstrap over eth0.
_A100_EXTRA = (("NCCL_IB_QPS_PER_CONNECTION", "4"),)
_HOPPER_EXTRA = (("NCCL_CUMEM_ENABLE", "0"), ("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IGNORE_CPU_AFFINITY", "1"))
_EXTRA = {"BM.GPU4.8": _A100_EXTRA, "BM.GPU.A100-v2.8": _A100_EXTRA, "BM.GPU.H100.8": _HOPPER_EXTRA,
          "BM.GPU.H200.8": _HOPPER_EXTRA, "BM.GPU.B200.8": _HOPPER_EXTRA}


def _fabric(name: str) -> dict:
    hcas = _RDMA_HCAS.get(name)
    if hcas is None:
        return {}
    return {"fabric_interfaces": len(hcas.split(",")),
            "fabric_env": (("NCCL_IB_HCA", f"={hcas}"), *_EXTRA[name])}


INSTANCE_TYPES: dict[str, InstanceType] = {
    name: InstanceType("oci", name, gpu, gpus, vcpus, memory, interconnect, **_fabric(name))
    for name, gpu, gpus, vcpus, memory, interconnect in _ROWS
}
