"""Report formats: findings located at the pool's line in the stack file, rule metadata, and every exemption
used listed in text, JSON, SARIF and JUnit alike."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import date, timedelta
from pathlib import Path

import pytest
import yaml

from gpu_platform.cli import main
from policies.rules import RULES

from support.paths import ROOT

BROKEN = ROOT / "tests" / "broken_stacks"
REASON = "notebook pool shared until the MIG nodes arrive (CAP-1138)"
# Within the default maximum lifetime (180 days) of an exemption, whenever the suite runs.
EXPIRES = (date.today() + timedelta(days=90)).isoformat()


@pytest.fixture(scope="module")
def exempted_stack(tmp_path_factory) -> Path:
    """mps-shared (GPU012 on pool l4-shared) with an exemption waiving that finding."""
    document = yaml.safe_load((BROKEN / "mps-shared.yaml").read_text())
    document["config"]["gpu-platform:policy"] = {"exemptions": [
        {"rule": "GPU012", "resource": "ml-prod-l4-*", "reason": REASON, "expires": EXPIRES}]}
    path = tmp_path_factory.mktemp("stack") / "Pulumi.exempted.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def outputs(exempted_stack, tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("out")
    texts = {}
    for fmt in ("text", "json", "sarif", "junit"):
        assert main(["check", "--file", str(exempted_stack), "--format", fmt, "--out", str(out / fmt)]) == 0
        texts[fmt] = (out / fmt).read_text()
    return texts


def _pool_line(path: Path, pool: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.strip() == f"- name: {pool}")


def test_text_lists_waived_findings_and_exemptions(outputs):
    text = outputs["text"]
    assert "WAIVED GPU012 [medium] ml-prod-l4-shared (gpu-platform:cluster:GpuNodePool)" in text
    assert f"policy.exemptions[0]: GPU012 'ml-prod-l4-*' until {EXPIRES} (used by 1 finding(s)): {REASON}" in text
    assert text.rstrip().endswith("-> PASS")


def test_json_lists_exemptions_used(outputs):
    report = json.loads(outputs["json"])
    assert [(u["path"], u["rule"], u["reason"]) for u in report["exemptions"]["used"]] == \
        [("policy.exemptions[0]", "GPU012", REASON)]
    (finding,) = report["findings"]
    assert finding["waivedBy"] == "policy.exemptions[0]" and finding["failing"] is False
    assert [r["id"] for r in report["rules"]] == [r.id for r in RULES]


def test_sarif_has_rules_located_results_and_suppressions(outputs, exempted_stack):
    sarif = json.loads(outputs["sarif"])
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    (run,) = sarif["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.id for r in RULES]
    assert all(r["shortDescription"]["text"] and r["help"]["text"] for r in rules)
    (result,) = run["results"]
    assert rules[result["ruleIndex"]]["id"] == result["ruleId"] == "GPU012"
    location = result["locations"][0]["physicalLocation"]
    assert location["region"]["startLine"] == _pool_line(exempted_stack, "l4-shared")
    assert location["artifactLocation"]["uri"].endswith("Pulumi.exempted.yaml")
    assert result["suppressions"] == [{"kind": "external", "status": "accepted",
                                       "justification": f"policy.exemptions[0] (expires {EXPIRES}): {REASON}"}]
    assert run["properties"]["exemptions"]["used"][0]["path"] == "policy.exemptions[0]"


def test_junit_marks_waived_findings_skipped(outputs):
    suite = ET.fromstring(outputs["junit"]).find("testsuite")
    assert suite.get("failures") == "0" and suite.get("skipped") == "1"
    assert int(suite.get("tests")) == len(RULES)
    skipped = [c for c in suite.iter("testcase") if c.find("skipped") is not None]
    assert [c.find("skipped").get("message") for c in skipped] == ["waived by policy.exemptions[0]"]
    assert f"exemption policy.exemptions[0]: GPU012 'ml-prod-l4-*' until {EXPIRES}: {REASON}" in \
        suite.find("system-out").text


def test_failing_finding_is_an_error_at_its_pool_line(tmp_path):
    stack = BROKEN / "time-sliced-shared.yaml"
    assert main(["check", "--file", str(stack), "--format", "sarif", "--out", str(tmp_path / "s")]) == 1
    (result,) = json.loads((tmp_path / "s").read_text())["runs"][0]["results"]
    assert result["level"] == "error" and "suppressions" not in result
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == _pool_line(stack, "l4-shared")
    assert main(["check", "--file", str(stack), "--format", "junit", "--out", str(tmp_path / "j")]) == 1
    suite = ET.fromstring((tmp_path / "j").read_text()).find("testsuite")
    (failure,) = suite.iter("failure")
    assert suite.get("failures") == "1" and failure.get("type") == "GPU002 high mandatory"


def test_exemption_problem_points_at_its_item(tmp_path):
    stack = BROKEN / "expired-exemption.yaml"
    assert main(["check", "--file", str(stack), "--format", "json", "--out", str(tmp_path / "r")]) == 1
    (finding,) = json.loads((tmp_path / "r").read_text())["findings"]
    line = next(i for i, text in enumerate(stack.read_text().splitlines(), 1) if "- rule: GPU002" in text)
    assert (finding["rule"], finding["location"]["line"]) == ("GPU000", line)
