"""teams[].podSecurity: fabric-sidecar on GKE GPUDirect: the planned ValidatingAdmissionPolicy's CEL, evaluated with
cel-python on a good pod (baseline plus the exact TCPX sidecar, built by components/clouds/gcp/facts.py) and on one
changed field per refused case; the namespace labels and binding; GPU014 on gcp-prod without an exemption and one
changed field per failing case. tests/cluster/test_cluster_fabric_sidecar.py runs the same cases on a real API
server."""
from __future__ import annotations

import copy

import pytest

from components.config import ConfigError
from components.tenancy.fabric_baseline import POLICY_LABEL, policy_name
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import read_stack_config

from policy_fixtures import ids, run
from support.cel_policy import refused
from support.fabric import REFUSED, TCPX, good_pod
from support.paths import ROOT
from support.plans import shared_plan
from support.policy import base_plan, only_rule_fails
from support.stacks import by_name, stack_config


POLICY = policy_name("research")
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"


@pytest.fixture(scope="module")
def plan():
    return shared_plan("gcp-prod")


@pytest.fixture(scope="module")
def spec(plan) -> dict:
    return by_name(plan, "ValidatingAdmissionPolicy")[POLICY]["spec"]


def refusals(spec: dict, pod: dict) -> list[str]:
    """The messages of the validations `pod` fails, evaluating each variable in order as the API server does."""
    return refused(spec, {"object": pod, "request": {"operation": "CREATE"}})


def test_the_platforms_own_gpudirect_pod_is_admitted(spec):
    assert refusals(spec, good_pod()) == []


@pytest.mark.parametrize("change, control", REFUSED, ids=[c[0].__name__ for c in REFUSED])
def test_one_changed_field_is_refused_by_its_control(spec, change, control):
    pod = good_pod()
    change(pod)
    failed = refusals(spec, pod)
    assert failed and all(m.startswith("Pod Security baseline (") for m in failed)
    assert any(m.startswith(f"Pod Security baseline ({control})") for m in failed), failed


def test_the_policy_reads_the_one_sidecar_source(spec):
    table = next(v["expression"] for v in spec["variables"] if v["name"] == "sidecars")
    sidecar = TCPX.pod_sidecar
    assert sidecar.image in table and all(c in table for c in sidecar.capabilities)
    assert '"/sys"' in table and '"/proc/sys"' in table


def test_namespace_says_privileged_only_with_the_policy_named_and_bound_to_it(plan):
    labels = {r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"]
              for r in plan.of_type("kubernetes:core/v1:Namespace")}
    assert labels["research"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert labels["research"][POLICY_LABEL] == POLICY
    assert labels["search"]["pod-security.kubernetes.io/enforce"] == "baseline" and POLICY_LABEL not in labels["search"]
    binding = by_name(plan, "ValidatingAdmissionPolicyBinding")[POLICY]["spec"]
    assert binding == {"policyName": POLICY, "validationActions": ["Deny"], "matchResources": {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "research"}}}}


def test_fabric_sidecar_without_a_gpudirect_pool_is_refused_at_its_path():
    teams = copy.deepcopy(stack_config("gcp-prod")["gpu-platform:teams"])
    teams[1]["podSecurity"] = "fabric-sidecar"
    teams[1]["quotas"] = {"a100-infer": 8}
    with pytest.raises(ConfigError) as info:
        plan_stack("gcp-prod", config_overrides={"gpu-platform:teams": teams})
    found = {p.path: p.message for p in info.value.problems}
    assert "gpudirect-tcpx" in found["teams[1].podSecurity"] and "allowed: baseline" in found["teams[1].podSecurity"]


def test_fabric_sidecar_on_a_cloud_without_sidecar_fabrics_names_none_of_another_clouds():
    teams = copy.deepcopy(stack_config("aws-prod")["gpu-platform:teams"])
    teams[0]["podSecurity"] = "fabric-sidecar"
    with pytest.raises(ConfigError) as info:
        plan_stack("aws-prod", config_overrides={"gpu-platform:teams": teams})
    message = {p.path: p.message for p in info.value.problems}["teams[0].podSecurity"]
    assert "no fabric on EKS runs one" in message and "gpudirect" not in message and "allowed: baseline" in message


# --- GPU014 -----------------------------------------------------------------------------------------------------

def policy_entry(plan: dict, type_: str) -> dict:
    return next(r for r in plan["resources"] if r["type"] == type_ and r["inputs"]["metadata"]["name"] == POLICY)


def without_policy(plan):
    plan["resources"].remove(policy_entry(plan, VAP))


def binding_for_another_namespace(plan):
    policy_entry(plan, BINDING)["inputs"]["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] = {
        "kubernetes.io/metadata.name": "search"}


def binding_only_warns(plan):
    policy_entry(plan, BINDING)["inputs"]["spec"]["validationActions"] = ["Warn"]


def policy_fails_open(plan):
    policy_entry(plan, VAP)["inputs"]["spec"]["failurePolicy"] = "Ignore"


def policy_skips_host_namespaces(plan):
    spec = policy_entry(plan, VAP)["inputs"]["spec"]
    spec["validations"] = [v for v in spec["validations"] if "host namespaces" not in v["message"]]


FAILING = [
    (without_policy, "which this stack does not create"),
    (binding_for_another_namespace, "no binding"),
    (binding_only_warns, "no binding"),
    (policy_fails_open, "failurePolicy: Fail"),
    (policy_skips_host_namespaces, "does not check hostNetwork, hostPID, hostIPC"),
]


def test_gcp_prod_passes_gpu014_without_an_exemption():
    assert "gpu-platform:policy" not in read_stack_config(ROOT / "stacks" / "Pulumi.gcp-prod.yaml")
    assert ids(run(base_plan("gcp-prod"), "GPU014", environment=None)) == []


@pytest.mark.parametrize("change, expected", FAILING, ids=[c[0].__name__ for c in FAILING])
def test_one_changed_field_fails_gpu014(change, expected):
    plan = base_plan("gcp-prod")
    change(plan)
    only_rule_fails(plan, "GPU014", expected)
