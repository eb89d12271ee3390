"""`plan --diff OLD.json` and `validate --against OLD.json`: what a change adds, changes, replaces and deletes."""
from __future__ import annotations

import json

import pytest

from gpu_platform.cli import main

from support.paths import ROOT

STACK_FILE = (ROOT / "stacks" / "Pulumi.aws-prod.yaml").read_text()


@pytest.fixture(scope="module")
def old_plan(tmp_path_factory):
    path = tmp_path_factory.mktemp("plans") / "old.json"
    assert main(["plan", "aws-prod", "--format", "json", "--out", str(path)]) == 0
    return path


def edited_stack(tmp_path, old: str, new: str):
    assert old in STACK_FILE
    path = tmp_path / "Pulumi.aws-prod.yaml"
    path.write_text(STACK_FILE.replace(old, new, 1))
    return str(path)


def test_no_change_diffs_empty_and_exits_0(old_plan, capsys):
    assert main(["plan", "aws-prod", "--diff", str(old_plan)]) == 0
    assert capsys.readouterr().out.splitlines() == ["diff: 0 to add, 0 to change, 0 to replace, 0 to delete"]


def test_an_instance_type_change_is_flagged_as_a_pool_replacement_and_exits_1(old_plan, tmp_path, capsys):
    stack = edited_stack(tmp_path, "instanceType: p5.48xlarge", "instanceType: p5e.48xlarge")
    assert main(["plan", "aws-prod", "--file", stack, "--diff", str(old_plan)]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    # The group, and its 11 Auto Scaling group tags (a tag is bound to one group: autoscalingGroupName forces new).
    assert lines[0] == "diff: 0 to add, 0 to change, 12 to replace, 0 to delete"
    assert ("  +- aws:eks/nodeGroup:NodeGroup  ml-prod-h100-train-nodegroup  REPLACE: instanceTypes  "
            "[pool h100-train]  [protected]") in lines
    assert ("  +- aws:autoscaling/tag:Tag  ml-prod-h100-train-asg-taint/nvidia.com/gpu  REPLACE: autoscalingGroupName "
            "follows replaced ml-prod-h100-train-nodegroup  [pool h100-train]") in lines
    assert "warning: replaces pool h100-train: aws:eks/nodeGroup:NodeGroup ml-prod-h100-train-nodegroup " \
           "(instanceTypes), and 11 resources that follow it; its nodes and running pods go" in lines
    # Only the node group is protected; the tags are not, so no warning names them.
    protected = [line for line in lines if "is protected" in line]
    assert len(protected) == 1 and "ml-prod-h100-train-nodegroup is protected: `pulumi up` refuses to replace it " \
        "until `pulumi state unprotect" in protected[0]


def test_added_and_changed_resources_are_listed_with_what_changed(old_plan, tmp_path, capsys):
    stack = edited_stack(tmp_path, "      maxNodes: 4\n      capacityType: on-demand",
                         "      maxNodes: 6\n      capacityType: on-demand\n      labels: {tier: gold}")
    assert main(["plan", "aws-prod", "--file", stack, "--diff", str(old_plan)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert ("  ~  aws:eks/nodeGroup:NodeGroup  ml-prod-h100-train-nodegroup  (labels.tier, scalingConfig.maxSize)  "
            "[pool h100-train]") in lines
    assert "  +  aws:autoscaling/tag:Tag  ml-prod-h100-train-asg-label/tier  [pool h100-train]" in lines


def test_diff_as_json(old_plan, tmp_path, capsys):
    stack = edited_stack(tmp_path, "instanceType: p5.48xlarge", "instanceType: p5e.48xlarge")
    assert main(["plan", "aws-prod", "--file", stack, "--diff", str(old_plan), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"add", "change", "replace", "delete", "warnings"}
    assert {"urn": "urn:pulumi:aws-prod::gpu-platform::gpu-platform:cluster:GpuNodePool$aws:eks/nodeGroup:NodeGroup::"
                   "ml-prod-h100-train-nodegroup",
            "paths": ["instanceTypes"], "pool": "h100-train", "protected": True} in data["replace"]
    assert len(data["replace"]) == 12 and data["add"] == data["delete"] == []
    assert data["warnings"][0].startswith("replaces pool h100-train: ")


def test_validate_against_a_previous_plan_warns_replaces_pool(old_plan, tmp_path, capsys):
    stack = edited_stack(tmp_path, "instanceType: g6.12xlarge", "instanceType: g6.24xlarge")
    assert main(["validate", "aws-prod", "--file", stack, "--against", str(old_plan)]) == 0
    captured = capsys.readouterr()
    assert "warning: replaces pool l4-notebooks: aws:eks/nodeGroup:NodeGroup ml-prod-l4-notebooks-nodegroup " \
           "(instanceTypes)" in captured.err
    assert captured.out.rstrip().endswith("valid (aws, production, 3 GPU pool(s), 3 team(s))")


@pytest.mark.parametrize("content, message", [
    (None, "cannot read"),
    ("not json", "is not JSON"),
    ('{"resources": []}', "is not a plan: expected the output of `gpu-platform plan --format json`"),
    ('{"project": "gpu-platform", "stack": "aws-prod", "resources": [{"urn": "x"}]}',
     "resources[0] is not a planned resource"),
    ('{"project": "gpu-platform", "stack": "gcp-prod", "resources": []}',
     "is a plan of gpu-platform/gcp-prod, not of gpu-platform/aws-prod"),
])
@pytest.mark.parametrize("command", [["plan", "aws-prod", "--diff"], ["validate", "aws-prod", "--against"]])
def test_a_bad_previous_plan_exits_2_with_a_clear_message(tmp_path, capsys, content, message, command):
    path = tmp_path / "old.json"
    if content is not None:
        path.write_text(content)
    assert main([*command, str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err and "Traceback" not in err


def test_adding_an_aks_zone_is_named_as_replacing_every_agent_pool(tmp_path, capsys):
    # Azure refuses to change an existing agent pool's availabilityZones: the change replaces the pool.
    azure = (ROOT / "stacks" / "Pulumi.azure-prod.yaml").read_text()
    assert "      vnetCidr: 10.50.0.0/16\n" in azure
    one, two = tmp_path / "Pulumi.azure-prod.yaml", tmp_path / "two" / "Pulumi.azure-prod.yaml"
    two.parent.mkdir()
    one.write_text(azure.replace("      vnetCidr: 10.50.0.0/16\n", "      vnetCidr: 10.50.0.0/16\n      zones: [\"1\"]\n"))
    two.write_text(azure.replace("      vnetCidr: 10.50.0.0/16\n",
                                 "      vnetCidr: 10.50.0.0/16\n      zones: [\"1\", \"2\"]\n"))
    old = tmp_path / "old.json"
    assert main(["plan", "azure-prod", "--file", str(one), "--format", "json", "--out", str(old)]) == 0
    capsys.readouterr()
    assert main(["plan", "azure-prod", "--file", str(two), "--diff", str(old)]) == 1
    lines = capsys.readouterr().out.splitlines()
    for pool in ("a100-infer", "a10-spot"):
        assert any(line.startswith("  +- azure-native:containerservice:AgentPool  ") and f"[pool {pool}]" in line
                   and "REPLACE: availabilityZones" in line for line in lines), lines
    # The system pool is an agentPoolProfiles entry of the cluster: updated in place by the provider, refused by Azure.
    assert any(line.startswith("  ~  azure-native:containerservice:ManagedCluster  ")
               and "REFUSED BY THE CLOUD: agentPoolProfiles[system].availabilityZones" in line for line in lines), lines
    assert main(["validate", "azure-prod", "--file", str(two), "--against", str(old)]) == 0
    err = capsys.readouterr().err  # warnings go to standard error
    assert "warning: replaces pool a10-spot: azure-native:containerservice:AgentPool" in err
    assert "(availabilityZones)" in err
    assert "ml-prod-aks-aks: the cloud refuses to change agentPoolProfiles[system].availabilityZones in place, so " \
           "`pulumi up` fails" in err
