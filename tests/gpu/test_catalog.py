"""Tests of the GPU catalog: coverage, lookups, the table, and conformance with upstream MIG facts."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

from components import catalog
from components.catalog import CLOUDS, CatalogError

from support.paths import ROOT

UPSTREAM = ROOT.parent / "shared" / "upstream"

# mig-profiles.yaml names the B200 without its memory size.
UPSTREAM_GPU_NAME = {"B200-180GB": "B200"}
# Not in mig-profiles.yaml yet: recorded from mig-parted's config-default.yaml alone, which the test after checks.
MIG_PARTED_ONLY = {"B300-269GB"}

REQUIRED = [
    # (cloud, instance type, GPU model, GPUs)
    ("aws", "p4d.24xlarge", "A100-40GB", 8),
    ("aws", "p4de.24xlarge", "A100-80GB", 8),
    ("aws", "p5.48xlarge", "H100-80GB", 8),
    ("aws", "p5e.48xlarge", "H200-141GB", 8),
    ("aws", "p5en.48xlarge", "H200-141GB", 8),
    ("aws", "p6-b200.48xlarge", "B200-180GB", 8),
    ("aws", "p6-b300.48xlarge", "B300-269GB", 8),
    ("aws", "p3.2xlarge", "V100", 1),
    ("aws", "p3.8xlarge", "V100", 4),
    ("aws", "p3.16xlarge", "V100", 8),
    ("aws", "p3dn.24xlarge", "V100-32GB", 8),
    *[("aws", f"g4dn.{size}", "T4", gpus)
      for size, gpus in (("xlarge", 1), ("2xlarge", 1), ("4xlarge", 1), ("8xlarge", 1), ("12xlarge", 4),
                         ("16xlarge", 1))],
    *[
        ("aws", f"{family}.{size}", gpu, gpus)
        for family, gpu in (("g5", "A10G"), ("g6", "L4"), ("g6e", "L40S"))
        for size, gpus in (
            ("xlarge", 1), ("2xlarge", 1), ("4xlarge", 1), ("8xlarge", 1),
            ("12xlarge", 4), ("16xlarge", 1), ("24xlarge", 4), ("48xlarge", 8),
        )
    ],
    ("azure", "Standard_ND96asr_v4", "A100-40GB", 8),
    ("azure", "Standard_ND96amsr_A100_v4", "A100-80GB", 8),
    ("azure", "Standard_ND96isr_H100_v5", "H100-80GB", 8),
    ("azure", "Standard_ND96isr_H200_v5", "H200-141GB", 8),
    ("azure", "Standard_NC24ads_A100_v4", "A100-80GB", 1),
    ("azure", "Standard_NC48ads_A100_v4", "A100-80GB", 2),
    ("azure", "Standard_NC96ads_A100_v4", "A100-80GB", 4),
    ("azure", "Standard_NC40ads_H100_v5", "H100-NVL-94GB", 1),
    ("azure", "Standard_NC80adis_H100_v5", "H100-NVL-94GB", 2),
    ("azure", "Standard_NV36ads_A10_v5", "A10", 1),
    ("azure", "Standard_NV72ads_A10_v5", "A10", 2),
    ("azure", "Standard_NC4as_T4_v3", "T4", 1),
    ("azure", "Standard_NC8as_T4_v3", "T4", 1),
    ("azure", "Standard_NC16as_T4_v3", "T4", 1),
    ("azure", "Standard_NC64as_T4_v3", "T4", 4),
    *[("gcp", f"a2-highgpu-{n}g", "A100-40GB", n) for n in (1, 2, 4, 8)],
    ("gcp", "a2-megagpu-16g", "A100-40GB", 16),
    *[("gcp", f"a2-ultragpu-{n}g", "A100-80GB", n) for n in (1, 2, 4, 8)],
    *[("gcp", f"a3-highgpu-{n}g", "H100-80GB", n) for n in (1, 2, 4, 8)],
    ("gcp", "a3-megagpu-8g", "H100-80GB", 8),
    ("gcp", "a3-ultragpu-8g", "H200-141GB", 8),
    ("gcp", "a4-highgpu-8g", "B200-180GB", 8),
    *[
        ("gcp", f"g2-standard-{vcpus}", "L4", gpus)
        for vcpus, gpus in ((4, 1), (8, 1), (12, 1), (16, 1), (24, 2), (32, 1), (48, 4), (96, 8))
    ],
    ("oci", "BM.GPU4.8", "A100-40GB", 8),
    ("oci", "BM.GPU.A100-v2.8", "A100-80GB", 8),
    ("oci", "BM.GPU.H100.8", "H100-80GB", 8),
    ("oci", "BM.GPU.H200.8", "H200-141GB", 8),
    ("oci", "BM.GPU.B200.8", "B200-180GB", 8),
    ("oci", "BM.GPU.L40S.4", "L40S", 4),
    ("oci", "VM.GPU.A10.1", "A10", 1),
    ("oci", "VM.GPU.A10.2", "A10", 2),
    ("oci", "BM.GPU.A10.4", "A10", 4),
    ("oci", "VM.GPU3.1", "V100", 1),
    ("oci", "VM.GPU3.2", "V100", 2),
    ("oci", "VM.GPU3.4", "V100", 4),
    ("oci", "BM.GPU3.8", "V100", 8),
    ("gcp", "n1-standard-8+nvidia-tesla-t4x1", "T4", 1),
    ("gcp", "n1-standard-32+nvidia-tesla-t4x4", "T4", 4),
    ("gcp", "n1-standard-8+nvidia-tesla-v100x1", "V100", 1),
    ("gcp", "n1-standard-64+nvidia-tesla-v100x8", "V100", 8),
]

GKE_ACCELERATORS = {
    "a2-highgpu": "nvidia-tesla-a100",
    "a2-megagpu": "nvidia-tesla-a100",
    "a2-ultragpu": "nvidia-a100-80gb",
    "a3-highgpu": "nvidia-h100-80gb",
    "a3-megagpu": "nvidia-h100-mega-80gb",
    "a3-ultragpu": "nvidia-h200-141gb",
    "a4-highgpu": "nvidia-b200",
    "g2-standard": "nvidia-l4",
}
# N1 rows name the accelerator they attach after the machine type.
N1_ACCELERATOR = r"n1-standard-\d+\+(nvidia-tesla-(t4|v100))x\d"

INTERCONNECT = {
    "p4d.24xlarge": "efa", "p5.48xlarge": "efa", "p6-b200.48xlarge": "efa", "p6-b300.48xlarge": "efa",
    "p3dn.24xlarge": "efa", "p3.16xlarge": None, "g4dn.8xlarge": "efa", "g4dn.4xlarge": None,
    "Standard_NC64as_T4_v3": None, "BM.GPU3.8": None, "n1-standard-64+nvidia-tesla-v100x8": None,
    "Standard_ND96asr_v4": "infiniband", "Standard_ND96isr_H200_v5": "infiniband",
    "Standard_NC24ads_A100_v4": None,
    "a2-highgpu-8g": None, "a3-highgpu-8g": "gpudirect-tcpx", "a3-megagpu-8g": "gpudirect-tcpxo",
    "a3-ultragpu-8g": "rdma",
    "a4-highgpu-8g": "rdma",
    "BM.GPU.H100.8": "rdma", "BM.GPU.L40S.4": "rdma", "VM.GPU.A10.1": None,
}


@pytest.mark.parametrize(("cloud", "name", "gpu", "gpus"), REQUIRED)
def test_required_instance_types(cloud: str, name: str, gpu: str, gpus: int) -> None:
    row = catalog.lookup(cloud, name)
    assert (row.cloud, row.name, row.gpu.name, row.gpus) == (cloud, name, gpu, gpus)
    assert row.gpu is catalog.gpu_model(gpu)
    assert row.vcpus > 0 and row.memory_gib > 0


@pytest.mark.parametrize(("name", "interconnect"), INTERCONNECT.items())
def test_interconnect(name: str, interconnect: str | None) -> None:
    (row,) = [row for row in catalog.instance_types() if row.name == name]
    assert row.interconnect == interconnect


def test_gke_accelerator_only_and_always_on_gcp() -> None:
    for row in catalog.instance_types():
        if row.cloud == "gcp" and (n1 := re.fullmatch(N1_ACCELERATOR, row.name)):
            assert row.accelerator == n1.group(1) and row.machine == row.name.split("+")[0], row.name
        elif row.cloud == "gcp":
            assert row.accelerator == GKE_ACCELERATORS[row.name.rsplit("-", 1)[0]], row.name
        else:
            assert row.accelerator is None, row.name


def test_instance_types_sorted_and_filtered() -> None:
    rows = catalog.instance_types()
    assert [r.cloud for r in rows] == sorted(r.cloud for r in rows)
    g5 = [r.name for r in catalog.instance_types("aws") if r.name.startswith("g5.")]
    assert g5[:5] == ["g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.8xlarge", "g5.12xlarge"]
    g2 = [r.name for r in catalog.instance_types("gcp") if r.name.startswith("g2-")]
    assert g2[:5] == [f"g2-standard-{n}" for n in (4, 8, 12, 16, 24)]
    assert {r.cloud for r in rows} == set(CLOUDS)
    assert {r.cloud for r in catalog.instance_types("oci")} == {"oci"}


def test_unknown_instance_type_suggests_close_matches() -> None:
    with pytest.raises(CatalogError) as err:
        catalog.lookup("aws", "p5.48xlarg")
    assert err.value.matches[0] == "p5.48xlarge"
    assert "p5.48xlarg'" in str(err.value) and "p5.48xlarge" in str(err.value)


def test_close_matches_ignore_case() -> None:
    assert catalog.close_matches("azure", "standard_nd96isr_h100_v5")[0] == "Standard_ND96isr_H100_v5"
    assert len(catalog.close_matches("aws", "g6.xlarge")) <= 5


def test_unknown_instance_type_without_match_hints_at_cli() -> None:
    with pytest.raises(CatalogError, match=r"gpu-platform catalog --cloud gcp") as err:
        catalog.lookup("gcp", "zzzzzz")
    assert err.value.matches == []


@pytest.mark.parametrize("cloud, name, equivalent", [
    ("azure", "p5.48xlarge", ["Standard_ND96isr_H100_v5"]),
    ("aws", "standard_nd96isr_h100_v5", ["p5.48xlarge"]),
    ("oci", "a3-highgpu-8g", ["BM.GPU.H100.8"]),
    ("aws", "Standard_NC24ads_A100_v4", ["p4de.24xlarge"]),
])
def test_another_clouds_instance_type_names_its_equivalents_here(cloud, name, equivalent) -> None:
    with pytest.raises(CatalogError) as err:
        catalog.lookup(cloud, name)
    assert err.value.matches == equivalent
    assert "is an instance type of " in str(err.value) and f"the same GPUs on {cloud}: {equivalent[0]}" in str(err.value)


def test_equivalents_rank_the_nearest_gpu_count_and_the_same_fabric_first() -> None:
    assert catalog.equivalents(catalog.lookup("aws", "p5.48xlarge"), "gcp")[0] in {"a3-highgpu-8g", "a3-megagpu-8g"}
    assert catalog.equivalents(catalog.lookup("aws", "p5.48xlarge"), "gcp")[-1] == "a3-highgpu-4g"


def test_another_clouds_type_without_that_gpu_here_says_so() -> None:
    with pytest.raises(CatalogError, match="azure has no L4 instance type") as err:
        catalog.lookup("azure", "g6.xlarge")
    assert err.value.matches == []


def test_unknown_cloud_lists_allowed_clouds() -> None:
    with pytest.raises(CatalogError, match="aws, azure, gcp, oci") as err:
        catalog.lookup("ibm", "p5.48xlarge")
    assert isinstance(err.value, LookupError)
    with pytest.raises(CatalogError, match="'ibm'"):
        catalog.instance_types("ibm")


def test_gpu_model_lookup() -> None:
    assert catalog.gpu_model("H100-80GB").memory_gib == 80
    with pytest.raises(CatalogError) as err:
        catalog.gpu_model("H100-80G")
    assert "H100-80GB" in err.value.matches
    assert [g.name for g in catalog.gpu_models()] == sorted(g.name for g in catalog.gpu_models())


def test_gpus_without_mig_have_no_profiles() -> None:
    for name in ("L4", "L40S", "A10G", "A10", "T4", "V100", "V100-32GB", "H100-NVL-94GB"):
        gpu = catalog.gpu_model(name)
        assert not gpu.supports_mig
        assert gpu.mig_profiles == () and gpu.mig_balanced == ()


def test_mig_tables_are_self_consistent() -> None:
    for gpu in catalog.gpu_models():
        names = [p.name for p in gpu.mig_profiles]
        assert len(names) == len(set(names)), gpu.name
        assert all(gpu.mig_profile(n) for n, _ in gpu.mig_balanced), gpu.name
        assert all(p.max_per_gpu == 1 for p in gpu.mig_profiles if p.name.endswith("+me"))
    assert catalog.gpu_model("H100-80GB").mig_profile("1g.10gb").resource_name == "nvidia.com/mig-1g.10gb"


def test_format_table() -> None:
    lines = catalog.format_table("aws").splitlines()
    assert lines[0].split()[:3] == ["cloud", "instance", "type"]
    assert len(lines) == 1 + len(catalog.instance_types("aws"))
    p5 = next(line for line in lines if line.split()[1] == "p5.48xlarge")
    assert p5.split()[2:8] == ["H100-80GB", "8", "80", "192", "2048", "efa"]
    assert "1g.10gb, 1g.10gb+me" in p5
    assert next(line for line in lines if line.split()[1] == "g6.xlarge").endswith("-")
    full = catalog.format_table()
    assert "BM.GPU.H200.8" in full and "Standard_ND96isr_H200_v5" in full
    # Aligned: every row starts its "instance type" cell at the same column.
    assert len({line.index(line.split()[1]) for line in full.splitlines()[1:]}) == 1


def test_lookup_imports_only_that_cloud() -> None:
    code = (
        "import sys; from components import catalog; catalog.lookup('aws', 'p5.48xlarge'); "
        "import json; print(json.dumps([m for m in sys.modules if m.endswith('.catalog')]))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    assert "components.clouds.aws.catalog" in loaded
    assert not {"components.clouds.azure.catalog", "components.clouds.gcp.catalog", "components.clouds.oci.catalog"} & set(loaded)


# Conformance with the hand-compiled upstream facts in the sibling ../shared checkout.


def _upstream_yaml(name: str) -> dict:
    path = UPSTREAM / name
    if not path.is_file():
        pytest.skip(f"{path} is absent: the shared/upstream reference data is not checked out beside the repo")
    return yaml.safe_load(path.read_text())


def _mig_gpus() -> list[catalog.GpuModel]:
    return [gpu for gpu in catalog.gpu_models() if gpu.supports_mig]


def test_mig_profiles_match_upstream_table() -> None:
    upstream = _upstream_yaml("mig-profiles.yaml")["gpus"]
    ours = {UPSTREAM_GPU_NAME.get(gpu.name, gpu.name): gpu for gpu in _mig_gpus() if gpu.name not in MIG_PARTED_ONLY}
    assert set(ours) == set(upstream), "MIG-capable GPUs differ from mig-profiles.yaml"
    for name, gpu in ours.items():
        expected = {p["name"]: p["max_instances"] for p in upstream[name]["profiles"]}
        assert {p.name: p.max_per_gpu for p in gpu.mig_profiles} == expected, name
        assert dict(gpu.mig_balanced) == upstream[name]["balanced"], name


def test_mig_profiles_exist_in_mig_parted_default_config() -> None:
    configs = _upstream_yaml("mig-parted/config-default.yaml")["mig-configs"]
    balanced_layouts = [entry["mig-devices"] for entry in configs["all-balanced"]]
    for gpu in _mig_gpus():
        for profile in gpu.mig_profiles:
            # mig-parted spells "+me" as ".me" in config names: all-1g.10gb.me.
            config = f"all-{profile.name.replace('+', '.')}"
            assert config in configs, f"{gpu.name}: {config} missing"
            counts = {entry["mig-devices"][profile.name] for entry in configs[config]}
            assert profile.max_per_gpu in counts, f"{gpu.name}: {config} allows {counts}"
        assert dict(gpu.mig_balanced) in balanced_layouts, gpu.name
