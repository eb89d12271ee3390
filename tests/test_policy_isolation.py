"""GPU014 (team Pod Security) and GPU015 (team default-deny NetworkPolicy): compliant fixtures, then one changed
field per failing case, not-applicable, unknown-at-preview and exemption cases."""
from __future__ import annotations

from datetime import timedelta

import pytest

from policy_fixtures import TODAY, UNKNOWN, assert_undecided, drop, ids, inputs, load, new_ids, notes, run
from policies.rules import BY_ID, RULES

NAMESPACE = "kubernetes:core/v1:Namespace"
NETPOL = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
TEAM = "gpu-platform:tenancy:Team"
ENFORCE = "pod-security.kubernetes.io/enforce"
REASON = "legacy notebook image needs NET_RAW until PLAT-456 lands (owner: platform team)"


def labels(plan, namespace="research-namespace"):
    return inputs(plan, NAMESPACE, namespace)["metadata"]["labels"]


def privileged(plan):
    labels(plan)[ENFORCE] = "privileged"


def unlabelled(plan):
    del labels(plan)[ENFORCE]


def no_namespace_object(plan):
    drop(plan, NAMESPACE, "research-namespace")


def volcano_team_privileged(plan):
    labels(plan, "alpha-namespace")[ENFORCE] = "privileged"


def no_default_deny(plan):
    drop(plan, NETPOL, "research-default-deny")


def ingress_only_deny(plan):
    inputs(plan, NETPOL, "research-default-deny")["spec"]["policyTypes"] = ["Ingress"]


def deny_selects_some_pods(plan):
    inputs(plan, NETPOL, "research-default-deny")["spec"]["podSelector"] = {"matchLabels": {"app": "web"}}


def scrape_from_every_namespace(plan):
    rule = inputs(plan, NETPOL, "research-allow-prometheus-scrape")["spec"]["ingress"][0]
    rule["from"][0]["namespaceSelector"] = {}


def internet_without_exceptions(plan):
    block = inputs(plan, NETPOL, "research-allow-internet-egress")["spec"]["egress"][0]["to"][0]["ipBlock"]
    del block["except"]


def dns_rule_without_peers(plan):
    del inputs(plan, NETPOL, "research-allow-dns")["spec"]["egress"][0]["to"]


def deny_with_an_allowance(plan):
    inputs(plan, NETPOL, "research-default-deny")["spec"]["ingress"] = [{"from": [{"podSelector": {}}]}]


def volcano_team_no_deny(plan):
    drop(plan, NETPOL, "alpha-default-deny")


# rule, fixture, change, what the message says, resource an exemption names (glob)
FAILING = [
    ("GPU014", "aws-prod", privileged, "'research' enforces 'privileged'", "research-namespace"),
    ("GPU014", "aws-prod", unlabelled, "has no pod-security.kubernetes.io/enforce label", "research-*"),
    ("GPU014", "aws-prod", no_namespace_object, "'research' has no Namespace object", "research"),
    ("GPU014", "gcp-dev", volcano_team_privileged, "'alpha' enforces 'privileged'", "alpha-namespace"),
    ("GPU015", "aws-prod", no_default_deny, "'research' has no default-deny NetworkPolicy (every pod, no "
                                            "rules) for Ingress and Egress", "research-namespace"),
    ("GPU015", "aws-prod", ingress_only_deny, "'research' has no default-deny NetworkPolicy (every pod, no "
                                             "rules) for Egress",
     "research-namespace"),
    ("GPU015", "aws-prod", deny_selects_some_pods, "for Ingress and Egress", "research-namespace"),
    ("GPU015", "aws-prod", scrape_from_every_namespace, "research/allow-prometheus-scrape has an ingress rule "
                                                        "reaching every namespace", "research-allow-*"),
    ("GPU015", "aws-prod", internet_without_exceptions, "research/allow-internet-egress has an egress rule reaching "
                                                        "every namespace or address", "research-allow-*"),
    ("GPU015", "aws-prod", dns_rule_without_peers, "egress rule without `to`", "research-allow-dns"),
    ("GPU015", "aws-prod", deny_with_an_allowance, "'research' has no default-deny", "research-namespace"),
    ("GPU015", "gcp-dev", volcano_team_no_deny, "'alpha' has no default-deny NetworkPolicy", "alpha-namespace"),
]


def _case_id(case) -> str:
    return f"{case[0]}-{case[2].__name__}"


@pytest.mark.parametrize("fixture", ["aws-prod", "gcp-dev"])
def test_fixtures_are_compliant(fixture):
    report = run(load(fixture), "GPU014", "GPU015")
    assert report.findings == []
    assert notes(report, "GPU014", "not-applicable") == notes(report, "GPU015", "not-applicable") == []


@pytest.mark.parametrize("case", FAILING, ids=_case_id)
def test_one_changed_field_fails_exactly_that_rule(case):
    rule, fixture, change, expected, _ = case
    plan = load(fixture)
    change(plan)
    report = run(plan, *(r.id for r in RULES))
    assert set(new_ids(report, fixture)) == {rule}
    assert any(expected in f.message for f in report.findings), [f.message for f in report.findings]
    assert report.exit_code() == 1


@pytest.mark.parametrize("case", FAILING, ids=_case_id)
def test_exemption_waives_the_finding(case):
    rule, fixture, change, _, glob = case
    plan = load(fixture)
    change(plan)
    report = run(plan, rule, exemptions=((rule, glob, REASON, TODAY + timedelta(days=30)),))
    assert ids(report) == []
    assert {u.rule for u in report.exemptions.used} == {rule}


@pytest.mark.parametrize("rule", ["GPU014", "GPU015"])
def test_not_applicable_without_team_namespaces(rule):
    plan = load("aws-prod")
    for type_ in (NAMESPACE, TEAM):
        drop(plan, type_)
    report = run(plan, rule)
    assert "no team namespaces (Namespaces labelled gpu-platform.io/team)" in notes(report, rule, "not-applicable")
    assert [f for f in report.findings if f.rule == rule] == []


@pytest.mark.parametrize("rule, type_, name, field", [
    ("GPU014", NAMESPACE, "research-namespace", "metadata"),
    ("GPU015", NETPOL, "research-default-deny", "spec"),
])
def test_unknown_at_preview_is_skipped_with_reason(rule, type_, name, field):
    plan = load("aws-prod")
    inputs(plan, type_, name)[field] = UNKNOWN
    report = run(plan, rule)
    assert_undecided(report, rule)


def test_restricted_is_strict_enough():
    plan = load("aws-prod")
    labels(plan)[ENFORCE] = "restricted"
    assert run(plan, "GPU014").findings == []


def test_egress_none_is_still_compliant():
    plan = load("aws-prod")
    drop(plan, NETPOL, "research-allow-internet-egress")
    assert run(plan, "GPU015").findings == []


def test_rules_are_high_and_mandatory():
    for rule in (BY_ID["GPU014"], BY_ID["GPU015"]):
        assert (rule.severity.value, rule.enforcement.value, rule.exemptable) == ("high", "mandatory", True)
        assert rule.remediation and rule.config_key == "teams"
