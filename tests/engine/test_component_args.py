"""Each component validates its Args when constructed: every problem with its property path and the allowed values,
all at once, contradictions refused, one exception type, and nothing created before the refusal."""
from __future__ import annotations

import pytest

import pulumi
from pulumi.provider.experimental.component import ComponentInitError, ComponentProvider

from components.args_checks import ArgsError, check_args
from components.clouds.base import GpuNodePool, GpuNodePoolArgs
from components.gpu.operator import GpuOperator, GpuOperatorArgs
from components.observability.monitoring import GpuMonitoring, GpuMonitoringArgs
from components.provider import COMPONENTS, PACKAGE, PACKAGE_VERSION
from components.scheduling.kueue.component import Kueue, KueueArgs
from components.tenancy.team import Team, TeamArgs
from gpu_platform.engine.plan import run_program, validate_stack

IMAGE_DRIVER = {"driver": False, "toolkit": False, "devicePlugin": True, "migManager": False, "dcgmExporter": True}


def problems_of(component, args) -> tuple[ArgsError, list]:
    """Construct `component` alone under the offline engine; the ArgsError it raised and what got registered."""
    raised = []

    def program():
        try:
            component("under-test", args)
        except ArgsError as exc:
            raised.append(exc)

    registrations, _ = run_program("args", {}, program)
    assert raised, f"{type(args).__name__} was accepted"
    return raised[0], registrations


def paths(error: ArgsError) -> list[str]:
    return [p.path for p in error.problems]


def test_one_value_error_type_with_every_problem_and_its_path():
    error, registrations = problems_of(Team, TeamArgs(team="Research", priority="urgent", gpu_quota={"gpu": "8"},
                                                      egress="sometimes"))
    assert isinstance(error, ValueError)
    assert paths(error) == ["TeamArgs.team", "TeamArgs.priority", "TeamArgs.gpu_quota.gpu", "TeamArgs.egress"]
    assert "'urgent' is not allowed; allowed: critical, high, normal, low" in str(error)
    assert "allowed: internet, none" in str(error)
    assert str(error).startswith("TeamArgs is invalid (4 problems):")
    assert registrations == [], "nothing is created before the Args are refused"


def test_gpu_operator_driver_owner_contradicting_the_cloud_is_refused_before_any_child():
    # EKS's GPU images carry the driver: no EKS pool's driver is the operator's (the cloud's image facts).
    args = GpuOperatorArgs(values={"driver": {"enabled": True}}, driver_owners={"a100": "operator"},
                           operands={**IMAGE_DRIVER, "driver": True}, cloud="aws")
    error, registrations = problems_of(GpuOperator, args)
    assert paths(error) == ["GpuOperatorArgs.driver_owners.a100"]
    assert "'operator' is not supported on EKS" in str(error) and "allowed: managed" in str(error)
    assert registrations == []


def test_gpu_operator_operands_contradicting_the_driver_owners_and_chart_values():
    args = GpuOperatorArgs(values={"driver": {"enabled": True}, "migManager": {"enabled": True}},
                           driver_owners={"a100": "image", "h100": "operator"}, operands={**IMAGE_DRIVER, "gpu": True})
    error, _ = problems_of(GpuOperator, args)
    assert paths(error) == [
        "GpuOperatorArgs.driver_owners.a100", "GpuOperatorArgs.operands.gpu", "GpuOperatorArgs.operands.driver",
        "GpuOperatorArgs.values.driver.enabled", "GpuOperatorArgs.values.migManager.enabled",
    ]
    assert "'image' is not allowed; allowed: managed, operator" in str(error)
    assert "unknown operand; allowed: driver, toolkit, devicePlugin, migManager, dcgmExporter" in str(error)
    assert "gives the operator pool(s) h100" in str(error)


def test_gpu_operator_mig_manager_where_the_cloud_partitions_mig_itself():
    args = GpuOperatorArgs(values={}, driver_owners={"a100": "managed"},
                           operands={**IMAGE_DRIVER, "migManager": True}, mig_config="version: v1", cloud="gcp")
    error, _ = problems_of(GpuOperator, args)
    assert paths(error) == ["GpuOperatorArgs.operands.migManager"]
    assert "must be false on GKE" in str(error)


