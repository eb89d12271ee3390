"""Evaluate the policy pack's own policy objects against an offline plan, as the Pulumi analyzer would.

The plan's resources become the SDK's `PolicyResource`s (properties behind the same unknown-checking proxy),
each `ResourceValidationPolicy` sees every resource through `ResourceValidationArgs`, each
`StackValidationPolicy` sees them all through `StackValidationArgs`; unknown values and not-applicable
results are recorded the way the analyzer records them.
"""
from __future__ import annotations

import asyncio
import copy
from inspect import isawaitable
from typing import Any, Iterable

from pulumi_policy import (
    EnforcementLevel, PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions, ResourceValidationArgs,
    ResourceValidationPolicy, StackValidationArgs,
)
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from components.config import Problem
from gpu_platform.engine.plan import Plan, PlannedResource
from gpu_platform.policy.findings import ConfigProblem, Finding, Note, Report
from policies.context import StackContext, using
from policies.props import get
from policies.rule import Rule
from policies.shapes import POOL_COMPONENT


def policy_resources(resources: Iterable[PlannedResource]) -> list[PolicyResource]:
    """Plan resources as the analyzer hands them to stack policies: parents and dependencies linked."""
    built: dict[str, PolicyResource] = {}
    planned = list(resources)
    for r in planned:
        opts = PolicyResourceOptions(
            protect=bool(r.options.get("protect")), ignore_changes=list(r.options.get("ignoreChanges") or []),
            delete_before_replace=None, aliases=[], custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
            additional_secret_outputs=[], parent=r.parent or None)
        built[r.urn] = PolicyResource(r.type, unknown_checking_proxy(copy.deepcopy(r.inputs)), r.urn, r.name, opts,
                                      None, None, [], {})
    for r in planned:
        resource = built[r.urn]
        resource.parent = built.get(r.parent)
        resource.dependencies = [built[d] for d in r.options.get("dependsOn") or [] if d in built]
    return list(built.values())


def _run(result: Any) -> None:
    if isawaitable(result):
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(result)
        finally:
            loop.close()


def evaluate(plan: Plan, ctx: StackContext, rules: Iterable[Rule]) -> Report:
    """Run every enabled rule over `plan` with `ctx`'s environment and exemptions."""
    rules = list(rules)
    resources = policy_resources(plan.resources)
    report = Report(stack=plan.stack, source=plan.stack_file, exemptions=ctx.exemptions, resources=len(resources))
    with using(ctx):
        for rule in rules:
            if rule.enforcement is EnforcementLevel.DISABLED:
                continue
            _evaluate_rule(rule, resources, report)
    by_urn = {r.urn: r for r in resources}
    for use in ctx.exemptions.used:
        target = by_urn.get(use.urn)
        rule = next(r for r in rules if r.id == use.rule)
        report.findings.append(_finding(rule, use.message, use.urn, target, waived_by=use.path))
    return report


def _evaluate_rule(rule: Rule, resources: list[PolicyResource], report: Report) -> None:
    by_urn = {r.urn: r for r in resources}

    def collector(default: PolicyResource | None):
        def report_violation(message: str, urn: str | None = None) -> None:
            target = default if default is not None else by_urn.get(urn or "")
            report.findings.append(_finding(rule, message, target.urn if target else urn or "", target))
        return report_violation

    if isinstance(rule.policy, ResourceValidationPolicy):
        for resource in resources:
            args = ResourceValidationArgs(resource.resource_type, resource.props, resource.urn, resource.name,
                                          resource.opts, None)
            _guarded(rule, report, resource.urn, lambda: rule.policy.validate(args, collector(resource)))
    else:
        args = StackValidationArgs(resources)
        _guarded(rule, report, "", lambda: rule.policy.validate(args, collector(None)))


def _guarded(rule: Rule, report: Report, urn: str, call) -> None:
    try:
        _run(call())
    except UnknownValueError as exc:
        report.notes.append(Note(rule.id, "unknown", exc.message, urn, rule.enforcement.value))
    except _NotApplicableError as exc:
        report.notes.append(Note(rule.id, "not-applicable", exc.reason or "", urn, rule.enforcement.value))


def _finding(rule: Rule, message: str, urn: str, target: PolicyResource | None, waived_by: str = "") -> Finding:
    return Finding(rule=rule.id, policy=rule.policy.name, severity=rule.severity.value,
                   enforcement=rule.enforcement.value, message=message, urn=urn,
                   resource=target.name if target else "", resource_type=target.resource_type if target else "",
                   subject=subject_of(target), waived_by=waived_by)


def subject_of(resource: PolicyResource | None) -> str:
    """The config pool (`pool:<name>`) or namespace (`namespace:<name>`) a resource belongs to, when it has one."""
    node = resource
    while node is not None:
        if node.resource_type == POOL_COMPONENT:
            return f"pool:{get(node.props, 'poolName', node.name)}"
        node = node.parent
    if resource is None:
        return ""
    try:
        kind, namespace, name = (get(resource.props, "kind"), get(resource.props, "metadata.namespace"),
                                 get(resource.props, "metadata.name"))
    except UnknownValueError:
        return ""
    if namespace:
        return f"namespace:{namespace}"
    return f"namespace:{name}" if kind == "Namespace" or resource.resource_type == "kubernetes:core/v1:Namespace" else ""


def check(plan: Plan, ctx: StackContext, location_file: str | None = None,
          warnings: Iterable[str] = ()) -> Report:
    """Evaluate every rule of the pack and point each finding, and each config warning (`path: message`), at its
    line in `location_file` (the stack file, or a plan file)."""
    from dataclasses import replace

    from gpu_platform.policy.locate import StackFile, display_path
    from policies.rules import BY_ID, RULES

    report = evaluate(plan, ctx, RULES)
    source = location_file or plan.stack_file
    warnings = [config_problem(text, warning=True) for text in warnings]
    if source:
        report.source = display_path(source)
    if source and (report.findings or warnings):  # parsing the file for lines costs more than the rules: only if used
        lines = StackFile(source)
        report.findings = [replace(f, location=lines.locate(f, BY_ID[f.rule].config_key)) for f in report.findings]
        warnings = [replace(w, location=lines.at(w.path)) for w in warnings]
    report.config = warnings
    return report


def config_problem(text: str, warning: bool) -> ConfigProblem:
    """A config warning as the config carries it (`str(Problem)`: `path: message`) back into its parts."""
    path, _, message = text.partition(": ")
    return ConfigProblem(path, message, warning)


def invalid_config_report(stack: str, stack_file: str, problems: Iterable[Problem]) -> Report:
    """The report of a stack whose config is invalid: no rule ran; every problem at the line that sets it."""
    from gpu_platform.policy.locate import StackFile, display_path

    lines = StackFile(stack_file)
    return Report(stack=stack, source=display_path(stack_file),
                  config=[ConfigProblem(p.path, p.message, p.warning, lines.at(p.path)) for p in problems])
