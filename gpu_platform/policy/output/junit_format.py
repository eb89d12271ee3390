"""JUnit XML for CI test views: one test case per finding (failure, or skipped when waived), one passing case
per rule without findings, exemptions, config warnings and skipped checks in the suite's output; an invalid
stack config is one failing case per error (no rule ran)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Sequence

from gpu_platform.policy.findings import Report
from policies.rule import Rule


def render(report: Report, rules: Sequence[Rule], fail_on: str | None) -> str:
    suite = ET.Element("testsuite", name=f"gpu-platform policy: {report.stack}")
    failures = skipped = 0
    for problem in report.config_errors:  # the stack cannot be planned: no rule ran, each error is a failure
        failures += 1
        case = ET.SubElement(suite, "testcase", classname=f"{report.stack}.config", name=f"config {problem.path}")
        where = f"{problem.location.path}:{problem.location.line}\n" if problem.location else ""
        ET.SubElement(case, "failure", message=f"{problem.path}: {problem.message}",
                      type="invalid stack config").text = f"{where}{problem.path}: {problem.message}"
    if report.config_errors:
        rules = ()
    for rule in rules:
        findings = [f for f in report.findings if f.rule == rule.id]
        if not findings:
            ET.SubElement(suite, "testcase", classname=f"{report.stack}.{rule.id}", name=f"{rule.id} {rule.slug}")
            continue
        for finding in findings:
            case = ET.SubElement(suite, "testcase", classname=f"{report.stack}.{rule.id}",
                                 name=f"{rule.id} {finding.resource or 'stack'}")
            where = f"{finding.location.path}:{finding.location.line}\n" if finding.location else ""
            text = f"{where}{finding.urn}\n{finding.message}\nfix: {rule.docs_url}"
            if finding.waived_by:
                skipped += 1
                ET.SubElement(case, "skipped", message=f"waived by {finding.waived_by}").text = text
            elif finding.fails(fail_on):
                failures += 1
                ET.SubElement(case, "failure", message=finding.message,
                              type=f"{rule.id} {finding.severity} {finding.enforcement}").text = text
            else:
                ET.SubElement(case, "system-out").text = f"not failing ({finding.enforcement}):\n{text}"
    lines = [f"warning: {p.path}: {p.message}" + (f" ({p.location.path}:{p.location.line})" if p.location else "")
             for p in report.config_warnings]
    lines += [f"exemption {path}: {ex.rule} {ex.resource!r} until {ex.expires.isoformat()}: {ex.reason}"
             for path, ex in report.exemptions.declared]
    lines += [f"exemption {u.path} waived {u.rule} on {u.urn or 'stack'}" for u in report.exemptions.used]
    lines += [f"skipped {n.rule} {n.urn or 'stack'}: {n.reason}" for n in report.notes if n.kind == "unknown"]
    ET.SubElement(suite, "system-out").text = "\n".join(lines)
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    suites = ET.Element("testsuites", name="gpu-platform policy")
    suites.append(suite)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")
