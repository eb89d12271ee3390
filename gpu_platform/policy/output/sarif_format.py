"""SARIF 2.1.0 for code scanning: rule metadata, results located at the stack file line of the pool or team,
waived findings as results with an accepted suppression that carries the exemption's reason."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

from gpu_platform.policy.findings import Finding, Report
from gpu_platform.policy.output.json_format import exemptions_json
from policies.rule import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL = "gpu-platform-policy"


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


def _result(finding: Finding, index: dict[str, int], report: Report, fail_on: str | None) -> dict[str, Any]:
    location: dict[str, Any] = {}
    if finding.location:
        location["physicalLocation"] = {"artifactLocation": {"uri": finding.location.path},
                                        "region": {"startLine": finding.location.line}}
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


def render(report: Report, rules: Sequence[Rule], fail_on: str | None) -> str:
    index = {rule.id: i for i, rule in enumerate(rules)}
    notifications = [{"level": "note", "message": {"text": f"{n.rule} skipped{f' on {n.urn}' if n.urn else ''}: "
                                                            f"{n.reason}"},
                      "associatedRule": {"id": n.rule, "index": index[n.rule]}}
                     for n in report.notes if n.kind == "unknown"]
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": TOOL, "semanticVersion": "1.0.0", "rules": [_rule(r) for r in rules]}},
            # One category per stack, so code scanning keeps each stack's alerts apart.
            "automationDetails": {"id": f"{TOOL}/{report.stack}/"},
            "results": [_result(f, index, report, fail_on) for f in report.findings],
            "invocations": [{"executionSuccessful": True, "exitCode": report.exit_code(fail_on),
                             "toolExecutionNotifications": notifications}],
            "properties": {"stack": report.stack, "source": report.source,
                           "exemptions": exemptions_json(report.exemptions)},
        }],
    }
    return json.dumps(document, indent=2)
