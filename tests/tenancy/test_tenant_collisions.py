"""Hostile tenants, round 3: team settings that would collide with the platform or with another team are refused at
their dotted path, all at once: built-in groups, platform namespaces, GPU Operator node labels, and host access on a
shared pool. Every Namespace the example plans create is a team's or a reserved one, so a new one cannot slip by."""
from __future__ import annotations

import pytest

from components.config.parse import parse
from components.config.teams import RESERVED_NAMESPACES

from support.paths import STACKS
from support.stacks import planned, stack_config

NAMESPACE = "kubernetes:core/v1:Namespace"
RELEASE = "kubernetes:helm.sh/v3:Release"


def problems(raw: dict) -> dict[str, str]:
    """Each path's messages, joined: a name can be refused for two reasons."""
    _, found = parse(raw)
    joined: dict[str, str] = {}
    for p in found.errors:
        joined[p.path] = "\n".join(filter(None, (joined.get(p.path), p.message)))
    return joined


@pytest.mark.parametrize("group", ["system:authenticated", "system:serviceaccounts", "system:masters",
                                   "system:serviceaccounts:kube-system"])
def test_a_built_in_group_never_gets_a_teams_edit(raw, group):
    raw["teams"][1]["groups"] = ["serving-oncall", group]
    message = problems(raw)["teams[1].groups[1]"]
    assert f"{group!r} is a Kubernetes built-in group" in message and "never system:*" in message


@pytest.mark.parametrize("name", ["network-operator", "gpu-operator", "kueue-system", "volcano-system", "monitoring",
                                  "kube-system", "tigera-operator", "gpu-platform-system", "jobset-system",
                                  "kubeflow-system", "lws-system", "kuberay-system", "default", "kube-anything"])
def test_a_team_never_takes_a_platform_namespace(raw, name):
    raw["teams"][0]["name"] = name
    message = problems(raw)["teams[0].name"]
    assert f"{name!r} is a reserved namespace" in message and "every kube-* name" in message


@pytest.mark.parametrize("key, setter", [
    ("nvidia.com/device-plugin.config", "gpuPools[].sharing (mode, replicas)"),
    ("nvidia.com/gpu.replicas", "gpuPools[].sharing (mode, replicas)"),
    ("nvidia.com/mig.config", "gpuPools[].sharing (mode: mig, migProfile)"),
    ("nvidia.com/gpu.deploy.device-plugin", "gpuPools[].driver"),
    ("nvidia.com/gpu.deploy.driver", "gpuPools[].driver"),
    ("nvidia.com/gpu.workload.config", "the GPU Operator and GPU feature discovery own nvidia.com/*"),
    ("k8s.amazonaws.com/accelerator", "Cluster Autoscaler"),
])
def test_pool_labels_the_gpu_operator_acts_on_are_refused(raw, key, setter):
    raw["gpuPools"][0]["labels"] = {"team": "research", key: "whatever"}
    found = problems(raw)
    assert list(found) == [f"gpuPools[0].labels.{key}"], found
    assert setter in found[f"gpuPools[0].labels.{key}"]


def test_the_gke_device_plugin_switch_is_the_drivers_to_set(raw):
    raw.update(cloud="gcp", environment="development",
               cluster={"name": "ml", "region": "us-central1", "gcp": {"project": "acme", "zones": ["us-central1-a"]}})
    raw["gpuPools"] = [{"name": "l4", "instanceType": "g2-standard-24", "maxNodes": 2,
                        "labels": {"gke-no-default-nvidia-gpu-device-plugin": "true"}}]
    raw["teams"] = [{"name": "research", "quotas": {"l4": 2}}]
    assert "gpuPools[].driver sets it" in problems(raw)["gpuPools[0].labels.gke-no-default-nvidia-gpu-device-plugin"]


@pytest.mark.parametrize("level", ["privileged", "fabric-sidecar"])
def test_host_access_only_on_a_pool_the_team_has_alone(raw, level):
    raw["teams"][0].update(podSecurity=level, quotas={"h100-train": 16, "a100-infer": 8})
    raw["teams"][1]["quotas"] = {"a100-infer": 0, "h100-train": 8}  # a 0 entry is still borrowing reach
    message = problems(raw)["teams[0].podSecurity"]
    assert f"{level} gives this team's pods access to the host" in message
    assert "pool 'h100-train' with serving; pool 'a100-infer' with serving" in message
    assert "allowed here: baseline, restricted" in message


def test_privileged_alone_on_its_pools_stays_a_warning(raw):
    raw["teams"][0]["podSecurity"] = "privileged"
    _, found = parse(raw)
    assert found.errors == [] and any(w.path == "teams[0].podSecurity" for w in found.warnings)


def test_every_problem_is_reported_at_once(raw):
    raw["teams"][0].update(name="network-operator", groups=["system:masters"], podSecurity="privileged",
                           quotas={"a100-infer": 8})
    raw["gpuPools"][1]["labels"] = {"nvidia.com/mig.config": "all-disabled"}
    assert {"teams[0].name", "teams[0].groups[0]", "teams[0].podSecurity",
            "gpuPools[1].labels.nvidia.com/mig.config"} <= set(problems(raw))


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("kind", ["kueue", "volcano"])
def test_every_platform_namespace_in_a_plan_is_reserved(stack, kind):
    """Namespaces the plan creates, and those Helm releases run in, are teams' or reserved: a platform component
    with a namespace the config does not know would let a team of that name share it."""
    plan = planned(stack, kind)
    teams = {t["name"] for t in stack_config(stack)["gpu-platform:teams"]}
    prometheus = ((stack_config(stack).get("gpu-platform:observability") or {}).get("prometheus") or {})
    reserved = {*RESERVED_NAMESPACES, prometheus.get("namespace", "monitoring")}
    created = {r.inputs["metadata"]["name"] for r in plan.of_type(NAMESPACE)} - teams
    released = {r.inputs.get("namespace") for r in plan.of_type(RELEASE)}
    assert created and released
    assert (created | released) - reserved == set()
