"""Values a preview cannot know serialize as the engine's unknown marker in `plan --format json`, wherever they are."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pulumi
import pytest

from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import run_program
from gpu_platform.engine.wire import UNKNOWN, to_plain

from support.engine import ADOPTED
from support.paths import ROOT

# An adopted cluster that reports to an existing Prometheus the platform does not install and has no URL for.
ADOPTED_EXTERNAL_PROMETHEUS = ADOPTED + textwrap.indent(textwrap.dedent("""\
    gpu-platform:observability:
      prometheus: {install: false, releaseLabel: prometheus}
    """), "  ")


@pytest.fixture(scope="module")
def stack_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("stacks") / "Pulumi.adopted-prom.yaml"
    path.write_text(ADOPTED_EXTERNAL_PROMETHEUS)
    return path


def test_sdk_unknowns_become_the_marker_at_any_depth():
    unknown = pulumi.output.Unknown()
    assert to_plain(unknown) == UNKNOWN
    assert to_plain({"a": [1, {"b": unknown}], "c": unknown}) == {"a": [1, {"b": UNKNOWN}], "c": UNKNOWN}


def test_wire_unknowns_become_the_marker():
    output_sig = {"4dabf18193072939515e22adb298388d": "d0e6a833031e9bbcd3f4e8bde6ca49a4"}
    assert to_plain({"x": [output_sig]}) == {"x": [UNKNOWN]}
    assert to_plain({"x": UNKNOWN}) == {"x": UNKNOWN}


def test_adopted_cluster_with_external_prometheus_plans_to_json(stack_file):
    plan = plan_stack(file=stack_file)
    data = json.loads(json.dumps(plan.to_json()))
    # The Prometheus component's `url` is None here; a preview resolves such a property as unknown.
    assert data["outputs"]["observability"]["prometheusUrl"] == UNKNOWN
    assert data["outputs"]["kubeconfig"] == "[secret]"


def test_cli_plan_json_exits_zero_without_a_traceback(stack_file):
    result = subprocess.run([sys.executable, "-m", "gpu_platform.cli", "plan", "--file", str(stack_file),
                             "--format", "json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout)["outputs"]["observability"]["prometheusUrl"] == UNKNOWN


class _Holder(pulumi.ComponentResource):
    def __init__(self, name: str):
        self.value = None
        super().__init__("test:index:Holder", name, {"value": self.value})
        self.register_outputs({})


def test_unknowns_in_outputs_and_inputs_of_any_program_serialize():
    """A component property that is None in a preview is an Output the SDK cannot resolve: exported nested and
    passed into a resource's inputs, both must come out as the marker."""
    def program():
        holder = _Holder("holder")
        pulumi.export("nested", {"list": [holder.value, "known"], "map": {"deep": holder.value}})
        import pulumi_kubernetes.core.v1 as core
        core.ConfigMap("cm", data={"fromUnknown": holder.value, "plain": "x"})

    registrations, outputs = run_program("unknowns", {}, program=program)
    plain = json.loads(json.dumps(outputs))
    assert plain["nested"] == {"list": [UNKNOWN, "known"], "map": {"deep": UNKNOWN}}
    config_map = next(r for r in registrations if r.type == "kubernetes:core/v1:ConfigMap")
    assert to_plain(config_map.inputs)["data"] == {"fromUnknown": UNKNOWN, "plain": "x"}
