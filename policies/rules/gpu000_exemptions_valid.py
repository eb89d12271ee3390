"""GPU000: every declared exemption is well formed, reasoned, unexpired, and names an exemptable rule."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import context
from policies.graph import Graph
from policies.exemptions import DEFAULT_MAX_DAYS, MAX_DAYS_CEILING, MIN_REASON, MIN_WORDS
from policies.rule import Report, stack_rule


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    exemptions = context.current().exemptions
    if not exemptions.declared and not exemptions.issues:
        args.not_applicable("no exemptions declared")
    for issue in exemptions.issues:
        report(f"{issue.path}: {issue.message}")


RULE = stack_rule(
    id="GPU000", slug="exemptions-valid",
    title="Policy exemptions are well formed, reasoned, unexpired and never waive a critical rule",
    rationale=(f"An exemption (`gpu-platform:policy.exemptions`) waives one rule for the resources its name or "
               f"glob matches, until its expiry date. One that cannot be read, gives a reason shorter than "
               f"{MIN_REASON} characters or {MIN_WORDS} different words (invisible characters do not count), "
               f"expires more than `policy.maxExemptionDays` (default {DEFAULT_MAX_DAYS}, at most "
               f"{MAX_DAYS_CEILING}) days ahead or has expired, can match every resource (a glob with no literal "
               "part of 3 letters or digits, such as `*`, `*-*` or `[a-z]*`, or a glob over URNs, which are only "
               "matched in full), names an unknown "
               "rule or a critical one is not applied, and is reported here so it is fixed rather than silently "
               "ignored. This rule itself cannot be exempted."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Give every exemption `rule` (a GPU0NN id), `resource` (a Pulumi resource name or a glob naming some "
        f"resources by a literal part, such as `ml-prod-l4-*`, never `*` alone), `reason` (at least {MIN_REASON} characters and {MIN_WORDS} words: why, and "
        f"who owns the follow-up) and `expires` (YYYY-MM-DD, at most {DEFAULT_MAX_DAYS} days ahead unless "
        "`policy.maxExemptionDays` says otherwise).",
        "Renew an expired exemption only with a new reason and date, or fix the finding and delete it.",
        "Critical rules (GPU007) cannot be exempted: fix the resource.",
    ),
    config_key="policy",
    check=check,
    exemptable=False,
)
