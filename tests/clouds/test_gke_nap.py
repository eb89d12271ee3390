"""GKE node auto-provisioning (`cluster.gcp.nodeAutoProvisioning`): off by default; when on, the cluster's
`cluster_autoscaling` bounds NAP by cpu, memory and each GPU type, with limits that leave the declared pools room."""
from __future__ import annotations

import copy

import pytest

from components.config import ConfigError
from components.provisioning.nap.checks import nap_totals
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import read_stack_config

from support.paths import ROOT
from support.stacks import whole

ENOUGH = {"maxCpu": 2000, "maxMemoryGb": 20000,
          "maxGpus": {"nvidia-h100-80gb": 64, "nvidia-a100-80gb": 16, "nvidia-l4": 16}}


def cluster(nap):
    raw = copy.deepcopy(read_stack_config(ROOT / "stacks" / "Pulumi.gcp-prod.yaml")["gpu-platform:cluster"])
    raw["gcp"]["nodeAutoProvisioning"] = nap
    return {"gpu-platform:cluster": raw}


def gke(plan):
    (resource,) = plan.of_type("gcp:container/cluster:Cluster")
    return resource.inputs


def problems(nap):
    with pytest.raises(ConfigError) as info:
        plan_stack("gcp-prod", config_overrides=cluster(nap))
    return {p.path: p.message for p in info.value.problems}


def test_off_by_default():
    assert "clusterAutoscaling" not in gke(plan_stack("gcp-prod"))


def test_limits_and_defaults():
    nap = whole(gke(plan_stack("gcp-prod", config_overrides=cluster(ENOUGH)))["clusterAutoscaling"])
    assert nap["enabled"] is True
    assert nap["resourceLimits"] == [
        {"resourceType": "cpu", "maximum": 2000}, {"resourceType": "memory", "maximum": 20000},
        {"resourceType": "nvidia-a100-80gb", "maximum": 16}, {"resourceType": "nvidia-h100-80gb", "maximum": 64},
        {"resourceType": "nvidia-l4", "maximum": 16}]
    defaults = nap["autoProvisioningDefaults"]
    assert defaults["serviceAccount"].startswith("ml-prod-gke-nodes@")
    assert defaults["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
    assert defaults["management"] == {"autoRepair": True, "autoUpgrade": True}


def test_totals_of_the_declared_pools():
    from components.config import validate
    raw = {k.split(":", 1)[1]: v for k, v in read_stack_config(ROOT / "stacks" / "Pulumi.gcp-prod.yaml").items()
           if k.startswith("gpu-platform:")}
    totals = nap_totals(list(validate(raw).gpu_pools))
    # a3-highgpu-8g x4 (8 H100, 208 vCPUs), a2-ultragpu-8g x2 (8 A100-80GB, 96 vCPUs), g2-standard-24 x8 (2 L4, 24 vCPUs)
    assert totals["nvidia-h100-80gb"] == 32 and totals["nvidia-a100-80gb"] == 16 and totals["nvidia-l4"] == 16
    assert totals["cpu"] == 4 * 208 + 2 * 96 + 8 * 24


@pytest.mark.parametrize("change, path, message", [
    ({"maxGpus": {**ENOUGH["maxGpus"], "nvidia-h100-80gb": 8}}, "cluster.gcp.nodeAutoProvisioning.maxGpus.nvidia-h100-80gb",
     "must be at least 32"),
    ({"maxGpus": {**ENOUGH["maxGpus"], "nvidia-h100": 8}}, "cluster.gcp.nodeAutoProvisioning.maxGpus.nvidia-h100",
     "not a GKE accelerator type"),
    ({"maxCpu": 100}, "cluster.gcp.nodeAutoProvisioning.maxCpu", "must be at least 1216"),
    ({"maxMemoryGb": None}, "cluster.gcp.nodeAutoProvisioning", "maxMemoryGb is required"),
    ({"gpus": {}}, "cluster.gcp.nodeAutoProvisioning", "unknown keys gpus"),
])
def test_bad_limits_name_the_field(change, path, message):
    nap = {k: v for k, v in {**ENOUGH, **change}.items() if v is not None}
    assert message in problems(nap)[path]


def test_other_clouds_refuse_the_key():
    raw = copy.deepcopy(read_stack_config(ROOT / "stacks" / "Pulumi.aws-dev.yaml")["gpu-platform:cluster"])
    raw["aws"] = {"nodeAutoProvisioning": ENOUGH}
    with pytest.raises(ConfigError) as info:
        plan_stack("aws-dev", config_overrides={"gpu-platform:cluster": raw})
    assert any(p.path == "cluster.aws.nodeAutoProvisioning" for p in info.value.problems)
