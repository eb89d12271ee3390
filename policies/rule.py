"""One rule = stable id + slug + metadata + the pulumi_policy object that checks it.

Rules report through `Report`, which waives a finding an active exemption covers (never for critical rules),
so the Pulumi CLI and the offline runner honour the same exemptions.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, TypeVar

from pulumi_policy import (
    EnforcementLevel, Policy, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy, Severity,
    StackValidationArgs, StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from policies import context
from policies.graph import Graph

DOCS = "RULES.md"
TAG = "gpu-platform"


@dataclass(frozen=True)
class Rule:
    """A rule's stable identity and documentation, next to the SDK policy that enforces it."""

    id: str  # GPU0NN, never reused
    slug: str
    title: str  # one line: what must hold
    rationale: str  # why, in a few sentences
    severity: Severity
    enforcement: EnforcementLevel
    remediation: tuple[str, ...]  # steps, in order
    config_key: str  # the stack config key a fix usually touches (SARIF points there when no pool/team does)
    exemptable: bool  # critical rules never are
    policy: Policy

    @property
    def docs_url(self) -> str:
        return f"{DOCS}#{self.id.lower()}"

    @property
    def kind(self) -> str:
        return "resource" if isinstance(self.policy, ResourceValidationPolicy) else "stack"


class Report:
    """Report a violation of one rule, unless an active exemption covers the resource it names."""

    def __init__(self, rule_id: str, exemptable: bool, sdk_report: ReportViolation,
                 urn: str | None = None, name: str | None = None):
        self._rule_id = rule_id
        self._exemptable = exemptable
        self._sdk_report = sdk_report
        self._urn = urn  # set for resource policies: the resource under validation
        self._name = name

    def __call__(self, message: str, urn: str | None = None) -> None:
        target = urn or self._urn or ""
        name = self._name if not urn else urn.rsplit("::", 1)[-1]
        if self._exemptable and context.current().exemptions.waive(self._rule_id, target, (name or "", target),
                                                                    message):
            return
        # A resource policy's violation is always about its resource: the SDK ignores any urn passed.
        self._sdk_report(message, urn)


class Pending:
    """Check each part that is known during preview; raise the first unknown only after every known part.

    The analyzer turns that exception into an advisory "can't run during preview" note next to the violations
    already reported, instead of one unknown field hiding every other pool's result.
    """

    def __init__(self) -> None:
        self.first: UnknownValueError | None = None

    @contextmanager
    def each(self) -> Iterator[None]:
        try:
            yield
        except UnknownValueError as exc:
            self.first = self.first or exc

    def finish(self) -> None:
        if self.first is not None:
            raise self.first


T = TypeVar("T")


def check_each(parts: Iterable[T], check: Callable[[T], None], pending: Pending | None = None) -> None:
    """Run `check` on every part; an unknown value is raised only once every known part was checked (`Pending`).

    `pending` carries an unknown met before the parts, so it too waits for them.
    """
    pending = pending if pending is not None else Pending()
    for part in parts:
        with pending.each():
            check(part)
    pending.finish()


ResourceCheck = Callable[[ResourceValidationArgs, Report], None]
StackCheck = Callable[[StackValidationArgs, Graph, Report], None]


def _steps(remediation: tuple[str, ...]) -> str:
    return "\n".join(f"{i}. {step}" for i, step in enumerate(remediation, 1))


def resource_rule(*, id: str, slug: str, title: str, rationale: str, severity: Severity,
                  enforcement: EnforcementLevel, remediation: tuple[str, ...], config_key: str,
                  types: tuple[str, ...], check: ResourceCheck) -> Rule:
    """A rule validating each resource of `types` on its own (SDK `Analyze`)."""
    exemptable = severity is not Severity.CRITICAL

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if args.resource_type not in types:
            return
        check(args, Report(id, exemptable, report_violation, args.urn, args.name))

    policy = ResourceValidationPolicy(
        name=f"{id.lower()}-{slug}", description=title, validate=validate, enforcement_level=enforcement,
        severity=severity, display_name=f"{id}: {title}", remediation_steps=_steps(remediation),
        url=f"{DOCS}#{id.lower()}", tags=[TAG, id])
    return Rule(id, slug, title, rationale, severity, enforcement, remediation, config_key, exemptable, policy)


def stack_rule(*, id: str, slug: str, title: str, rationale: str, severity: Severity,
               enforcement: EnforcementLevel, remediation: tuple[str, ...], config_key: str,
               check: StackCheck, exemptable: bool = True) -> Rule:
    """A rule validating the whole resource graph (SDK `AnalyzeStack`)."""
    exemptable = exemptable and severity is not Severity.CRITICAL

    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        check(args, Graph(args.resources), Report(id, exemptable, report_violation))

    policy = StackValidationPolicy(
        name=f"{id.lower()}-{slug}", description=title, validate=validate, enforcement_level=enforcement,
        severity=severity, display_name=f"{id}: {title}", remediation_steps=_steps(remediation),
        url=f"{DOCS}#{id.lower()}", tags=[TAG, id])
    return Rule(id, slug, title, rationale, severity, enforcement, remediation, config_key, exemptable, policy)
