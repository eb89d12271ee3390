"""GPU014 (team Pod Security), GPU015 (team default-deny NetworkPolicy) and GPU018 (no built-in group in a team's
RoleBindings): compliant fixtures, then one changed field per failing case, not-applicable, unknown-at-preview and
exemption cases."""
from __future__ import annotations

from datetime import timedelta

import pytest

from policy_fixtures import TODAY, UNKNOWN, assert_undecided, drop, ids, inputs, load, new_ids, notes, run
from policies.rules import BY_ID, RULES

NAMESPACE = "kubernetes:core/v1:Namespace"
NETPOL = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
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


def edit_for_every_identity(plan):
    inputs(plan, ROLE_BINDING, "research-edit")["subjects"][0]["name"] = "system:authenticated"


def queue_for_every_service_account(plan):
    inputs(plan, ROLE_BINDING, "kueue-user-serving")["subjects"].append(
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:serviceaccounts"})


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
    ("GPU018", "aws-prod", edit_for_every_identity, "RoleBinding research/team-edit grants 'edit' in team namespace "
                                                    "'research' to built-in group(s) system:authenticated",
     "research-edit"),
    ("GPU018", "aws-prod", queue_for_every_service_account, "'serving' to built-in group(s) system:serviceaccounts",
     "kueue-user-*"),
]


def _case_id(case) -> str:
    return f"{case[0]}-{case[2].__name__}"


@pytest.mark.parametrize("fixture", ["aws-prod", "gcp-dev"])
def test_fixtures_are_compliant(fixture):
    report = run(load(fixture), "GPU014", "GPU015", "GPU018")
    assert report.findings == []
    assert [n for rule in ("GPU014", "GPU015", "GPU018") for n in notes(report, rule, "not-applicable")] == []


@pytest.mark.parametrize("case", FAILING, ids=_case_id)
def test_one_changed_field_fails_exactly_that_rule(case):
    rule, fixture, change, expected, _ = case
    plan = load(fixture)
    change(plan)
    report = run(plan, *(r.id for r in RULES))
    assert set(new_ids(report, fixture)) == {rule}
    assert any(expected in f.message for f in report.findings), [f.message for f in report.findings]
    assert report.exit_code() == 1


def alone(plan):
    """gcp-dev's beta can use no pool (Volcano, no Kueue: its quota admits no GPU), so alpha is every pool's only
    tenant."""
    inputs(plan, "kubernetes:core/v1:ResourceQuota", "beta-gpu-quota")["spec"]["hard"]["requests.nvidia.com/gpu"] = "0"


def privileged_alone(plan):
    volcano_team_privileged(plan)
    alone(plan)


# A privileged team sharing a pool is also reported on the pool, which its namespace's exemption does not cover
# (test_a_privileged_team_sharing_a_pool_...): the exemption is shown on a privileged team alone on its pools.
PRIVILEGED_ALONE = (privileged, volcano_team_privileged)


@pytest.mark.parametrize("case", FAILING, ids=_case_id)
def test_exemption_waives_the_finding(case):
    rule, fixture, change, _, glob = case
    if change in PRIVILEGED_ALONE:
        fixture, change, glob = "gcp-dev", privileged_alone, "alpha-namespace"
    plan = load(fixture)
    change(plan)
    report = run(plan, rule, exemptions=((rule, glob, REASON, TODAY + timedelta(days=30)),))
    assert ids(report) == []
    assert {u.rule for u in report.exemptions.used} == {rule}


@pytest.mark.parametrize("rule", ["GPU014", "GPU015", "GPU018"])
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
    ("GPU018", ROLE_BINDING, "research-edit", "subjects"),
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
    for rule in (BY_ID["GPU014"], BY_ID["GPU015"], BY_ID["GPU018"]):
        assert (rule.severity.value, rule.enforcement.value, rule.exemptable) == ("high", "mandatory", True)
        assert rule.remediation and rule.config_key == "teams"


@pytest.mark.parametrize("policy_label", [False, True])
def test_a_privileged_team_sharing_a_pool_is_a_finding_its_namespace_exemption_does_not_waive(policy_label):
    """aws-prod's research shares h100-train with applied: privileged there is root on applied's nodes, whether
    exempted (GPU014 waives the namespace) or held to baseline-plus-sidecar by the fabric policy (its sidecar's host
    mounts are reachable through pods/exec)."""
    plan = load("aws-prod")
    labels(plan)[ENFORCE] = "privileged"
    if policy_label:
        labels(plan)["gpu-platform.io/pod-security-policy"] = "gpu-platform-fabric-baseline-research"
    exempt = (("GPU014", "research-namespace", REASON, TODAY + timedelta(days=30)),)
    report = run(plan, "GPU014", exemptions=exempt)
    shared = [f.message for f in report.active if "root on their nodes" in f.message]
    assert shared == ["team namespace 'research' enforces 'privileged' (its pods can reach the host) on pool "
                      "'h100-train', which applied can also use: it is root on their nodes; only a pool's single "
                      "tenant may run privileged there"]


def test_a_privileged_team_alone_on_its_pools_shares_nothing():
    plan = load("gcp-dev")
    privileged_alone(plan)
    report = run(plan, "GPU014")
    assert not [f for f in report.findings if "root on their nodes" in f.message]
