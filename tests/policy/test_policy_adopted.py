"""An adopted cluster (cluster.existingKubeconfig): the plan holds the in-cluster layers only, so rules about its
node pools, endpoint and CNI cannot decide; they report undecided, not "not applicable", and `check --fail-on
unknown` fails on them."""
from __future__ import annotations

import pytest

from gpu_platform.cli import main
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import PROJECT_ROOT, read_stack_config
from gpu_platform.policy.runner import evaluate
from policies import context
from policies.exemptions import Policy
from policies.rules import RULES
from policy_fixtures import TODAY
from support.plans import shared_plan

# Rules whose subject (GPU node pools, the API endpoint, the CNI) an adopted cluster keeps outside the plan.
OUTSIDE = {"GPU001", "GPU004", "GPU005", "GPU006", "GPU007", "GPU008", "GPU009", "GPU011", "GPU016", "GPU019"}


def adopted(stack: str, environment: str | None = None) -> dict:
    raw = read_stack_config(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    kubeconfig = "apiVersion: v1\nkind: Config\n"
    overrides = {"gpu-platform:cluster": {**raw["gpu-platform:cluster"], "existingKubeconfig": kubeconfig}}
    if environment:
        overrides["gpu-platform:environment"] = environment
    return overrides


def notes(stack: str, environment: str | None = None):
    plan = plan_stack(stack, config_overrides=adopted(stack, environment))
    report = evaluate(plan, context.build(plan.config.environment, Policy(), TODAY), RULES)
    return report, {n.rule: n for n in report.notes}


@pytest.mark.parametrize("stack", ["aws-prod", "gcp-prod"])
def test_an_adopted_production_cluster_leaves_what_it_cannot_see_undecided(stack):
    report, found = notes(stack)
    undecided = {rule for rule, note in found.items() if note.kind == "unknown"}
    assert undecided == OUTSIDE
    assert "the cluster is adopted (cluster.existingKubeconfig): its API endpoint settings are outside the plan" in \
        found["GPU011"].reason
    assert report.exit_code() == 0  # undecided is not failing by default
    assert report.exit_code("unknown") == 1


def test_an_adopted_development_cluster_has_no_production_endpoint_rule():
    _, found = notes("aws-dev")
    assert found["GPU011"].kind == "not-applicable"  # not production: GPU013 holds a dev endpoint
    assert found["GPU001"].kind == "unknown"


@pytest.mark.parametrize("stack", ["aws-prod", "oci-prod"])
def test_a_created_cluster_decides_every_rule_it_has_a_subject_for(stack):
    report = evaluate(plan := shared_plan(stack), context.build(plan.config.environment, Policy(), TODAY), RULES)
    assert not [n for n in report.notes if n.kind == "unknown"]


def test_check_fail_on_unknown_exits_1_on_an_adopted_production_cluster(tmp_path, capsys):
    import yaml
    raw = yaml.safe_load((PROJECT_ROOT / "stacks" / "Pulumi.aws-prod.yaml").read_text())
    raw["config"].update(adopted("aws-prod"))
    path = tmp_path / "Pulumi.adopted.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main(["check", "--file", str(path)]) == 0
    assert main(["check", "--file", str(path), "--fail-on", "unknown"]) == 1
    assert "FAIL GPU011 cannot decide (mandatory)" in capsys.readouterr().out
