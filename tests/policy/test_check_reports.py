"""`check` writes the report it was asked for whatever the stack: config errors as results at the line that sets
the value (exit 2), config warnings as SARIF notes, file URIs relative to %SRCROOT%, and a saved plan checked with
the stack it came from."""
from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from gpu_platform.cli import main

from support.paths import ROOT

# The parts of the SARIF 2.1.0 schema (sarif-schema-2.1.0.json, OASIS) that our documents use: required
# properties, enums and URI shapes. No PyPI package ships the schema itself (the `schemastore` package is a cache
# that fetches it over the network), so the test carries these rules from the standard.
_LOCATION = {"type": "object", "properties": {
    "physicalLocation": {"type": "object", "required": ["artifactLocation"], "properties": {
        "artifactLocation": {"type": "object", "required": ["uri"], "properties": {
            "uri": {"type": "string", "format": "uri-reference"}, "uriBaseId": {"type": "string"}}},
        "region": {"type": "object", "properties": {"startLine": {"type": "integer", "minimum": 1}}}}}}}
SARIF_SHAPE = {
    "type": "object", "required": ["version", "runs"],
    "properties": {
        "version": {"enum": ["2.1.0"]},
        "runs": {"type": "array", "items": {
            "type": "object", "required": ["tool"],
            "properties": {
                "tool": {"type": "object", "required": ["driver"], "properties": {"driver": {
                    "type": "object", "required": ["name"], "properties": {"rules": {"type": "array", "items": {
                        "type": "object", "required": ["id"], "properties": {"defaultConfiguration": {
                            "properties": {"level": {"enum": ["none", "note", "warning", "error"]}}}}}}}}}},
                "originalUriBaseIds": {"type": "object", "additionalProperties": {
                    "type": "object", "properties": {"uri": {"type": "string", "pattern": "/$"}}}},
                "invocations": {"type": "array", "items": {"type": "object", "required": ["executionSuccessful"]}},
                "results": {"type": "array", "items": {
                    "type": "object", "required": ["message"],
                    "properties": {"message": {"type": "object", "required": ["text"]},
                                   "level": {"enum": ["none", "note", "warning", "error"]},
                                   "ruleIndex": {"type": "integer", "minimum": 0},
                                   "locations": {"type": "array", "items": _LOCATION}}}},
            }}},
    },
}


def _sarif(path: Path) -> dict:
    document = json.loads(path.read_text())
    jsonschema.validate(document, SARIF_SHAPE, format_checker=jsonschema.FormatChecker())
    (run,) = document["runs"]
    rules = run["tool"]["driver"]["rules"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        for location in result["locations"]:
            artifact = location["physicalLocation"]["artifactLocation"]
            assert artifact["uriBaseId"] in run["originalUriBaseIds"] and not artifact["uri"].startswith("/")
    return run


def _line(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture
def in_repo(tmp_path, monkeypatch) -> Path:
    """A repository checkout as CI has it: the working directory is its root."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "stacks").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _stack(repo: Path, name: str, old: str, new: str) -> Path:
    text = (ROOT / "stacks" / "Pulumi.gcp-dev.yaml").read_text()
    assert old in text
    path = repo / "stacks" / f"Pulumi.{name}.yaml"
    path.write_text(text.replace(old, new))
    return path


def test_invalid_stack_still_writes_sarif_and_junit_with_each_error_at_its_line(in_repo, capsys):
    stack = _stack(in_repo, "bad", "instanceType: g2-standard-48", "instanceType: g2-standard-999")
    stack.write_text(stack.read_text().replace("{l4-train: 4, l4-infer: 2}\n      priority",
                                               "{l4-train: 4, l4-nope: 2}\n      priority"))
    assert main(["check", "--file", "stacks/Pulumi.bad.yaml", "--format", "sarif", "--out", "r.sarif"]) == 2
    assert "is invalid (2 problems)" in capsys.readouterr().err
    run = _sarif(in_repo / "r.sarif")
    assert run["invocations"][0]["executionSuccessful"] is False and run["invocations"][0]["exitCode"] == 2
    found = {(r["ruleId"], r["level"], r["message"]["text"].split(":")[0],
              r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
              r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in run["results"]}
    assert found == {
        ("config/error", "error", "gpuPools[0].instanceType", "stacks/Pulumi.bad.yaml",
         _line(stack, "g2-standard-999")),
        ("config/error", "error", "teams[0].quotas.l4-nope", "stacks/Pulumi.bad.yaml", _line(stack, "l4-nope")),
    }
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == in_repo.resolve().as_uri() + "/"

    assert main(["check", "--file", "stacks/Pulumi.bad.yaml", "--format", "junit", "--out", "r.xml"]) == 2
    suite = ET.parse(in_repo / "r.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "2")
    assert [f.get("type") for f in suite.iter("failure")] == ["invalid stack config"] * 2
    assert main(["check", "--file", "stacks/Pulumi.bad.yaml", "--format", "json", "--out", "r.json"]) == 2
    assert json.loads((in_repo / "r.json").read_text())["summary"]["exitCode"] == 2


def test_finding_points_at_the_key_that_sets_the_value_and_warnings_are_notes(in_repo):
    # An open development endpoint (GPU013) and a team asking for a reclaimer that is off (a config warning).
    stack = _stack(in_repo, "open", "authorizedNetworks: [203.0.113.0/24]", "authorizedNetworks: [0.0.0.0/0]")
    stack.write_text(stack.read_text().replace("    - name: beta\n", "    - name: beta\n      reclaim: true\n"))
    os.mkdir("sub")
    os.chdir("sub")  # run from inside the repository: URIs stay relative to its root
    assert main(["check", "--file", "../stacks/Pulumi.open.yaml", "--format", "sarif", "--out", "r.sarif"]) == 1
    run = _sarif(in_repo / "sub" / "r.sarif")
    located = {r["ruleId"]: (r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                             r["locations"][0]["physicalLocation"]["region"]["startLine"])
               for r in run["results"] if r["locations"]}
    assert located["GPU013"] == ("error", "stacks/Pulumi.open.yaml", _line(stack, "authorizedNetworks:"))
    notes = [r for r in run["results"] if r["ruleId"] == "config/warning"]
    assert notes and all(r["level"] == "note" for r in notes)
    assert any(r["locations"][0]["physicalLocation"]["region"]["startLine"] == _line(stack, "reclaim:")
               and r["message"]["text"].startswith("teams[1].reclaim: ") for r in notes)


def test_a_saved_plan_checked_with_its_stack_is_located_in_the_stack(in_repo, capsys):
    stack = _stack(in_repo, "open", "authorizedNetworks: [203.0.113.0/24]", "authorizedNetworks: [0.0.0.0/0]")
    assert main(["plan", "--file", str(stack), "--format", "json", "--out", "plan.json"]) == 0
    assert main(["check", "--plan", "plan.json", "--file", str(stack), "--format", "sarif", "--out", "r.sarif"]) == 1
    run = _sarif(in_repo / "r.sarif")
    (result,) = [r for r in run["results"] if r["ruleId"] == "GPU013"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "stacks/Pulumi.open.yaml"
    assert location["region"]["startLine"] == _line(stack, "authorizedNetworks:")
    capsys.readouterr()
    assert main(["check", "--plan", "plan.json", "gcp-prod"]) == 2
    assert "is a plan of stack 'open', not of 'gcp-prod'" in capsys.readouterr().err
