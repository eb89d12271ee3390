"""`gpu-platform check` end to end: every example stack passes, every broken stack fails with exactly its rule
ids (stack files, or an example plan with one graph edit checked through --plan), usage errors exit 2,
RULES.md is current, and the pack's chart defaults match the pinned charts."""
from __future__ import annotations

import json
from datetime import date, timedelta
import re
import tarfile
from pathlib import Path

import pytest
import yaml

from components.pins import PINS
from gpu_platform.cli import main
from gpu_platform.policy import catalog
from policies.charts import CHART_DEFAULTS, GPU_OPERATOR

from support.paths import ROOT, STACKS, upstream
from support.policy import base_plan

BROKEN = sorted((ROOT / "tests" / "broken_stacks").glob("*.yaml"))


def check_json(tmp_path: Path, *argv: str) -> tuple[int, dict]:
    out = tmp_path / "report.json"
    code = main(["check", *argv, "--format", "json", "--out", str(out)])
    return code, json.loads(out.read_text())


@pytest.mark.parametrize("stack", STACKS)
def test_every_example_stack_passes(stack, tmp_path):
    code, report = check_json(tmp_path, stack)
    assert code == 0
    assert [f for f in report["findings"] if f["failing"]] == []
    assert report["summary"]["exitCode"] == 0
    assert report["resources"] > 20


def _expectation(path: Path) -> tuple[list[str], int]:
    text = path.read_text()
    expected = re.search(r"^# expect: (.+)$", text, re.M).group(1).split()
    exit_code = re.search(r"^# exit: (\d)$", text, re.M)
    return sorted(expected), int(exit_code.group(1)) if exit_code else 1


def _edited_plan(document: dict, tmp_path: Path) -> Path:
    plan = base_plan(document["base"])
    for edit in document["edits"]:
        target = next(r for r in plan["resources"] if r["type"] == edit["type"] and r["name"] == edit["name"])
        node, *path = ["inputs", *edit["path"].split(".")]
        holder = target
        for step in [node, *path[:-1]]:
            holder = holder[step]
        holder[path[-1]] = edit["value"]
    out = tmp_path / f"{document['base']}.plan.json"
    out.write_text(json.dumps(plan))
    return out


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_stack_fails_with_exactly_its_rules(path, tmp_path):
    expected, exit_code = _expectation(path)
    document = yaml.safe_load(path.read_text())
    if "base" in document:
        # The base stack's own exemptions, as a CI job checking that stack's plan file passes them.
        policy = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{document['base']}.yaml").read_text())[
            "config"].get("gpu-platform:policy")
        exemptions = []
        if policy:
            (tmp_path / "exemptions.yaml").write_text(yaml.safe_dump({"policy": policy}))
            exemptions = ["--exemptions", str(tmp_path / "exemptions.yaml")]
        code, report = check_json(tmp_path, "--plan", str(_edited_plan(document, tmp_path)), *exemptions)
    else:
        code, report = check_json(tmp_path, "--file", str(path))
    assert sorted({f["rule"] for f in report["findings"] if not f.get("waivedBy")}) == expected
    assert code == exit_code


def test_fail_on_severity_overrides_enforcement(tmp_path):
    mps = ROOT / "tests" / "broken_stacks" / "mps-shared.yaml"
    assert check_json(tmp_path, "--file", str(mps))[0] == 0
    assert check_json(tmp_path, "--file", str(mps), "--fail-on", "medium")[0] == 1
    assert check_json(tmp_path, "--file", str(mps), "--fail-on", "high")[0] == 0


def test_plan_file_with_exemptions_file(tmp_path):
    document = yaml.safe_load((ROOT / "tests" / "broken_stacks" / "untainted-pool.yaml").read_text())
    plan = _edited_plan(document, tmp_path)
    exemptions = tmp_path / "exemptions.yaml"
    exemptions.write_text(yaml.safe_dump({"exemptions": [
        {"rule": "GPU001", "resource": "ml-prod-h100-train*",
         "expires": (date.today() + timedelta(days=30)).isoformat(),
         "reason": "pool rebuilt with the taint in the next maintenance window (OPS-42)"}]}))
    code, report = check_json(tmp_path, "--plan", str(plan), "--exemptions", str(exemptions))
    assert code == 0
    assert {f["rule"] for f in report["findings"] if f["waivedBy"]} == {"GPU001"}
    assert [u["path"] for u in report["exemptions"]["used"]] == ["policy.exemptions[0]"] * 2


@pytest.mark.parametrize("argv, message", [
    (["aws-prod", "--plan", "/nonexistent/x.json"], "cannot read /nonexistent/x.json"),
    (["aws-prod", "--plan", "x.json", "--exemptions", "x.yaml"], "a stack's exemptions are its"),
    (["aws-prod", "--exemptions", "x.yaml"], "--exemptions is for --plan"),
    (["--plan", "/nonexistent/plan.json"], "cannot read /nonexistent/plan.json"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    assert main(["check", *argv]) == 2
    assert message in capsys.readouterr().err


def test_not_a_plan_file_exits_2(tmp_path, capsys):
    bad = tmp_path / "plan.json"
    bad.write_text('{"resources": [{"urn": 1}]}')
    assert main(["check", "--plan", str(bad)]) == 2
    assert "is not a plan" in capsys.readouterr().err


def test_invalid_stack_config_exits_2(tmp_path, capsys):
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text("config:\n  gpu-platform:cloud: mars\n")
    assert main(["check", "--file", str(stack)]) == 2
    assert "cloud: 'mars' is not allowed" in capsys.readouterr().err


def test_rules_md_is_generated_from_the_rule_modules():
    assert (ROOT / "RULES.md").read_text() == catalog.render(), \
        "RULES.md is stale: run `python -m gpu_platform.policy.catalog > RULES.md`"


@pytest.mark.parametrize("chart, version", [k for k in CHART_DEFAULTS if k[0] != GPU_OPERATOR])
def test_chart_defaults_match_the_chart_package(chart, version):
    """Rows for charts packaged in ../shared/upstream/charts, against the package's own values.yaml."""
    package = upstream("charts") / f"{chart}-{version}.tgz"
    assert package.exists(), package
    with tarfile.open(package) as tar:
        values = yaml.safe_load(tar.extractfile(f"{chart}/values.yaml").read())
    for key, expected in CHART_DEFAULTS[(chart, version)].items():
        node = values
        for step in key.split("."):
            node = node[step]
        assert node == expected, key


def test_the_pack_knows_the_defaults_of_every_pinned_chart_it_reads():
    """A release at a version the pack has no row for leaves its unset keys unknown: every pin needs its row."""
    for chart in {chart for chart, _ in CHART_DEFAULTS}:
        assert (chart, PINS[chart].version) in CHART_DEFAULTS, chart


def test_gpu_operator_defaults_match_the_pinned_chart():
    values = yaml.safe_load(upstream("gpu-operator/values.yaml").read_text())
    # The chart's own version field says v1.0.0-devel; SOURCES.md names the release tag the files come from.
    tag = re.search(r"NVIDIA/gpu-operator @ `(v[\d.]+)`", upstream("SOURCES.md").read_text()).group(1)
    defaults = CHART_DEFAULTS[(GPU_OPERATOR, tag)]
    for key, expected in defaults.items():
        node = values
        for step in key.split("."):
            node = node[step]
        assert node == expected, key
