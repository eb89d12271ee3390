"""The GPU-pool admission policy's CEL, evaluated with cel-python on pods a hostile tenant would send: which GPU
pools a pod can reach by toleration, node name, nodeSelector and node affinity, and NVIDIA device variables.
tests/cluster/test_cluster_tenancy.py sends the same shapes to a real API server."""
from __future__ import annotations

import copy

import pytest

from components.config.labels import POOL_LABEL
from components.tenancy.pool_admission import POLICY

from support.cel_policy import refused
from support.plans import shared_plan
from support.stacks import by_name


TEAM, OWN, OTHER = "applied", "h100-train", "l4-notebooks"  # aws-prod: applied has h100-train and a100-infer
OCI_TEAM = "genai"  # oci-prod: has h100-train too


@pytest.fixture(scope="module")
def specs() -> dict[str, dict]:
    return {stack: by_name(shared_plan(stack), "ValidatingAdmissionPolicy")[POLICY]["spec"]
            for stack in ("aws-prod", "oci-prod")}


def refusals(spec: dict, pod: dict, namespace_team: str = TEAM, old: dict | None = None) -> list[str]:
    """The messages of the validations `pod` fails on CREATE (or on UPDATE from `old`), variables evaluated in order
    as the API server does."""
    return refused(spec, {"object": pod, "oldObject": old,
                          "request": {"operation": "UPDATE" if old else "CREATE"},
                          "namespaceObject": {"metadata": {"labels": {"gpu-platform.io/team": namespace_team}}}})


def cpu_pod(**spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": TEAM},
            "spec": {"containers": [{"name": "main", "image": "registry.example/app:1",
                                     "resources": {"limits": {"cpu": "1"}}}], **spec}}


ALL = [{"operator": "Exists"}]
GPU_EXISTS = [{"key": "nvidia.com/gpu", "operator": "Exists"}]


def affinity(*terms: list[dict]) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]}}}


def on_pool(operator: str, *values: str) -> dict:
    return {"key": POOL_LABEL, "operator": operator, **({"values": list(values)} if values else {})}