def test_node_pool_with_mig_on_a_type_without_mig():
    args = GpuNodePoolArgs("inference", "aws", "inference", "g5.xlarge", "A10G", 1, 0, 2, "managed",
                           sharing_mode="mig", mig_config="all-1g.5gb")
    error, registrations = problems_of(GpuNodePool, args)
    assert paths(error) == ["GpuNodePoolArgs.sharing_mode"]
    assert "mig is not available on g5.xlarge (A10G has no MIG)" in str(error)
    assert registrations == []


def test_node_pool_facts_that_disagree_with_the_catalog():
    args = GpuNodePoolArgs("train", "aws", "train", "p5.48xlarge", "A100", 4, 3, 2, "operator",
                           capacity_type="cheap", taints=[{"key": "gpu", "effect": "Sometimes"}])
    error, _ = problems_of(GpuNodePool, args)
    assert paths(error) == ["GpuNodePoolArgs.max_nodes", "GpuNodePoolArgs.driver", "GpuNodePoolArgs.capacity_type",
                            "GpuNodePoolArgs.gpu_model", "GpuNodePoolArgs.gpus_per_node",
                            "GpuNodePoolArgs.taints[0].effect"]
    assert "p5.48xlarge carries H100-80GB; got 'A100'" in str(error)


def test_kueue_queues_without_namespaces_or_flavors():
    spec = {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "h200"}]}],
            "cohortName": "gpu-platform"}
    args = KueueArgs(manager_config={}, flavors={"h100": {}}, cluster_queues={"ml": spec}, namespaces={"web": "web"})
    error, _ = problems_of(Kueue, args)
    assert paths(error) == ["KueueArgs.namespaces.ml", "KueueArgs.namespaces.web",
                            "KueueArgs.cluster_queues.ml.cohortName",
                            "KueueArgs.cluster_queues.ml.resourceGroups[0].flavors[0].name"]
    assert "'h200' is not a flavor; allowed: h100" in str(error)


def test_monitoring_scheduler_and_dashboard():
    args = GpuMonitoringArgs(namespace="monitoring", recording_groups=[{"rules": []}], alert_groups=[],
                             labels={}, dashboard="{not json", scheduler="slurm")
    error, _ = problems_of(GpuMonitoring, args)
    assert paths(error) == ["GpuMonitoringArgs.recording_groups[0]", "GpuMonitoringArgs.dashboard",
                            "GpuMonitoringArgs.scheduler"]
    assert "'slurm' is not allowed; allowed: kueue, volcano" in str(error)


def test_a_namespace_from_another_resource_is_not_read_before_it_exists():
    def program():
        check_args(GpuMonitoringArgs(namespace=pulumi.Output.from_input("monitoring"), recording_groups=[],
                                     alert_groups=[], labels={}, dashboard="{}"))

    run_program("args", {}, program)


@pytest.mark.parametrize("stack", ["aws-prod", "gcp-prod"])
def test_the_stack_programs_args_pass(stack):
    config = validate_stack(stack)[3]
    check_args(GpuOperatorArgs.from_config(config))
    for team in config.teams:
        check_args(TeamArgs.from_config(config, team, {}))
    check_args(KueueArgs.from_config(config, {t.name: t.name for t in config.teams}))


def test_the_package_refuses_contradictory_inputs_with_the_same_error():
    provider = ComponentProvider(COMPONENTS, PACKAGE, version=PACKAGE_VERSION)
    raised = []

    def program():
        try:
            provider.construct("ml", f"{PACKAGE}:index:Team", {
                "team": "ml", "priority": "high", "gpuQuota": {"requests.nvidia.com/gpu": "4"}, "egress": "none",
                "labels": {"gpu-platform.io/team": "web"}}, None)
        except ComponentInitError as exc:
            raised.append(exc)

    registrations, _ = run_program("hosted", {}, program)
    assert raised and "TeamArgs.labels.gpu-platform.io/team: must be the team's name 'ml'" in str(raised[0])
    assert registrations == []
