"""SARIF 2.1.0 for code scanning: rule metadata, results located at the stack file line that sets the value,
waived findings as results with an accepted suppression that carries the exemption's reason, config errors as
error results (no rule ran) and config warnings as note results. File URIs are relative to `%SRCROOT%`, the
repository the command runs in, so code scanning maps them onto the checkout whatever its absolute path."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

from gpu_platform.policy.findings import ConfigProblem, Finding, Location, Report
from gpu_platform.policy.output.json_format import exemptions_json
from policies.rule import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL = "gpu-platform-policy"
SRCROOT = "%SRCROOT%"
# Config problems are not policy rules; code scanning still wants a rule per result, with a level of its own.
CONFIG_RULES = {
    False: {"id": "config/error", "name": "invalid-stack-config",
            "shortDescription": {"text": "The stack config is invalid: the stack cannot be planned or checked"},
            "defaultConfiguration": {"level": "error"}},
    True: {"id": "config/warning", "name": "stack-config-warning",
           "shortDescription": {"text": "The stack config is valid but likely not what was meant"},
           "defaultConfiguration": {"level": "note"}},
}


def source_root() -> Path:
    """The repository the command runs in (the nearest directory up with `.git`), else the working directory."""
    cwd = Path.cwd().resolve()
    return next((d for d in (cwd, *cwd.parents) if (d / ".git").exists()), cwd)


def _artifact(path: str, root: Path) -> dict[str, Any]:
    """A file inside the repository relative to `%SRCROOT%`; one outside it as an absolute file URI."""
    absolute = (Path.cwd() / path).resolve()
    if absolute.is_relative_to(root):
        return {"uri": absolute.relative_to(root).as_posix(), "uriBaseId": SRCROOT}
    return {"uri": absolute.as_uri()}


def _physical(location: Location, root: Path) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": _artifact(location.path, root),
                                 "region": {"startLine": location.line}}}


def _rule(rule: Rule) -> dict[str, Any]:
    steps = "\n".join(f"{i}. {s}" for i, s in enumerate(rule.remediation, 1))
    return {
        "id": rule.id,
        "name": rule.slug,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.rationale},
        "help": {"text": f"{rule.rationale}\n\nRemediation:\n{steps}\n\nDocs: {rule.docs_url}",
                 "markdown": f"{rule.rationale}\n\n**Remediation**\n\n{steps}\n\nDocs: `{rule.docs_url}`"},
        "defaultConfiguration": {"level": "error" if rule.enforcement.value == "mandatory" else "warning"},
        "properties": {"tags": ["gpu-platform", rule.id, rule.kind], "severity": rule.severity.value,
                       "enforcement": rule.enforcement.value, "exemptable": rule.exemptable,
                       "policy": rule.policy.name},
    }


def _level(finding: Finding, fail_on: str | None) -> str:
    if finding.waived_by:
        return "error" if finding.enforcement == "mandatory" else "warning"
    return "error" if finding.fails(fail_on) else "warning"


def _result(finding: Finding, index: dict[str, int], report: Report, fail_on: str | None,
            root: Path) -> dict[str, Any]:
    location: dict[str, Any] = _physical(finding.location, root) if finding.location else {}
    if finding.urn:
        location["logicalLocations"] = [{"fullyQualifiedName": finding.urn, "name": finding.resource,
                                         "kind": "resource"}]
    fingerprint = hashlib.sha256(f"{report.stack}|{finding.rule}|{finding.urn}|{finding.message}".encode()).hexdigest()
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": index[finding.rule],
        "level": _level(finding, fail_on),
        "message": {"text": finding.message},
        "locations": [location] if location else [],
        "partialFingerprints": {"gpuPlatformFinding/v1": fingerprint[:32]},
        "properties": {"severity": finding.severity, "enforcement": finding.enforcement,
                       "failing": finding.fails(fail_on), "subject": finding.subject,
                       "resourceType": finding.resource_type},
    }
    if finding.waived_by:
        exemption = next(ex for path, ex in report.exemptions.declared if path == finding.waived_by)
        result["suppressions"] = [{
            "kind": "external", "status": "accepted",
            "justification": f"{finding.waived_by} (expires {exemption.expires.isoformat()}): {exemption.reason}",
        }]
    return result


def _config_result(problem: ConfigProblem, index: dict[str, int], report: Report, root: Path) -> dict[str, Any]:
    rule = CONFIG_RULES[problem.warning]
    fingerprint = hashlib.sha256(f"{report.stack}|{rule['id']}|{problem.path}|{problem.message}".encode()).hexdigest()
    return {
        "ruleId": rule["id"],
        "ruleIndex": index[rule["id"]],
        "level": rule["defaultConfiguration"]["level"],
        "message": {"text": f"{problem.path}: {problem.message}"},
        "locations": [_physical(problem.location, root)] if problem.location else [],
        "partialFingerprints": {"gpuPlatformFinding/v1": fingerprint[:32]},
        "properties": {"configPath": problem.path},
    }


def render(report: Report, rules: Sequence[Rule], fail_on: str | None) -> str:
    root = source_root()
    descriptors = [_rule(r) for r in rules]
    descriptors += [CONFIG_RULES[warning] for warning in (False, True)
                    if any(p.warning is warning for p in report.config)]
    index = {descriptor["id"]: i for i, descriptor in enumerate(descriptors)}
    notifications = [{"level": "note", "message": {"text": f"{n.rule} skipped{f' on {n.urn}' if n.urn else ''}: "
                                                            f"{n.reason}"},
                      "associatedRule": {"id": n.rule, "index": index[n.rule]}}
                     for n in report.notes if n.kind == "unknown"]
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": TOOL, "semanticVersion": "1.0.0", "rules": descriptors}},
            "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri() + "/"}},
            # One category per stack, so code scanning keeps each stack's alerts apart.
            "automationDetails": {"id": f"{TOOL}/{report.stack}/"},
            "results": [*(_config_result(p, index, report, root) for p in report.config),
                        *(_result(f, index, report, fail_on, root) for f in report.findings)],
            # An invalid config stops the check before any rule runs: the analysis did not complete.
            "invocations": [{"executionSuccessful": not report.config_errors, "exitCode": report.exit_code(fail_on),
                             "toolExecutionNotifications": notifications}],
            "properties": {"stack": report.stack, "source": report.source,
                           "exemptions": exemptions_json(report.exemptions)},
        }],
    }
    return json.dumps(document, indent=2)
