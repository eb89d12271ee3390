"""Job frameworks: the scheduler.frameworks rules, the pinned operator releases, Kueue integrations matching what is
installed, and the example team manifests in docs/examples checked against the plan they target."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from components.config import validate
from components.config.model import GPU_TAINT
from components.scheduling import framework_catalog, frameworks, topology
from components.scheduling.kueue import component as kueue
from components.system_pool import SYSTEM_TOLERATION
from gpu_platform.engine import plan_stack

from support.paths import ROOT, upstream
from support.plans import shared_plan
from support.scheduling import with_frameworks
from support.validation import problems
from support.stacks import by_name, ours, stack_config

ALL = ["jobset", "trainer", "leaderworkerset", "kuberay"]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.yaml"))
BASE = {
    "cloud": "aws", "environment": "development", "cluster": {"name": "ml", "region": "us-east-1"},
    "gpuPools": [{"name": "h100-train", "instanceType": "p5.48xlarge", "maxNodes": 4}],
    "teams": [{"name": "research", "quotas": {"h100-train": 16}}],
}


@pytest.fixture(scope="module")
def full():
    """aws-prod with every framework and its h100-train pool topology-aware: what docs/examples target."""
    pools = copy.deepcopy(stack_config("aws-prod")["gpu-platform:gpuPools"])
    next(p for p in pools if p["name"] == "h100-train")["topology"] = True
    return plan_stack("aws-prod", config_overrides={**with_frameworks(ALL), "gpu-platform:gpuPools": pools})


def releases(plan) -> dict[str, dict]:
    return {r.inputs["name"]: r for r in ours(plan) if r.type == "kubernetes:helm.sh/v3:Release"}


def manager_conf(plan) -> dict:
    values = releases(plan)["kueue"].inputs["values"]
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


# --- config ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scheduler, path, fragments", [
    ({"frameworks": ["mpi-operator"]}, "scheduler.frameworks[0]",
     ["not a job framework", "allowed: jobset, trainer, leaderworkerset, kuberay"]),
    ({"frameworks": ["jobset", "jobset"]}, "scheduler.frameworks[1]", ["listed twice"]),
    ({"frameworks": ["trainer"]}, "scheduler.frameworks", ["trainer runs its jobs on jobset", "add jobset"]),
    ({"kind": "volcano", "frameworks": ["kuberay"]}, "scheduler.frameworks", ["Kueue integrations", "volcano"]),
    ({"frameworks": "jobset"}, "scheduler.frameworks", ["list of strings"]),
])
def test_each_framework_rule_is_reported_at_its_path(scheduler, path, fragments):
    raw = copy.deepcopy(BASE)
    raw["scheduler"] = scheduler
    found = problems(raw)
    assert path in found, found
    assert all(f in found[path] for f in fragments), found[path]


def test_frameworks_default_to_none_and_install_in_catalog_order():
    assert validate(copy.deepcopy(BASE)).scheduler.frameworks == ()
    raw = copy.deepcopy(BASE)
    raw["scheduler"] = {"frameworks": ["kuberay", "trainer", "jobset"]}
    assert validate(raw).scheduler.frameworks == ("jobset", "trainer", "kuberay")


# --- releases and Kueue integrations ------------------------------------------------------------------------------

def test_no_frameworks_no_operator_and_only_built_in_integrations():
    plan = shared_plan("aws-prod")
    assert not any(r.type == frameworks.Frameworks.TYPE for r in plan.resources)
    assert manager_conf(plan)["integrations"]["frameworks"] == list(framework_catalog.BUILT_IN)


def test_each_framework_is_a_pinned_release_in_its_own_namespace(full):
    found = releases(full)
    expected = {
        "jobset": ("oci://registry.k8s.io/jobset/charts/jobset", "0.12.0", "jobset-system", None),
        "kubeflow-trainer": ("oci://ghcr.io/kubeflow/charts/kubeflow-trainer", "2.2.1", "kubeflow-system", None),
        "lws": ("oci://registry.k8s.io/lws/charts/lws", "0.9.0", "lws-system", None),
        "kuberay-operator": ("kuberay-operator", "1.6.2", "kuberay-system", "https://ray-project.github.io/kuberay-helm/"),
    }
    for name, (chart, version, namespace, repo) in expected.items():
        inputs = found[name].inputs
        assert (inputs["chart"], inputs["version"], inputs["namespace"]) == (chart, version, namespace), name
        assert (inputs.get("repositoryOpts") or {}).get("repo") == repo, name
        assert re.fullmatch(r"\d+\.\d+\.\d+", inputs["version"]), name  # pinned, no ranges


def test_trainer_uses_the_platform_jobset_and_ships_the_torch_runtime(full):
    trainer = releases(full)["kubeflow-trainer"]
    assert trainer.inputs["values"]["jobset"] == {"install": False}
    assert trainer.inputs["values"]["runtimes"]["torchDistributed"] == {"enabled": True}
    jobset = releases(full)["jobset"]
    assert jobset.urn in trainer.options["dependsOn"]


def _tolerations(value):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "tolerations":
                yield from item
            else:
                yield from _tolerations(item)
    elif isinstance(value, list):
        for item in value:
            yield from _tolerations(item)


def test_operator_pods_tolerate_only_the_system_pool_so_they_stay_off_gpu_nodes(full):
    for name in ("jobset", "kubeflow-trainer", "lws", "kuberay-operator"):
        assert list(_tolerations(releases(full)[name].inputs.get("values") or {})) == [SYSTEM_TOLERATION], name


def test_kueue_integrations_are_exactly_what_is_installed(full):
    conf = manager_conf(full)["integrations"]["frameworks"]
    assert conf == [*framework_catalog.BUILT_IN, "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob",
                    "leaderworkerset.x-k8s.io/leaderworkerset", "ray.io/rayjob", "ray.io/raycluster",
                    "ray.io/rayservice"]
    only_ray = manager_conf(plan_stack("aws-prod", config_overrides=with_frameworks(["kuberay"])))
    assert "jobset.x-k8s.io/jobset" not in only_ray["integrations"]["frameworks"]


def test_every_integration_name_is_one_the_kueue_0_19_config_api_lists():
    text = upstream("kueue/config/kueue-config.v1beta2.md").read_text()
    documented = set(re.findall(r"<li>&quot;([\w./-]+)&quot;</li>", text))
    names = {*framework_catalog.BUILT_IN, *(i for f in framework_catalog.FRAMEWORKS.values() for i in f.integrations)}
    assert names <= documented, names - documented


# --- example team manifests --------------------------------------------------------------------------------------

KIND_FRAMEWORK = {"JobSet": "jobset", "TrainJob": "trainer", "LeaderWorkerSet": "leaderworkerset", "RayJob": "kuberay"}
API_VERSIONS = {"JobSet": "jobset.x-k8s.io/v1alpha2", "TrainJob": "trainer.kubeflow.org/v1alpha1",
                "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1", "RayJob": "ray.io/v1"}


def pod_specs(doc: dict) -> list[dict]:
    """Every pod spec of a framework object, found by walking to each `containers` list."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            if isinstance(value.get("containers"), list):
                found.append(value)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
    walk(doc["spec"])
    return found


