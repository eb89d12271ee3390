"""The report as GitHub-flavoured Markdown for a pull request comment or `$GITHUB_STEP_SUMMARY`: the verdict, then
one table row per config problem and finding, each with the stack line that sets the value."""
from __future__ import annotations

from typing import Sequence

from gpu_platform.engine.markdown import table
from gpu_platform.policy.findings import Location, Report
from policies.rule import Rule


def _where(location: Location | None) -> str:
    return f"`{location.path}:{location.line}`" if location else "stack"


def render(report: Report, rules: Sequence[Rule], fail_on: str | None) -> str:
    code = report.exit_code(fail_on)
    verdict = {0: "PASS", 1: "FAIL"}.get(code, "INVALID CONFIG")
    failing, undecided = report.failing(fail_on), report.undecided(fail_on)
    lines = [f"## gpu-platform check `{report.stack}`: {verdict}", ""]
    if report.config_errors:
        lines += [f"{len(report.config_errors)} config error(s) in `{report.source}`: the stack cannot be planned, "
                  "so no policy rule ran.", ""]
    else:
        lines += [f"{len(failing) + len(undecided)} failing, {len(report.active) - len(failing)} warning(s), "
                  f"{len(report.waived)} waived, {len(undecided)} undecided, {len(report.config_warnings)} config "
                  f"warning(s); {len(rules)} rules over {report.resources} resources "
                  f"(fail on: {fail_on or 'mandatory findings'})", ""]
    rows = [["config error", "-", "-", _where(p.location), f"`{p.path}`: {p.message}"] for p in report.config_errors]
    ordered = sorted(report.active, key=lambda f: (not f.fails(fail_on), f.rule, f.urn))
    rows += [["FAIL" if f.fails(fail_on) else "WARN", f.rule,
              f"{f.severity}, {f.enforcement}", f"{_where(f.location)} {f.resource}".strip(), f.message]
             for f in ordered]
    rows += [["FAIL" if n.fails(fail_on) else "WARN", n.rule, f"cannot decide ({n.enforcement})", n.urn or "stack",
              n.reason] for n in report.notes if n.kind == "unknown"]
    rows += [["waived", f.rule, f.severity, f"{_where(f.location)} {f.resource}".strip(),
              f"{f.message} (by `{f.waived_by}`)"] for f in report.waived]
    rows += [["config warning", "-", "-", _where(p.location), f"`{p.path}`: {p.message}"]
             for p in report.config_warnings]
    lines += table(["", "rule", "severity", "where", "finding"], rows) if rows else ["No findings."]
    return "\n".join(lines)
