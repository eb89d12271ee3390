"""The report as one JSON document, stable keys, for tools."""
from __future__ import annotations

import json
from typing import Any, Sequence

from gpu_platform.policy.exemptions import Exemptions
from gpu_platform.policy.findings import Finding, Report
from policies.rule import Rule


def rule_json(rule: Rule) -> dict[str, Any]:
    return {"id": rule.id, "slug": rule.slug, "policy": rule.policy.name, "title": rule.title,
            "severity": rule.severity.value, "enforcement": rule.enforcement.value, "kind": rule.kind,
            "exemptable": rule.exemptable, "docs": rule.docs_url, "remediation": list(rule.remediation)}


def finding_json(finding: Finding, fail_on: str | None) -> dict[str, Any]:
    return {"rule": finding.rule, "policy": finding.policy, "severity": finding.severity,
            "enforcement": finding.enforcement, "failing": finding.fails(fail_on), "message": finding.message,
            "urn": finding.urn, "resource": finding.resource, "type": finding.resource_type,
            "subject": finding.subject, "waivedBy": finding.waived_by or None,
            "location": {"path": finding.location.path, "line": finding.location.line} if finding.location else None}


def exemptions_json(exemptions: Exemptions) -> dict[str, Any]:
    def one(path, ex) -> dict[str, Any]:
        return {"path": path, "rule": ex.rule, "resource": ex.resource, "reason": ex.reason,
                "expires": ex.expires.isoformat()}

    return {
        "declared": [one(path, ex) for path, ex in exemptions.declared],
        "active": [path for path, _ in exemptions.active],
        "used": [{**one(use.path, use.exemption), "waived": {"rule": use.rule, "urn": use.urn, "message": use.message}}
                 for use in exemptions.used],
        "issues": [{"path": issue.path, "message": issue.message} for issue in exemptions.issues],
    }


def render(report: Report, rules: Sequence[Rule], fail_on: str | None) -> str:
    failing = report.failing(fail_on)
    document = {
        "stack": report.stack,
        "source": report.source,
        "resources": report.resources,
        "failOn": fail_on or "mandatory",
        "rules": [rule_json(r) for r in rules],
        "findings": [finding_json(f, fail_on) for f in report.findings],
        "exemptions": exemptions_json(report.exemptions),
        "config": [{"path": p.path, "message": p.message, "warning": p.warning,
                    "location": {"path": p.location.path, "line": p.location.line} if p.location else None}
                   for p in report.config],
        "notes": [{"rule": n.rule, "kind": n.kind, "reason": n.reason, "urn": n.urn, "failing": n.fails(fail_on)}
                  for n in report.notes],
        "summary": {"configErrors": len(report.config_errors), "failing": len(failing),
                    "undecided": len(report.undecided(fail_on)),
                    "findings": len(report.active), "waived": len(report.waived),
                    "exitCode": report.exit_code(fail_on)},
    }
    return json.dumps(document, indent=2)
