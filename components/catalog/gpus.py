"""GPU models and their MIG profiles."""
from __future__ import annotations

from .types import GpuModel, MigProfile

# MIG facts below are recorded from shared/upstream/mig-profiles.yaml (which cites
# NVIDIA mig-parted v0.15.0 config-default.yaml); tests/gpu/test_catalog.py checks them
# against that file. It is never read at runtime: users' machines do not have it.
# B300 is not in mig-profiles.yaml yet: its rows are read straight from config-default.yaml (the entries under
# "# B300", device 0x318210DE, and the all-<profile> counts), which tests/gpu/test_catalog.py checks too.


def _profiles(*rows: tuple[str, int]) -> tuple[MigProfile, ...]:
    return tuple(MigProfile(name, count) for name, count in rows)


# mig-parted keeps A100-80GB and H100-80GB in one config section, so they share a table.
_MIG_80GB = _profiles(
    ("1g.10gb", 7), ("1g.10gb+me", 1), ("1g.20gb", 4), ("2g.20gb", 3),
    ("3g.40gb", 2), ("4g.40gb", 1), ("7g.80gb", 1),
)
_BALANCED_80GB = (("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1))

A100_40GB = GpuModel(
    "A100-40GB", 40,
    _profiles(
        ("1g.5gb", 7), ("1g.5gb+me", 1), ("1g.10gb", 4), ("2g.10gb", 3),
        ("3g.20gb", 2), ("4g.20gb", 1), ("7g.40gb", 1),
    ),
    (("1g.5gb", 2), ("2g.10gb", 1), ("3g.20gb", 1)),
)
A100_80GB = GpuModel("A100-80GB", 80, _MIG_80GB, _BALANCED_80GB)
H100_80GB = GpuModel("H100-80GB", 80, _MIG_80GB, _BALANCED_80GB)
# MIG-capable in hardware, but mig-profiles.yaml has no table for it yet, so none here.
H100_NVL_94GB = GpuModel("H100-NVL-94GB", 94)
H200_141GB = GpuModel(
    "H200-141GB", 141,
    _profiles(
        ("1g.18gb", 7), ("1g.18gb+me", 1), ("1g.35gb", 4), ("2g.35gb", 3),
        ("3g.71gb", 2), ("4g.71gb", 1), ("7g.141gb", 1),
    ),
    (("1g.18gb", 2), ("2g.35gb", 1), ("3g.71gb", 1)),
)
B200_180GB = GpuModel(
    "B200-180GB", 180,
    _profiles(
        ("1g.23gb", 7), ("1g.23gb+me", 1), ("1g.45gb", 4), ("2g.45gb", 3),
        ("3g.90gb", 2), ("4g.90gb", 1), ("7g.180gb", 1),
    ),
    (("1g.23gb", 2), ("2g.45gb", 1), ("3g.90gb", 1)),
)
# MIG sees 269 GB of the B300's 288 GB (its full profile is 7g.269gb); memory slices are counted against that.
B300_269GB = GpuModel(
    "B300-269GB", 269,
    _profiles(
        ("1g.34gb", 7), ("1g.34gb+me", 1), ("1g.67gb", 4), ("2g.67gb", 3),
        ("3g.135gb", 2), ("4g.135gb", 1), ("7g.269gb", 1),
    ),
    (("1g.34gb", 2), ("2g.67gb", 1), ("3g.135gb", 1)),
)
A30_24GB = GpuModel(
    "A30-24GB", 24,
    _profiles(("1g.6gb", 4), ("1g.6gb+me", 1), ("2g.12gb", 2), ("2g.12gb+me", 1), ("4g.24gb", 1)),
    (("1g.6gb", 2), ("2g.12gb", 1)),
)
L4 = GpuModel("L4", 24)
L40S = GpuModel("L40S", 48)
A10G = GpuModel("A10G", 24)
A10 = GpuModel("A10", 24)
T4 = GpuModel("T4", 16)
V100 = GpuModel("V100", 16)  # the 16 GB part most clouds rent
V100_32GB = GpuModel("V100-32GB", 32)  # AWS p3dn.24xlarge only

GPU_MODELS: dict[str, GpuModel] = {
    gpu.name: gpu
    for gpu in (
        A100_40GB, A100_80GB, H100_80GB, H100_NVL_94GB, H200_141GB, B200_180GB, B300_269GB,
        A30_24GB, L4, L40S, A10G, A10, T4, V100, V100_32GB,
    )
}
