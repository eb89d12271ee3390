"""The offline engine checks every cloud resource's inputs against the pinned provider SDK's input classes, so a typo
fails the plan (exit 2, URN and path named) instead of `pulumi up`."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pulumi
import pytest

from gpu_platform import cli
from gpu_platform.engine import plan, plan_stack
from gpu_platform.engine.plan import run_program
from gpu_platform.engine.schema import ProviderSchemaError, check_resource, resource_schema

from support.paths import ROOT, STACKS

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def _node_group(**overrides):
    import pulumi_aws.eks as eks

    args = dict(cluster_name="c", node_role_arn="arn:aws:iam::0:role/r", subnet_ids=["subnet-1"],
                scaling_config={"desired_size": 1, "max_size": 2, "min_size": 0},
                taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}])
    args.update(overrides)
    eks.NodeGroup("gpu", **args)


def _problems(program) -> list[str]:
    with pytest.raises(ProviderSchemaError) as err:
        run_program("schema", {}, program=program)
    return [f"{p.path}: {p.message}" for p in err.value.problems]


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_plans_clean_and_every_typed_resource_is_checked(stack):
    resources = [r for r in plan_stack(stack).resources if r.custom]
    unchecked = {r.type for r in resources if resource_schema(r.type) is None}
    # Only Kubernetes custom resources (CRDs: validated against their schemas elsewhere) have no SDK input class.
    assert all(t.startswith("kubernetes:") and "." in t.split(":")[1].split("/")[0] for t in unchecked), unchecked
    assert len(resources) - sum(r.type in unchecked for r in resources) >= 30


def test_a_correct_resource_passes():
    registrations, _ = run_program("schema", {}, program=_node_group)
    assert [r.type for r in registrations if r.custom] == [NODE_GROUP]


def test_a_misspelled_nested_input_names_the_path_and_the_allowed_names():
    found = _problems(lambda: _node_group(taints=[{"key": "k", "valeu": "v", "effect": "NO_SCHEDULE"}]))
    assert found == ["taints[0].valeu: is not an input of pulumi_aws NodeGroupTaintArgs; allowed: effect, key, value"]


def test_a_missing_required_nested_input_fails():
    found = _problems(lambda: _node_group(taints=[{"key": "k", "value": "v"}]))
    assert found == ["taints[0].effect: is required by pulumi_aws NodeGroupTaintArgs"]


def test_a_map_where_the_provider_wants_a_list_fails():
    found = _problems(lambda: _node_group(taints={"key": "k", "effect": "NO_SCHEDULE"}))
    assert found == ["taints: must be a list of an object (pulumi_aws NodeGroupTaintArgs); got an object"]


def test_a_list_where_the_provider_wants_a_map_fails_as_cleanly(tmp_path):
    """The SDK refuses this one while serializing, before the engine sees the registration. Run in a child process:
    an SDK failure in an asyncio task can leave CPython 3.11's recursion counter off, which breaks pytest's later
    assertion rewriting in this process."""
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent("""\
        import pulumi_aws.eks as eks
        from gpu_platform.engine.plan import run_program
        from gpu_platform.engine.schema import ProviderSchemaError
        try:
            run_program("schema", {}, program=lambda: eks.NodeGroup(
                "gpu", cluster_name="c", node_role_arn="r", subnet_ids=["s"], labels=["gpu=true"],
                scaling_config={"desired_size": 1, "max_size": 2, "min_size": 0}))
        except ProviderSchemaError as err:
            [problem] = err.problems
            print(problem.urn, problem.path, problem.message, sep="|")
        # The failed run's leftover tasks must not fail the next plan in this process.
        registrations, _ = run_program("schema", {}, program=lambda: eks.NodeGroup(
            "gpu", cluster_name="c", node_role_arn="r", subnet_ids=["s"],
            scaling_config={"desired_size": 1, "max_size": 2, "min_size": 0}))
        print(len(registrations))
        """))
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    report, next_plan = out.stdout.strip().splitlines()
    assert next_plan == "1", out.stderr[-2000:]
    urn, path, message = report.split("|")
    assert (urn, path) == (f"{NODE_GROUP}::gpu", "labels")
    assert message.startswith("the provider SDK refuses it: Unexpected type. Expected 'list' got 'typing.Mapping")


def test_a_string_where_a_list_is_wanted_fails():
    found = _problems(lambda: _node_group(instance_types="p5.48xlarge"))
    assert found == ["instanceTypes: must be a list of a string; got a string ('p5.48xlarge')"]


def test_a_number_where_a_string_is_wanted_and_a_fraction_for_an_integer_fail():
    found = _problems(lambda: _node_group(
        scaling_config={"desired_size": 1.5, "max_size": 2, "min_size": 0}, subnet_ids=[7]))
    assert found == ["scalingConfig.desiredSize: must be an integer; got a number (1.5)",
                     "subnetIds[0]: must be a string; got a number (7)"]


def test_a_misspelled_top_level_input_fails():
    inputs = {"clusterName": "c", "nodeRoleArn": "r", "subnetIds": ["s"],
              "scalingConfig": {"desiredSize": 1, "maxSize": 1, "minSize": 0}, "nodeTaints": []}
    [problem] = check_resource(NODE_GROUP, "urn:x", inputs, custom=True)
    assert problem.path == "nodeTaints" and "allowed: amiType, capacityType" in problem.message


def test_a_missing_required_top_level_input_fails():
    problems = check_resource(NODE_GROUP, "urn:x", {"clusterName": "c", "nodeRoleArn": "r", "subnetIds": ["s"]}, True)
    assert [str(p) for p in problems] == ["urn:x: scalingConfig: is required by pulumi_aws NodeGroupArgs"]


def test_unknowns_secrets_and_references_are_accepted_where_any_value_could_be():
    secret = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": "c"}
    unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
    # "[secret]": how a graph replayed from plan JSON (bench/bare.py) carries a secret, here a whole map.
    inputs = {"clusterName": secret, "nodeRoleArn": unknown, "subnetIds": unknown, "labels": "[secret]",
              "scalingConfig": {"desiredSize": 1.0, "maxSize": unknown, "minSize": 0}}
    assert check_resource(NODE_GROUP, "urn:x", inputs, custom=True) == []


def test_kubernetes_core_objects_are_checked_but_custom_resources_are_not():
    def program():
        import pulumi_kubernetes.apiextensions as apiextensions
        import pulumi_kubernetes.core.v1 as core

        core.ConfigMap("cm", metadata={"nmae": "x", "namespace": "default"}, data={"k": "v"})
        apiextensions.CustomResource("cq", api_version="kueue.x-k8s.io/v1beta2", kind="ClusterQueue",
                                     metadata={"name": "q"}, spec={"anything": {"goes": [1]}})

    [found] = _problems(program)
    assert found.startswith("metadata.nmae: is not an input of pulumi_kubernetes ObjectMetaArgs; allowed: annotations")


def test_azure_resources_use_their_init_args_not_the_nested_type_of_the_same_name():
    import pulumi_azure_native.network.virtual_network  # noqa: F401 - registers the token

    schema = resource_schema("azure-native:network:VirtualNetwork")
    assert {"resourceGroupName", "virtualNetworkName"} <= set(schema.fields)
    assert "resourceGroupName" in schema.required


def test_components_and_unregistered_tokens_are_not_checked():
    assert check_resource("gpu-platform:aws:EksCluster", "urn:x", {"anything": 1}, custom=False) == []
    assert check_resource("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "urn:x", {"spec": 1}, custom=True) == []


def test_cli_plan_exits_2_naming_urn_and_path(monkeypatch, capsys):
    real_program = plan.run_main

    def buggy_program():
        real_program()
        _node_group(taints=[{"key": "k", "efect": "NO_SCHEDULE"}])

    monkeypatch.setattr(plan, "run_main", buggy_program)
    monkeypatch.setattr(plan.run_program, "__defaults__", (buggy_program, *plan.run_program.__defaults__[1:]))
    assert cli.main(["plan", "aws-prod"]) == 2
    err = capsys.readouterr().err
    assert "do not match the provider SDK schema" in err and "Traceback" not in err
    assert "urn:pulumi:aws-prod::gpu-platform::aws:eks/nodeGroup:NodeGroup::gpu: taints[0].efect: is not an input" in err
    assert "urn:pulumi:aws-prod::gpu-platform::aws:eks/nodeGroup:NodeGroup::gpu: taints[0].effect: is required" in err


def test_nothing_is_left_registered_as_planned_after_a_schema_failure():
    with pytest.raises(ProviderSchemaError):
        run_program("schema", {}, program=lambda: _node_group(taints=[{"key": "k"}]))
    # The next plan starts from a fresh root stack and is clean.
    registrations, _ = run_program("schema", {}, program=_node_group)
    assert pulumi.runtime.settings.get_root_resource() is not None
    assert sum(r.type == NODE_GROUP for r in registrations) == 1
