"""The GPU layer in offline plans of every example stack: created clusters and the same stacks adopted."""
from __future__ import annotations

import importlib.util
import json

import kubernetes_validate
import pytest
import yaml

from components.clouds import package
from components.config.labels import pool_labels
from components.clouds import profile
from components.clouds.facts import DEFAULT_KUBERNETES_VERSION
from components.config import split_namespace, validate
from components.gpu.dcgm import metrics_csv
from components.gpu.layer import gpu_resources, gpu_resources_at_max
from components.gpu.mig import mig_parted_config
from components.config.operands import node_labels, operator_mig, operator_shared
from components.gpu.operator import operator_values
from gpu_platform.engine.plan import read_stack_config, stack_path

from support.paths import STACKS
from support.plans import shared_plan

OPERATOR = "gpu-platform:gpu:GpuOperator"
RELEASE = "kubernetes:helm.sh/v3:Release"


def stack_config(stack: str) -> dict:
    return read_stack_config(stack_path(stack, None)[1])


def validated(stack: str, overrides: dict | None = None):
    raw, _ = split_namespace({**stack_config(stack), **(overrides or {})})
    return validate(raw)


def adopt(stack: str) -> dict:
    cluster = stack_config(stack)["gpu-platform:cluster"]
    return {"gpu-platform:cluster": {**cluster, "existingKubeconfig": "apiVersion: v1\nkind: Config\n"}}


def cloud_module_present(stack: str) -> bool:
    module = f"{package(stack_config(stack)['gpu-platform:cloud']).__name__}.cluster"
    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module")
def plans():
    """(stack, kind) -> (plan, validated config): each example stack planned once as written and once adopted."""
    result = {}
    for stack in STACKS:
        result[(stack, "adopted")] = (shared_plan(stack, adopt(stack)), validated(stack, adopt(stack)))
        if cloud_module_present(stack):
            result[(stack, "created")] = (shared_plan(stack), validated(stack))
    return result


CASES = [(stack, kind) for stack in STACKS for kind in ("created", "adopted")]


def get(plans, stack, kind):
    if (stack, kind) not in plans:
        pytest.skip(f"{stack}: its cloud's cluster component is not in this checkout yet")
    return plans[(stack, kind)]


def children(plan, component):
    return {r.type.rsplit(":", 1)[-1] + ":" + r.name: r for r in plan.resources if r.parent == component.urn}


def operator_release(plan):
    (release,) = [r for r in plan.of_type(RELEASE) if r.inputs.get("chart") == "gpu-operator"]
    return release


def k8s_object(resource) -> dict:
    obj = json.loads(json.dumps(resource.inputs))
    kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)
    return obj


