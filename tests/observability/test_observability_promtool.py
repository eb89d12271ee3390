"""promtool over the rules the program really plans: `check rules` for every example stack, `test rules` with the
synthetic series in tests/promtool/ (each alert fires when it should and stays silent when GPUs are busy).

Rule files are written at test time from the PrometheusRule objects of each stack's offline plan. Stacks are
planned adopted (`existingKubeconfig`): the in-cluster layers, and so the rules, are the same as on a created
cluster, without the cloud resources.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpu_platform.engine.plan import read_stack_config, stack_path

from support.paths import ROOT, STACKS
from support.plans import shared_plan

PROMTOOL_TESTS = sorted((ROOT / "tests" / "promtool").glob("*.yml"))
RULE_TYPE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
_LABEL_TEMPLATE = re.compile(r"\{\{ \$labels\.(\w+) \}\}")


def adopt(stack: str) -> dict:
    cluster = read_stack_config(stack_path(stack, None)[1])["gpu-platform:cluster"]
    return {"gpu-platform:cluster": {**cluster, "existingKubeconfig": "apiVersion: v1\nkind: Config\n"}}


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is not installed but CI is set: .ci/run installs it (Debian package prometheus)")
        pytest.skip("promtool not installed (Debian package prometheus); CI runs these tests")
    return path


def recording_first(groups: list[dict]) -> list[dict]:
    return sorted(groups, key=lambda g: not any("record" in r for r in g["rules"]))


@pytest.fixture(scope="module")
def planned_groups() -> dict[str, list[dict]]:
    """Stack -> every rule group of every PrometheusRule in its plan, recording groups first."""
    return {stack: recording_first([group for rule in shared_plan(stack, adopt(stack)).of_type(
        RULE_TYPE) for group in rule.inputs["spec"]["groups"]]) for stack in STACKS}


def run(promtool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def write_rules(groups: list[dict], path: Path) -> Path:
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def render(template: str, labels: dict[str, str]) -> str:
    """Our annotation templates only use `{{ $labels.x }}`; anything else would need promtool to render it."""
    text = _LABEL_TEMPLATE.sub(lambda m: str(labels.get(m.group(1), "")), template)
    assert "{{" not in text, f"annotation uses more than $labels: {template}"
    return text


def with_annotations(test_file: dict, groups: list[dict]) -> dict:
    """Fill each expected alert's annotations from its rule, rendered with the expected labels.

    The test files state which alerts fire with which labels; the annotations then only have to render.
    """
    alerts = {rule["alert"]: rule for group in groups for rule in group["rules"] if "alert" in rule}
    for case in test_file["tests"]:
        for check in case.get("alert_rule_test", []):
            rule = alerts[check["alertname"]]
            for expected in check.get("exp_alerts", []):
                expected.setdefault("exp_annotations", {
                    key: render(value, expected["exp_labels"]) for key, value in rule["annotations"].items()})
    return test_file


@pytest.mark.parametrize("stack", STACKS)
def test_promtool_checks_every_planned_rule_group(promtool, planned_groups, stack, tmp_path):
    groups = planned_groups[stack]
    assert {g["name"] for g in groups} >= {"gpu-platform.gpus", "gpu-platform.hoarding", "gpu-platform.queues"}
    result = run(promtool, "check", "rules", str(write_rules(groups, tmp_path / f"{stack}.rules.yml")), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in groups)} rules found" in result.stdout


@pytest.mark.parametrize("test_file", PROMTOOL_TESTS, ids=[p.stem for p in PROMTOOL_TESTS])
def test_promtool_unit_tests(promtool, planned_groups, test_file, tmp_path):
    spec = yaml.safe_load(test_file.read_text())
    (rule_file,) = spec["rule_files"]
    stack = rule_file.removesuffix(".rules.yml")
    groups = planned_groups[stack]
    write_rules(groups, tmp_path / rule_file)
    # Without an order promtool evaluates groups in map order, so a rule reading another group's records would
    # see them one step late at random. Prometheus itself runs groups independently; tests want one order.
    spec["group_eval_order"] = [g["name"] for g in groups]
    (tmp_path / test_file.name).write_text(yaml.safe_dump(with_annotations(spec, groups), sort_keys=False))
    result = run(promtool, "test", "rules", test_file.name, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_promtool_test_that_fires_it(planned_groups):
    fired = set()
    for test_file in PROMTOOL_TESTS:
        for case in yaml.safe_load(test_file.read_text())["tests"]:
            fired |= {c["alertname"] for c in case.get("alert_rule_test", []) if c.get("exp_alerts")}
    alerts = {r["alert"] for stack in ("aws-prod", "gcp-dev") for g in planned_groups[stack] for r in g["rules"]
              if "alert" in r}
    assert alerts - fired == set()


def test_promtool_thresholds_match_the_stacks_they_test():
    """The synthetic series assume these settings: a changed example stack must change the tests too."""
    from components.config import split_namespace, validate
    for stack, kind in (("aws-prod", "kueue"), ("gcp-dev", "volcano")):
        raw, _ = split_namespace(read_stack_config(stack_path(stack, None)[1]))
        config = validate(raw)
        slo = config.observability.slo
        assert (config.scheduler.kind, slo.idle_minutes, slo.min_utilization, slo.pending_minutes) == (
            kind, 30, 0.5, 60)
