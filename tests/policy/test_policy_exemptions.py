"""Exemption review: malformed, thin, expired, unknown-rule and critical-rule exemptions are never applied."""
from __future__ import annotations

from datetime import date

import pytest

from components.config import ConfigError
from components.config.model import Exemption
from components.config.parse import parse
from gpu_platform.policy.exemptions import read_file, review
from policies.rules import RULES

TABLE = {rule.id: rule.exemptable for rule in RULES}
TODAY = date(2026, 6, 1)
GOOD = {"rule": "GPU001", "resource": "ml-prod-*", "reason": "pool rebuilt next window (OPS-42)", "expires": "2026-06-30"}


def reviewed(raw, *items):
    raw["policy"] = {"exemptions": list(items)}
    config, problems = parse(raw)
    assert not problems.errors, problems.errors
    return review(config.policy, TABLE, TODAY)


def test_a_good_exemption_is_active(raw):
    result = reviewed(raw, GOOD)
    assert result.issues == [] and [p for p, _ in result.active] == ["policy.exemptions[0]"]


@pytest.mark.parametrize("change, path, message", [
    ({"reason": "temporary"}, "policy.exemptions[1].reason", "at least 20 characters and 3 different words; got 9 characters"),
    ({"expires": "2026-05-31"}, "policy.exemptions[1].expires", "expired on 2026-05-31"),
    ({"rule": "GPU999"}, "policy.exemptions[1].rule", "unknown rule 'GPU999'"),
    ({"rule": "GPU007"}, "policy.exemptions[1].rule", "GPU007 cannot be exempted"),
    ({"rule": "GPU000"}, "policy.exemptions[1].rule", "GPU000 cannot be exempted"),
    ({"expires": "next week"}, "policy.exemptions[1].expires", "must be a date YYYY-MM-DD"),
    ({"resource": None}, "policy.exemptions[1].resource", "is required"),
])
def test_a_bad_exemption_is_an_issue_not_applied(raw, change, path, message):
    bad = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    result = reviewed(raw, GOOD, bad)
    assert [(i.path, message in i.message) for i in result.issues] == [(path, True)]
    assert [p for p, _ in result.active] == ["policy.exemptions[0]"]


def test_paths_keep_config_positions_around_malformed_items(raw):
    result = reviewed(raw, {"rule": "GPU001"}, {**GOOD, "expires": "2020-01-01"})
    assert [i.path for i in result.issues] == ["policy.exemptions[0].resource", "policy.exemptions[0].reason",
                                               "policy.exemptions[0].expires", "policy.exemptions[1].expires"]


def test_globs_match_names_and_usage_is_recorded(raw):
    result = reviewed(raw, GOOD)
    assert result.waive("GPU001", "urn:x", ["ml-prod-h100-train"], "m") is not None
    assert result.waive("GPU002", "urn:x", ["ml-prod-h100-train"], "m") is None
    assert result.waive("GPU001", "urn:y", ["ml-dev-h100"], "m") is None
    assert [(u.rule, u.urn) for u in result.used] == [("GPU001", "urn:x")]


def test_exemptions_file_shapes():
    expected = Exemption("GPU001", "ml-prod-*", GOOD["reason"], date(2026, 6, 30))
    for document in ([GOOD], {"exemptions": [GOOD]}, {"policy": {"exemptions": [GOOD]}}):
        assert read_file(document, "x.yaml").exemptions == (expected,)
    with pytest.raises(ConfigError, match="policy.surprise: unknown key"):
        read_file({"surprise": 1}, "x.yaml")


def test_every_problem_of_one_exemption_is_reported_at_once(raw):
    bad = {"rule": "GPU999", "resource": "*", "reason": "temporary", "expires": "2020-01-01"}
    result = reviewed(raw, GOOD, bad)
    assert [i.path for i in result.issues] == ["policy.exemptions[1].rule", "policy.exemptions[1].resource",
                                               "policy.exemptions[1].reason", "policy.exemptions[1].expires"]
    assert [p for p, _ in result.active] == ["policy.exemptions[0]"]
