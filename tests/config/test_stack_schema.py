"""The JSON Schema of `Pulumi.<stack>.yaml` (`gpu-platform schema`, checked in as stacks/stack.schema.json): current
with the config parser, valid JSON Schema, accepting every example stack and refusing what the parser refuses."""
from __future__ import annotations

import copy
import json

import jsonschema
import pytest
import yaml

from gpu_platform.cli import main
from gpu_platform.commands.schema import render

from support.paths import ROOT

CHECKED_IN = ROOT / "stacks" / "stack.schema.json"
STACKS = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(CHECKED_IN.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_checked_in_schema_is_current():
    assert CHECKED_IN.read_text() == render() + "\n", "regenerate: gpu-platform schema --out stacks/stack.schema.json"


def test_the_command_prints_it(capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(CHECKED_IN.read_text())


@pytest.mark.parametrize("stack", STACKS, ids=lambda p: p.stem)
def test_every_example_stack_is_valid_against_it(validator, stack):
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(
        yaml.safe_load(stack.read_text()))]
    assert errors == []


def test_it_knows_every_clouds_block_and_its_choices(validator):
    config = validator.schema["properties"]["config"]["properties"]
    cluster = config["gpu-platform:cluster"]["properties"]
    assert {"aws", "azure", "gcp", "oci"} <= set(cluster)
    assert "zones" in cluster["gcp"]["properties"] and "compartmentId" in cluster["oci"]["required"]
    pool = config["gpu-platform:gpuPools"]["items"]
    assert set(pool["properties"]["fabric"]["enum"]) >= {"none", "auto", "efa", "infiniband", "rdma"}
    assert set(pool["properties"]["sharing"]["properties"]["mode"]["enum"]) == {"none", "mig", "mps", "time-slicing"}
    assert {"name", "instanceType", "maxNodes"} <= set(pool["required"])
    assert "migProfile" not in pool["properties"]["sharing"].get("required", [])  # only with mode: mig


@pytest.mark.parametrize("change, where", [
    (lambda c: c["gpu-platform:gpuPools"][0].update(maxNode=2), "gpu-platform:gpuPools.0"),  # a mistyped key
    (lambda c: c["gpu-platform:gpuPools"][0].update(capacityType="preemptible"), "gpu-platform:gpuPools.0.capacityType"),
    (lambda c: c["gpu-platform:gpuPools"][0].update(maxNodes="4"), "gpu-platform:gpuPools.0.maxNodes"),
    (lambda c: c.update({"gpu-platform:gpuPool": []}), ""),  # a key of ours that does not exist
    (lambda c: c["gpu-platform:cluster"]["aws"].update(vpcid="vpc-1"), "gpu-platform:cluster.aws"),
    (lambda c: c.pop("gpu-platform:teams"), ""),
])
def test_it_refuses_what_the_parser_refuses(validator, change, where):
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.aws-prod.yaml").read_text())
    changed = copy.deepcopy(stack)
    change(changed["config"])
    errors = list(validator.iter_errors(changed))
    assert errors and any(".".join(map(str, e.absolute_path)) == f"config.{where}".rstrip(".") for e in errors), \
        [(list(e.absolute_path), e.message) for e in errors]
