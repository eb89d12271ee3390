"""Config errors for GPU sharing the platform cannot set up: each names its path and says why."""
from __future__ import annotations

import copy

import pytest

from components.config import ConfigError, validate

from support.gpu import CLOUDS, raw_config


def problems(raw: dict) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        validate(raw)
    return {p.path: p.message for p in info.value.problems}


def pool(cloud: str, sharing: dict, mig_capable: bool = True, **extra) -> dict:
    instance = CLOUDS[cloud][1][0] if mig_capable else CLOUDS[cloud][2][0]
    return {"name": "p1", "instanceType": instance, "maxNodes": 2, "sharing": sharing, **extra}


@pytest.mark.parametrize("cloud", CLOUDS)
def test_mig_on_a_gpu_without_mig(cloud):
    found = problems(raw_config(cloud, [pool(cloud, {"mode": "mig", "migProfile": "all-1g.10gb"}, mig_capable=False)]))
    assert "has no MIG" in found["gpuPools[0].sharing.mode"]
    assert "use none, mps or time-slicing" in found["gpuPools[0].sharing.mode"]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_mps_on_mig_is_rejected(cloud):
    found = problems(raw_config(cloud, [pool(cloud, {"mode": "mps", "replicas": 4, "migProfile": "all-1g.10gb"})]))
    assert "MPS does not work on MIG devices" in found["gpuPools[0].sharing.migProfile"]


@pytest.mark.parametrize("cloud", CLOUDS)
@pytest.mark.parametrize("mode", ["mps", "time-slicing"])
def test_replicas_below_two(cloud, mode):
    found = problems(raw_config(cloud, [pool(cloud, {"mode": mode, "replicas": 1}, mig_capable=False)]))
    assert found["gpuPools[0].sharing.replicas"] == "must be >= 2; got 1"


def test_gke_driver_owners_cannot_be_mixed():
    raw = raw_config("gcp", [
        {"name": "cos", "instanceType": "g2-standard-24", "maxNodes": 2},
        {"name": "ubuntu", "instanceType": "a3-highgpu-8g", "maxNodes": 2, "driver": "operator"},
    ])
    found = problems(raw)
    assert list(found) == ["gpuPools[1].driver"]
    assert "cannot be mixed with managed pools on GKE" in found["gpuPools[1].driver"]
    assert "/home/kubernetes/bin/nvidia" in found["gpuPools[1].driver"]
    for p in raw["gpuPools"]:
        p["driver"] = "operator"
    assert validate(raw).gpu_pools[0].driver == "operator"


@pytest.mark.parametrize("cloud", ["azure", "oci"])
def test_mixed_driver_owners_are_allowed_where_paths_agree(cloud):
    raw = raw_config(cloud, [
        {"name": "managed", "instanceType": CLOUDS[cloud][2][0], "maxNodes": 2},
        {"name": "owned", "instanceType": CLOUDS[cloud][2][0], "maxNodes": 2, "driver": "operator"},
    ])
    assert {p.driver for p in validate(raw).gpu_pools} == {"managed", "operator"}


@pytest.mark.parametrize("layout", ["all-balanced", "all-1g.10gb"])
def test_one_layout_name_cannot_mean_two_layouts(layout):
    # all-balanced and all-1g.10gb differ between an A100-40GB (p4d) and an A100-80GB (p4de).
    raw = raw_config("aws", [
        {"name": "a100-40", "instanceType": "p4d.24xlarge", "maxNodes": 1,
         "sharing": {"mode": "mig", "migProfile": layout}},
        {"name": "a100-80", "instanceType": "p4de.24xlarge", "maxNodes": 1,
         "sharing": {"mode": "mig", "migProfile": layout}},
    ])
    message = problems(raw)["gpuPools[1].sharing.migProfile"]
    assert message.startswith(f"{layout} is {{") and "on A100-80GB but" in message
    assert "pool 'a100-40' (A100-40GB)" in message and "explicit {<profile>: count}" in message
    fixed = copy.deepcopy(raw)
    fixed["gpuPools"][1]["sharing"]["migProfile"] = {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert validate(fixed).gpu_pools[1].sharing.mig_config_name == "custom-1g.10gbx2-2g.20gbx1-3g.40gbx1"


def test_pool_partitioned_layouts_may_share_a_name():
    # On GKE each pool's partition size is its own node pool field: no cluster-wide name to collide on.
    raw = raw_config("gcp", [
        {"name": "a100-40", "instanceType": "a2-highgpu-8g", "maxNodes": 1,
         "sharing": {"mode": "mig", "migProfile": "all-1g.10gb"}},
        {"name": "a100-80", "instanceType": "a2-ultragpu-8g", "maxNodes": 1,
         "sharing": {"mode": "mig", "migProfile": "all-1g.10gb"}},
    ])
    assert len(validate(raw).gpu_pools) == 2


def test_media_extension_layout_names_are_label_safe():
    config = validate(raw_config("aws", [pool("aws", {"mode": "mig", "migProfile": "all-1g.10gb+me"})]))
    assert config.gpu_pools[0].sharing.mig_config_name == "all-1g.10gb.me"
