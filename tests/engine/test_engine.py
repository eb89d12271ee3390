"""The offline engine: plan shape, determinism, strict invokes, CLI exit codes and secrets."""
from __future__ import annotations

import json
import subprocess
import sys

import pulumi
import pytest

from gpu_platform.engine import plan_stack
from gpu_platform.engine.mocks import StrictMocks, UnmockedInvokeError
from gpu_platform.engine.plan import read_stack_config

from support.engine import ADOPTED
from support.paths import ROOT, STACKS


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_platform.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def adopted_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("stacks") / "Pulumi.adopted.yaml"
    path.write_text(ADOPTED)
    return path


@pytest.mark.parametrize("stack", STACKS)
def test_every_example_stack_plans(stack):
    plan = plan_stack(stack)
    data = plan.to_json()
    assert set(data) == {"project", "stack", "resources", "outputs"}
    assert data["project"] == "gpu-platform" and data["stack"] == stack
    for resource in data["resources"]:
        assert set(resource) == {"urn", "type", "name", "parent", "custom", "inputs", "options"}
        assert set(resource["options"]) == {"protect", "ignoreChanges", "dependsOn"}
        assert resource["urn"].startswith(f"urn:pulumi:{stack}::gpu-platform::")
    assert data["outputs"]["kubeconfig"] == "[secret]"
    urns = {r["urn"] for r in data["resources"]}
    assert all(r["parent"] in urns or r["parent"].endswith(f"::gpu-platform-{stack}") for r in data["resources"])


def test_plan_is_deterministic_and_parent_first():
    runs = [plan_stack("aws-prod").to_json() for _ in range(3)]
    assert all(json.dumps(run, sort_keys=True) == json.dumps(runs[0], sort_keys=True) for run in runs)
    seen = set()
    for resource in runs[0]["resources"]:
        assert resource["parent"] in seen or resource["parent"].endswith("::gpu-platform-aws-prod")
        seen.add(resource["urn"])


def test_adopted_cluster_creates_no_cloud_resources(adopted_file):
    plan = plan_stack(file=adopted_file)
    assert not [r for r in plan.resources if r.type.split(":")[0] in ("aws", "azure-native", "gcp", "oci")]
    provider = plan.of_type("pulumi:providers:kubernetes")[0]
    assert provider.inputs["kubeconfig"] == "[secret]"
    assert "ciphertext" not in json.dumps(plan.to_json())


def test_unmocked_invoke_fails_loudly():
    with pytest.raises(UnmockedInvokeError, match="aws:ec2/getAmi:getAmi has no offline answer"):
        StrictMocks().call(pulumi.runtime.MockCallArgs("aws:ec2/getAmi:getAmi", {}, ""))


def test_project_config_defaults_apply_as_the_cli_does(adopted_file):
    assert read_stack_config(adopted_file)["gpu-platform:environment"] == "development"


def test_cli_plan_json_to_file(adopted_file, tmp_path):
    out = tmp_path / "plan.json"
    result = cli("plan", "--file", str(adopted_file), "--format", "json", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["stack"] == "adopted"


def test_cli_validation_errors_exit_2_without_traceback(tmp_path):
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(ADOPTED.replace("p5.48xlarge", "p5.48xlarg").replace("research", "Research"))
    for command in ("validate", "plan"):
        result = cli(command, "--file", str(bad))
        assert result.returncode == 2
        assert "Traceback" not in result.stderr
        assert "gpuPools[0].instanceType: unknown aws instance type 'p5.48xlarg'" in result.stderr
        assert "teams[0].name: 'Research' is not a DNS-1123 label" in result.stderr


def test_cli_missing_stack_file_exits_2(tmp_path):
    result = cli("validate", "--file", str(tmp_path / "Pulumi.nope.yaml"))
    assert result.returncode == 2 and "cannot read" in result.stderr and "Traceback" not in result.stderr


def test_cli_catalog_lists_one_cloud():
    result = cli("catalog", "--cloud", "gcp")
    assert result.returncode == 0
    assert "a3-highgpu-8g" in result.stdout and "p5.48xlarge" not in result.stdout


def test_cli_usage_errors_exit_2_without_traceback_under_python_m():
    result = cli("check", "--plan", "/nonexistent/plan.json")
    assert result.returncode == 2
    assert "cannot read /nonexistent/plan.json" in result.stderr and "Traceback" not in result.stderr


def test_pulumi_up_fails_before_creating_anything_on_bad_config(adopted_file, monkeypatch):
    """The program itself (as `pulumi up` runs it) refuses a bad config with the same messages, constructing nothing."""
    from gpu_platform.engine.plan import run_program

    config = read_stack_config(adopted_file)
    config["gpu-platform:gpuPools"] = [{"name": "h100-train", "instanceType": "p5.48xlarg", "maxNodes": 2}]
    constructed = []
    original = pulumi.Resource.__init__

    def construct(self, t, *args, **kwargs):
        constructed.append(t)
        return original(self, t, *args, **kwargs)

    monkeypatch.setattr(pulumi.Resource, "__init__", construct)
    with pytest.raises(pulumi.RunError, match=r"gpuPools\[0\]\.instanceType: unknown aws instance type 'p5.48xlarg'"):
        run_program("adopted", config)
    assert constructed == ["pulumi:pulumi:Stack"]  # only the root stack the runtime itself creates
