"""GKE queued provisioning (`gpuPools[].provisioning: queued`, Dynamic Workload Scheduler): config checks, the
node pool's DWS settings, and Kueue's ProvisioningRequest admission check on exactly the queued flavors, validated
against the Kueue v0.19.2 CRDs in ../shared/upstream (AdmissionCheck, ClusterQueue)."""
from __future__ import annotations

import copy

import jsonschema
import pytest

from components.config import ConfigError, validate
from components.scheduling.kueue import provisioning
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import read_stack_config

from support.paths import ROOT
from support.stacks import by_name, crd_errors, whole

ADMISSION_CHECKS = "kueue/crds/kueue.x-k8s.io_admissionchecks.yaml"
CLUSTER_QUEUES = "kueue/crds/kueue.x-k8s.io_clusterqueues.yaml"
# ../shared/upstream has no ProvisioningRequestConfig CRD: the fields we set, as Kueue's v1beta2 API types name them
# (ProvisioningRequestConfigSpec: provisioningClassName required, at most 253 characters; managedResources a list
# of at most 100 resource names). A structural check only; the real CRD is not available offline.
PROVISIONING_CONFIG_SPEC = {
    "type": "object", "required": ["provisioningClassName"], "additionalProperties": False, "properties": {
        "provisioningClassName": {"type": "string", "maxLength": 253,
                                  "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"},
        "managedResources": {"type": "array", "maxItems": 100, "items": {"type": "string"}},
        "parameters": {"type": "object", "additionalProperties": {"type": "string"}}}}


def stack(name):
    return read_stack_config(ROOT / "stacks" / f"Pulumi.{name}.yaml")


def queued_pools(name="gcp-prod", pool=0, **changes):
    pools = copy.deepcopy(stack(name)["gpu-platform:gpuPools"])
    pools[pool].update({"provisioning": "queued", **changes})
    return pools


@pytest.fixture(scope="module")
def plan():
    return plan_stack("gcp-prod", config_overrides={"gpu-platform:gpuPools": queued_pools()})


def errors(name, **overrides):
    raw = {k.split(":", 1)[1]: v for k, v in {**stack(name), **overrides}.items() if k.startswith("gpu-platform:")}
    with pytest.raises(ConfigError) as info:
        validate(raw)
    return {p.path: p.message for p in info.value.problems}


# --- config -----------------------------------------------------------------------------------------------------

def test_default_is_the_autoscaler_and_no_admission_check():
    plan = plan_stack("gcp-prod")
    assert by_name(plan, "AdmissionCheck") == {} and by_name(plan, "ProvisioningRequestConfig") == {}
    assert all("admissionChecksStrategy" not in cq["spec"] for cq in by_name(plan, "ClusterQueue").values())
    h100 = next(r for r in plan.of_type("gcp:container/nodePool:NodePool") if "h100" in r.name)
    assert "queuedProvisioning" not in h100.inputs and h100.inputs["management"]["autoRepair"] is True


@pytest.mark.parametrize("change, message", [
    ({"capacityType": "spot"}, "queued needs capacityType: on-demand"),
    ({"minNodes": 1}, "minNodes must be 0"),
    ({"provisioning": "flex"}, "allowed: autoscaler, queued"),
])
def test_queued_pool_field_errors(change, message):
    found = errors("gcp-prod", **{"gpu-platform:gpuPools": queued_pools(**change)})
    assert message in found["gpuPools[0].provisioning"]


def test_queued_needs_kueue():
    found = errors("gcp-dev", **{"gpu-platform:gpuPools": queued_pools("gcp-dev")})
    assert "needs scheduler.kind: kueue; got 'volcano'" in found["gpuPools[0].provisioning"]


@pytest.mark.parametrize("name", ["aws-dev", "azure-prod", "oci-prod"])
def test_queued_is_gke_only(name):
    found = errors(name, **{"gpu-platform:gpuPools": queued_pools(name)})
    assert "queued provisioning is not available on" in found["gpuPools[0].provisioning"]


# --- plan -------------------------------------------------------------------------------------------------------

def test_queued_node_pool_has_the_dws_settings(plan):
    pools = {r.inputs["name"]: r.inputs for r in plan.of_type("gcp:container/nodePool:NodePool")}
    queued = pools["h100-train"]
    assert queued["queuedProvisioning"] == {"enabled": True}
    assert queued["nodeConfig"]["flexStart"] is True
    assert queued["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert queued["management"]["autoRepair"] is False
    assert whole(queued["autoscaling"]) == {"totalMinNodeCount": 0, "totalMaxNodeCount": 4, "locationPolicy": "ANY"}
    assert whole(queued["initialNodeCount"]) == 0
    # The GPU taint stays: queued nodes are GPU nodes like any other.
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in queued["nodeConfig"]["taints"]
    other = pools["a100-infer"]
    assert "queuedProvisioning" not in other and other["management"]["autoRepair"] is True


def test_kueue_objects(plan):
    (check,) = by_name(plan, "AdmissionCheck").values()
    assert check["spec"] == {"controllerName": "kueue.x-k8s.io/provisioning-request", "parameters": {
        "apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": provisioning.PROVISIONING_CONFIG}}
    (config,) = by_name(plan, "ProvisioningRequestConfig").values()
    assert config["spec"] == {"provisioningClassName": "queued-provisioning.gke.io",
                              "managedResources": ["nvidia.com/gpu"]}
    assert config["metadata"]["name"] == check["spec"]["parameters"]["name"]


def test_cluster_queues_run_the_check_on_queued_flavors_only(plan):
    queues = by_name(plan, "ClusterQueue")
    for name, cq in queues.items():
        flavors = {f["name"] for g in cq["spec"]["resourceGroups"] for f in g["flavors"]}
        strategy = cq["spec"].get("admissionChecksStrategy")
        if "h100-train" in flavors:
            assert strategy == {"admissionChecks": [{"name": "queued-provisioning", "onFlavors": ["h100-train"]}]}
        else:
            assert strategy is None, name
        assert "admissionChecks" not in cq["spec"]  # the CRD forbids both together


def test_objects_match_the_upstream_crds(plan):
    for obj in by_name(plan, "AdmissionCheck").values():
        assert crd_errors(ADMISSION_CHECKS, "v1beta2", obj) == []
    for obj in by_name(plan, "ClusterQueue").values():
        assert crd_errors(CLUSTER_QUEUES, "v1beta2", obj) == []
    for obj in by_name(plan, "ProvisioningRequestConfig").values():
        jsonschema.validate(whole(obj["spec"]), PROVISIONING_CONFIG_SPEC)


def test_the_crd_check_would_catch_a_v1beta1_spelling(plan):
    obj = copy.deepcopy(next(iter(by_name(plan, "AdmissionCheck").values())))
    obj["spec"]["retryDelayMinutes"] = 15  # v1beta1 only
    assert crd_errors(ADMISSION_CHECKS, "v1beta2", obj)