def annotations(doc: dict) -> list[str]:
    found = []

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key.startswith("kueue.x-k8s.io/podset-") and key.endswith("-topology"):
                    found.append(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
    walk(doc)
    return found


def gpu_limit(spec: dict) -> int:
    return sum(int((c.get("resources") or {}).get("limits", {}).get("nvidia.com/gpu", 0)) for c in spec["containers"])


def test_there_is_one_example_per_framework():
    kinds = {yaml.safe_load(p.read_text())["kind"] for p in EXAMPLES}
    assert kinds == set(KIND_FRAMEWORK)
    assert set(KIND_FRAMEWORK.values()) == set(framework_catalog.FRAMEWORKS)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_is_queued_asks_for_gpus_and_matches_the_plan(path: Path, full):
    doc = yaml.safe_load(path.read_text())
    kind = doc["kind"]
    assert doc["apiVersion"] == API_VERSIONS[kind]
    framework = framework_catalog.FRAMEWORKS[KIND_FRAMEWORK[kind]]
    assert set(framework.integrations) & set(manager_conf(full)["integrations"]["frameworks"])
    # queued in the team's LocalQueue, in a team namespace of the stack
    assert doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == kueue.LOCAL_QUEUE
    assert doc["metadata"]["namespace"] in by_name(full, "Namespace")
    assert f"{doc['metadata']['namespace']}/{kueue.LOCAL_QUEUE}" in by_name(full, "LocalQueue")
    # GPUs requested as whole nvidia.com/gpu, no more per pod than a node of the TAS pool has
    per_node = next(r.inputs["advertised"]["nvidia.com/gpu"] for r in full.resources
                    if r.type == "gpu-platform:cluster:GpuNodePool" and r.inputs["poolName"] == "h100-train")
    specs = pod_specs(doc)
    gpu_specs = [s for s in specs if gpu_limit(s)]
    if kind == "TrainJob":
        assert int(doc["spec"]["trainer"]["resourcesPerNode"]["limits"]["nvidia.com/gpu"]) == per_node
    else:
        assert gpu_specs and all(gpu_limit(s) <= per_node for s in gpu_specs)
    # tolerations, where written, match the pool's taint; pods without GPUs tolerate nothing GPU
    for spec in specs:
        for toleration in spec.get("tolerations", []):
            assert toleration["key"] == GPU_TAINT.key and toleration["effect"] == GPU_TAINT.effect
            assert toleration["operator"] == "Exists" or toleration.get("value") == GPU_TAINT.value
        if not gpu_limit(spec):
            assert not spec.get("tolerations"), "a CPU-only pod must stay off GPU nodes"
    # a topology request names a level of the Topology the pool's flavor points at
    flavor = by_name(full, "ResourceFlavor")["h100-train"]["spec"]
    levels = [lv["nodeLabel"] for lv in by_name(full, "Topology")[flavor["topologyName"]]["spec"]["levels"]]
    assert all(level in levels for level in annotations(doc)), annotations(doc)
    if kind != "TrainJob":
        assert annotations(doc), "a multi-node example asks for one block"
    assert topology.HOSTNAME in levels
