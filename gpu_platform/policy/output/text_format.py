"""The report for people: failing findings first, each with where to fix it, then exemptions and notes."""
from __future__ import annotations

from typing import Sequence

from gpu_platform.policy.findings import Finding, Report
from policies.rule import Rule


def _where(finding: Finding) -> str:
    target = f"{finding.resource} ({finding.resource_type})" if finding.resource else "stack"
    at = f"  {finding.location.path}:{finding.location.line}" if finding.location else ""
    return f"{target}{at}"


def render(report: Report, rules: Sequence[Rule], fail_on: str | None) -> str:
    by_id = {r.id: r for r in rules}
    lines = [f"gpu-platform check {report.stack} ({report.source}): {report.resources} resources, "
             f"{len(rules)} rules"]
    ordered = sorted(report.active, key=lambda f: (not f.fails(fail_on), f.rule, f.urn))
    for finding in ordered:
        status = "FAIL" if finding.fails(fail_on) else "WARN"
        lines.append(f"{status} {finding.rule} [{finding.severity}, {finding.enforcement}] {_where(finding)}")
        lines.append(f"     {finding.message}")
        lines.append(f"     fix: {by_id[finding.rule].remediation[0]} (see {by_id[finding.rule].docs_url})")
    for finding in sorted(report.waived, key=lambda f: (f.rule, f.urn)):
        lines.append(f"WAIVED {finding.rule} [{finding.severity}] {_where(finding)} by {finding.waived_by}")
        lines.append(f"     {finding.message}")
    exemptions = report.exemptions
    if exemptions.declared or exemptions.issues:
        lines.append(f"exemptions: {len(exemptions.declared)} declared, {len(exemptions.active)} active, "
                     f"{len({u.path for u in exemptions.used})} used, {len(exemptions.issues)} with problems")
        used = {}
        for use in exemptions.used:
            used.setdefault(use.path, []).append(use)
        for path, ex in exemptions.declared:
            uses = used.get(path, [])
            state = f"used by {len(uses)} finding(s)" if uses else (
                "unused" if any(p == path for p, _ in exemptions.active) else "not applied")
            lines.append(f"  {path}: {ex.rule} {ex.resource!r} until {ex.expires.isoformat()} ({state}): {ex.reason}")
    unknown = [n for n in report.notes if n.kind == "unknown"]
    for note in unknown:
        status = "FAIL" if note.fails(fail_on) else "WARN"
        lines.append(f"{status} {note.rule} cannot decide ({note.enforcement}) {note.urn or 'stack'}: {note.reason}")
    failing, undecided = report.failing(fail_on), report.undecided(fail_on)
    lines.append(f"{len(failing) + len(undecided)} failing, {len(report.active) - len(failing)} warning(s), "
                 f"{len(report.waived)} waived, {len(unknown)} undecided "
                 f"(fail on: {fail_on or 'mandatory findings'}) -> {'FAIL' if report.exit_code(fail_on) else 'PASS'}")
    return "\n".join(lines)
