"""GCP accelerator-optimized machine types, with their GKE accelerator types."""
from __future__ import annotations

from components.catalog.gpus import A100_40GB, A100_80GB, B200_180GB, H100_80GB, H200_141GB, L4, T4, V100
from components.catalog.types import InstanceType

_TCPX = ("GPUDirect-TCPX",)
_TCPXO = ("GPUDirect-TCPXO",)
_ROCE = ("GPUDirect RDMA over RoCE",)

# (machine type, GPU, GPUs, vCPUs, memory GiB, interconnect, GKE accelerator, notes)
# Only the 8-GPU A3/A4 types carry the extra GPU NICs GPUDirect needs; a3-highgpu-1g/2g/4g
# have a single NIC, so they get no interconnect. The interconnect of A3 High and A3 Mega names the GKE fabric
# (gpuPools[].fabric) that attaches their GPU NICs; A3 Ultra and A4 stay "rdma", which the platform does not attach.
# GPU NICs per node (GKE "Maximize GPU network bandwidth with GPUDirect and multi-networking": up to four secondary
# NICs on A3 High, eight on A3 Mega, one VPC each; cluster-toolkit gpu_direct.tf min_additional_networks 4 and 8).
_GPU_NICS = {"a3-highgpu-8g": 4, "a3-megagpu-8g": 8}
_ROWS = (
    ("a2-highgpu-1g", A100_40GB, 1, 12, 85, None, "nvidia-tesla-a100", ()),
    ("a2-highgpu-2g", A100_40GB, 2, 24, 170, None, "nvidia-tesla-a100", ()),
    ("a2-highgpu-4g", A100_40GB, 4, 48, 340, None, "nvidia-tesla-a100", ()),
    ("a2-highgpu-8g", A100_40GB, 8, 96, 680, None, "nvidia-tesla-a100", ()),
    ("a2-megagpu-16g", A100_40GB, 16, 96, 1360, None, "nvidia-tesla-a100", ()),
    ("a2-ultragpu-1g", A100_80GB, 1, 12, 170, None, "nvidia-a100-80gb", ()),
    ("a2-ultragpu-2g", A100_80GB, 2, 24, 340, None, "nvidia-a100-80gb", ()),
    ("a2-ultragpu-4g", A100_80GB, 4, 48, 680, None, "nvidia-a100-80gb", ()),
    ("a2-ultragpu-8g", A100_80GB, 8, 96, 1360, None, "nvidia-a100-80gb", ()),
    ("a3-highgpu-1g", H100_80GB, 1, 26, 234, None, "nvidia-h100-80gb", ()),
    ("a3-highgpu-2g", H100_80GB, 2, 52, 468, None, "nvidia-h100-80gb", ()),
    ("a3-highgpu-4g", H100_80GB, 4, 104, 936, None, "nvidia-h100-80gb", ()),
    ("a3-highgpu-8g", H100_80GB, 8, 208, 1872, "gpudirect-tcpx", "nvidia-h100-80gb", _TCPX),
    ("a3-megagpu-8g", H100_80GB, 8, 208, 1872, "gpudirect-tcpxo", "nvidia-h100-mega-80gb", _TCPXO),
    ("a3-ultragpu-8g", H200_141GB, 8, 224, 2952, "rdma", "nvidia-h200-141gb", _ROCE),
    ("a4-highgpu-8g", B200_180GB, 8, 224, 3968, "rdma", "nvidia-b200", _ROCE),
    ("g2-standard-4", L4, 1, 4, 16, None, "nvidia-l4", ()),
    ("g2-standard-8", L4, 1, 8, 32, None, "nvidia-l4", ()),
    ("g2-standard-12", L4, 1, 12, 48, None, "nvidia-l4", ()),
    ("g2-standard-16", L4, 1, 16, 64, None, "nvidia-l4", ()),
    ("g2-standard-24", L4, 2, 24, 96, None, "nvidia-l4", ()),
    ("g2-standard-32", L4, 1, 32, 128, None, "nvidia-l4", ()),
    ("g2-standard-48", L4, 4, 48, 192, None, "nvidia-l4", ()),
    ("g2-standard-96", L4, 8, 96, 384, None, "nvidia-l4", ()),
)

# N1 machine types carry no GPUs of their own: a pool attaches T4s or V100s to them (guestAccelerators), so one N1
# type with a GPU count is a row of its own, named `<machine type>+<accelerator>x<count>`. The counts fit the vCPU
# limits of GCP's "GPU machine types" page (T4: 1-2 GPUs up to 48 vCPUs, 4 up to 96; V100: 12 vCPUs per GPU).
# (machine type, vCPUs, GPU, accelerator, GPUs); n1-standard memory is 3.75 GB per vCPU.
_N1_ATTACHED = (
    ("n1-standard-4", 4, T4, "nvidia-tesla-t4", 1),
    ("n1-standard-8", 8, T4, "nvidia-tesla-t4", 1),
    ("n1-standard-16", 16, T4, "nvidia-tesla-t4", 1),
    ("n1-standard-16", 16, T4, "nvidia-tesla-t4", 2),
    ("n1-standard-32", 32, T4, "nvidia-tesla-t4", 2),
    ("n1-standard-32", 32, T4, "nvidia-tesla-t4", 4),
    ("n1-standard-64", 64, T4, "nvidia-tesla-t4", 4),
    ("n1-standard-8", 8, V100, "nvidia-tesla-v100", 1),
    ("n1-standard-16", 16, V100, "nvidia-tesla-v100", 2),
    ("n1-standard-32", 32, V100, "nvidia-tesla-v100", 4),
    ("n1-standard-64", 64, V100, "nvidia-tesla-v100", 8),
    ("n1-standard-96", 96, V100, "nvidia-tesla-v100", 8),
)

INSTANCE_TYPES: dict[str, InstanceType] = {
    name: InstanceType("gcp", name, gpu, gpus, vcpus, memory, interconnect, accelerator,
                       fabric_interfaces=_GPU_NICS.get(name, 0), notes=notes)
    for name, gpu, gpus, vcpus, memory, interconnect, accelerator, notes in _ROWS
} | {
    f"{machine}+{accelerator}x{gpus}": InstanceType("gcp", f"{machine}+{accelerator}x{gpus}", gpu, gpus, vcpus,
                                                    int(vcpus * 3.75), None, accelerator, machine_type=machine)
    for machine, vcpus, gpu, accelerator, gpus in _N1_ATTACHED
}