@pytest.mark.parametrize("stack, kind", CASES)
def test_operator_release_and_its_objects(plans, stack, kind):
    plan, config = get(plans, stack, kind)
    (operator,) = plan.of_type(OPERATOR)
    objects = children(plan, operator)
    release = objects.pop("Release:gpu-operator-release")
    namespace_resource = objects.pop("Namespace:gpu-operator-namespace")
    namespace = k8s_object(namespace_resource)
    assert namespace["metadata"] == {"name": "gpu-operator",
                                     "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}

    inputs = release.inputs
    assert (inputs["chart"], inputs["version"], inputs["namespace"]) == ("gpu-operator", "v26.7.0", "gpu-operator")
    assert inputs["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert inputs["skipAwait"] is False
    assert inputs["values"] == operator_values(config, profile(config.cloud))

    # Everything the release names exists first: ConfigMaps, the GKE quota, the namespace.
    assert set(release.options["dependsOn"]) == {r.urn for r in objects.values()} | {namespace_resource.urn}
    for resource in objects.values():
        assert k8s_object(resource)["metadata"]["namespace"] == "gpu-operator"

    prof = profile(config.cloud)
    mig = objects.pop("ConfigMap:gpu-operator-mig-config", None)
    assert (mig is not None) is any(operator_mig(prof, p) for p in config.gpu_pools)
    if mig is not None:
        assert mig.inputs["metadata"]["name"] == inputs["values"]["migManager"]["config"]["name"]
        assert mig.inputs["data"] == {"config.yaml": mig_parted_config(config)}
    dcgm = objects.pop("ConfigMap:gpu-operator-dcgm-metrics")
    assert dcgm.inputs["data"] == {"dcgm-metrics.csv": metrics_csv()}
    quota = objects.pop("ResourceQuota:gpu-operator-critical-pods", None)
    assert (quota is not None) is (config.cloud == "gcp")
    if quota is not None:
        (selector,) = quota.inputs["spec"]["scopeSelector"]["matchExpressions"]
        assert selector == {"scopeName": "PriorityClass", "operator": "In",
                            "values": ["system-node-critical", "system-cluster-critical"]}
    assert not objects


@pytest.mark.parametrize("stack, kind", CASES)
def test_sharing_objects(plans, stack, kind):
    plan, config = get(plans, stack, kind)
    prof = profile(config.cloud)
    release = operator_release(plan)
    entries = release.inputs["values"]["devicePlugin"].get("config", {}).get("data", {})
    for pool in config.gpu_pools:
        if operator_shared(prof, pool):
            sharing = yaml.safe_load(entries[pool.name])["sharing"]
            key = "timeSlicing" if pool.sharing.mode == "time-slicing" else "mps"
            assert sharing[key]["resources"] == [{"name": "nvidia.com/gpu", "replicas": pool.sharing.replicas}]
        else:
            assert pool.name not in entries
    if kind == "created":
        # The pool side: operator-selected layouts and entries as node labels, or the cloud's own pool fields.
        pools = {r.inputs["poolName"]: r for r in plan.of_type("gpu-platform:cluster:GpuNodePool")}
        for pool in config.gpu_pools:
            labels = pools[pool.name].inputs["labels"]
            assert node_labels(config, pool).items() <= labels.items()
            cloud_side = json.dumps([r.inputs for r in plan.resources if r.parent == pools[pool.name].urn])
            if pool.sharing.mode == "mig" and prof.mig_via == "pool":
                assert prof.mig_pool_field in cloud_side
            if pool.sharing.mode in ("mps", "time-slicing") and prof.sharing_via == "pool":
                assert "gpuSharingConfig" in cloud_side
            assert ("nvidia.com/mig.config" in cloud_side) is ("nvidia.com/mig.config" in labels)


@pytest.mark.parametrize("stack, kind", CASES)
def test_exports(plans, stack, kind):
    plan, config = get(plans, stack, kind)
    assert plan.outputs["gpuResources"] == gpu_resources(config)
    assert plan.outputs["gpuResourcesAtMaxNodes"] == gpu_resources_at_max(config)
    assert plan.outputs["gpuNodeLabels"] == {p.name: pool_labels(config, p) for p in config.gpu_pools}


def test_example_stacks_export_what_quotas_count():
    assert gpu_resources(validated("aws-prod")) == {
        "h100-train": {"nvidia.com/gpu": 8}, "a100-infer": {"nvidia.com/gpu": 56},
        "l4-notebooks": {"nvidia.com/gpu": 16}}
    assert gpu_resources(validated("oci-prod"))["a100-infer"] == {
        "nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8}
    # AKS and GKE partition through the pool API; each slice is still one nvidia.com/gpu (single strategy).
    assert gpu_resources(validated("azure-prod"))["a100-infer"] == {"nvidia.com/gpu": 28}
    assert gpu_resources(validated("gcp-prod"))["a100-infer"] == {"nvidia.com/gpu": 56}


@pytest.mark.parametrize("stack", STACKS)
def test_adopted_and_created_install_the_same_operator(plans, stack):
    created = get(plans, stack, "created")[0]
    adopted = get(plans, stack, "adopted")[0]
    assert operator_release(created).inputs == operator_release(adopted).inputs


def test_every_operator_object_uses_the_clusters_provider():
    from gpu_platform.engine.plan import run_program

    registrations, _ = run_program("aws-dev", {**stack_config("aws-dev"), **adopt("aws-dev")})
    (provider,) = [r.urn for r in registrations if r.type == "pulumi:providers:kubernetes"]
    (operator,) = [r for r in registrations if r.type == OPERATOR]
    owned = [r for r in registrations if r.parent == operator.urn]
    assert sorted(r.name for r in owned) == ["gpu-operator-dcgm-metrics", "gpu-operator-namespace",
                                             "gpu-operator-release"]  # aws-dev: no MIG pool, not GKE
    assert all(r.provider.startswith(provider + "::") for r in owned)