REACH_CASES = {
    # name: (pod spec fields, refused by the reach rule)
    "no-toleration-anywhere": ({}, False),
    "tolerate-everything-no-selector": ({"tolerations": ALL}, True),
    "tolerate-gpu-key-exists": ({"tolerations": GPU_EXISTS}, True),
    "tolerate-gpu-key-equal-present": ({"tolerations": [{"key": "nvidia.com/gpu", "value": "present"}]}, True),
    "tolerate-everything-noschedule": ({"tolerations": [{"operator": "Exists", "effect": "NoSchedule"}]}, True),
    "tolerate-gpu-other-value": ({"tolerations": [{"key": "nvidia.com/gpu", "value": "absent"}]}, False),
    "tolerate-gpu-noexecute-only": ({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                      "effect": "NoExecute"}]}, False),
    "tolerate-other-key": ({"tolerations": [{"key": "dedicated", "operator": "Exists"}]}, False),
    "tolerate-everything-own-pool": ({"tolerations": ALL, "nodeSelector": {POOL_LABEL: OWN}}, False),
    "tolerate-everything-other-pool": ({"tolerations": ALL, "nodeSelector": {POOL_LABEL: OTHER}}, True),
    "tolerate-everything-non-gpu-pool": ({"tolerations": ALL, "nodeSelector": {POOL_LABEL: "system"}}, False),
    "tolerate-everything-other-label-only": ({"tolerations": ALL, "nodeSelector": {"zone": "a"}}, True),
    "affinity-in-own": ({"tolerations": ALL, "affinity": affinity([on_pool("In", OWN, "a100-infer")])}, False),
    "affinity-in-own-and-other": ({"tolerations": ALL, "affinity": affinity([on_pool("In", OWN, OTHER)])}, True),
    "affinity-terms-or": ({"tolerations": ALL, "affinity": affinity([on_pool("In", OWN)], [on_pool("In", OTHER)])},
                          True),
    "affinity-terms-and": ({"tolerations": ALL, "affinity": affinity([on_pool("In", OWN, OTHER),
                                                                      on_pool("NotIn", OTHER)])}, False),
    "affinity-notin-every-other": ({"tolerations": ALL, "affinity": affinity([on_pool("NotIn", OTHER)])}, False),
    "affinity-notin-own": ({"tolerations": ALL, "affinity": affinity([on_pool("NotIn", OWN)])}, True),
    "affinity-does-not-exist": ({"tolerations": ALL, "affinity": affinity([on_pool("DoesNotExist")])}, False),
    "affinity-exists": ({"tolerations": ALL, "affinity": affinity([on_pool("Exists")])}, True),
    "affinity-gt": ({"tolerations": ALL, "affinity": affinity([on_pool("Gt", "1")])}, True),
    "affinity-other-label": ({"tolerations": ALL, "affinity": affinity([{"key": "zone", "operator": "In",
                                                                         "values": ["a"]}])}, True),
    "affinity-match-fields": ({"tolerations": ALL, "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["gpu-node-1"]}]}]}}}}, True),
    "nodeselector-own-and-affinity-other": ({"tolerations": ALL, "nodeSelector": {POOL_LABEL: OWN},
                                             "affinity": affinity([on_pool("In", OTHER)])}, False),
    "node-name-no-selector": ({"nodeName": "gpu-node-1"}, True),
    "node-name-own-pool": ({"nodeName": "gpu-node-1", "nodeSelector": {POOL_LABEL: OWN}}, False),
    "gated-tolerating": ({"tolerations": ALL, "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}, False),
}


@pytest.mark.parametrize("case", REACH_CASES)
def test_a_pod_that_can_land_on_gpu_nodes_selects_only_its_teams_pools(case, specs):
    fields, refused = REACH_CASES[case]
    messages = refusals(specs["aws-prod"], cpu_pod(**copy.deepcopy(fields)))
    assert any("tolerating the GPU taint" in m for m in messages) is refused, messages
    assert len(messages) == int(refused), messages  # no other rule answers these pods


@pytest.mark.parametrize("selector, refused", [({}, True), ({POOL_LABEL: OWN}, False)])
def test_a_toleration_added_to_a_pending_pod_is_checked_again(selector, refused, specs):
    """nodeSelector and affinity of an ungated pod are immutable, tolerations are not: a pending pod could gain one
    and be scheduled onto another team's GPU nodes."""
    old = cpu_pod(nodeSelector=selector)
    new = cpu_pod(nodeSelector=selector, tolerations=ALL)
    assert bool(refusals(specs["aws-prod"], new, old=old)) is refused
    # An update leaving tolerations alone is not re-checked (label updates of pods older than the policy).
    legacy = cpu_pod(tolerations=ALL)
    assert not refusals(specs["aws-prod"], legacy, old=legacy)


def test_a_team_without_pools_may_not_tolerate_into_any(specs):
    assert refusals(specs["aws-prod"], cpu_pod(tolerations=ALL, nodeSelector={POOL_LABEL: OWN}), "unknown-team")


def with_env(pod: dict, where: str = "containers", **container) -> dict:
    pod = copy.deepcopy(pod)
    if where == "containers":
        pod["spec"]["containers"][0].update(container)
    else:
        pod["spec"][where] = [{"name": "extra", "image": "registry.example/app:1", **container}]
    return pod


GPU_POD = cpu_pod(nodeSelector={POOL_LABEL: OWN})
GPU_POD["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
ENV_CASES = {
    # name: (pod, refused on aws-prod (image toolkit), refused on oci-prod (operator toolkit, volume mounts))
    "visible-devices": (with_env(GPU_POD, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]), True, True),
    "visible-devices-cpu-pod": (with_env(cpu_pod(), env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0"}]),
                                True, True),
    "visible-devices-from-a-secret": (with_env(GPU_POD, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {
        "secretKeyRef": {"name": "s", "key": "k"}}}]), True, True),
    "imex-channels": (with_env(GPU_POD, env=[{"name": "NVIDIA_IMEX_CHANNELS", "value": "all"}]), True, True),
    "init-container": (with_env(GPU_POD, "initContainers", env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]),
                       True, True),
    "ephemeral-container": (with_env(GPU_POD, "ephemeralContainers",
                                     env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]), True, True),
    "driver-capabilities": (with_env(GPU_POD, env=[{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,video"},
                                                   {"name": "NVIDIA_REQUIRE_CUDA", "value": "cuda>=12.4"}]),
                            False, False),
    "env-from-no-prefix": (with_env(GPU_POD, envFrom=[{"configMapRef": {"name": "c"}}]), True, False),
    "env-from-prefix-starting-nvidia": (with_env(GPU_POD, envFrom=[{"prefix": "NV", "configMapRef": {"name": "c"}}]),
                                        True, False),
    "env-from-nvidia-prefix": (with_env(GPU_POD, envFrom=[{"prefix": "NVIDIA_X", "secretRef": {"name": "c"}}]),
                               True, False),
    "env-from-safe-prefix": (with_env(GPU_POD, envFrom=[{"prefix": "APP_", "configMapRef": {"name": "c"}}]),
                             False, False),
    "env-from-cpu-pod": (with_env(cpu_pod(), envFrom=[{"configMapRef": {"name": "c"}}]), False, False),
    "env-from-tolerating-pod": (with_env(cpu_pod(tolerations=ALL, nodeSelector={POOL_LABEL: OWN}),
                                         envFrom=[{"configMapRef": {"name": "c"}}]), True, False),
}


@pytest.mark.parametrize("case", ENV_CASES)
def test_team_pods_set_no_nvidia_device_variables(case, specs):
    pod, on_aws, on_oci = ENV_CASES[case]
    for stack, refused in (("aws-prod", on_aws), ("oci-prod", on_oci)):
        messages = refusals(specs[stack], pod, TEAM if stack == "aws-prod" else OCI_TEAM)
        assert any("NVIDIA_* device variables" in m for m in messages) is refused, (stack, messages)
        assert len(messages) == int(refused), (stack, messages)


def gpu_pod(**spec) -> dict:
    pod = cpu_pod(**spec)
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    return pod


def gpu_in_an_init_container(**spec) -> dict:
    pod = cpu_pod(**spec)
    pod["spec"]["initContainers"] = [{"name": "warmup", "image": "registry.example/app:1",
                                      "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
    return pod


@pytest.mark.parametrize("pod, refused", [
    (gpu_pod(nodeSelector={POOL_LABEL: OWN}), False),
    (gpu_pod(nodeSelector={POOL_LABEL: OTHER}), True),
    (gpu_pod(), True),
    (gpu_in_an_init_container(nodeSelector={POOL_LABEL: OTHER}), True),
    (gpu_in_an_init_container(nodeSelector={POOL_LABEL: OWN}), False),
], ids=["own-pool", "another-teams-pool", "no-pool", "init-container-another-teams-pool", "init-container-own-pool"])
def test_an_ungated_gpu_pod_selects_one_of_its_teams_pools(pod, refused, specs):
    """What the real API server cannot show alone: there the queue gate refuses these ungated pods too, and names
    itself first as often as the pool policy does."""
    assert bool(refusals(specs["aws-prod"], pod)) == refused, refusals(specs["aws-prod"], pod)
