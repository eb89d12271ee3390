"""Observability config: reclaim, Prometheus URL, pending threshold and team opt-in, with their path-named errors."""
from __future__ import annotations

import pytest

from components.config import validate

from support.validation import reported_at


def test_defaults_keep_reclaim_off_and_dry_run_on(raw):
    obs = validate(raw).observability
    assert (obs.reclaim.enabled, obs.reclaim.dry_run, obs.reclaim.schedule) == (False, True, "*/10 * * * *")
    assert obs.prometheus.url is None
    assert obs.slo.pending_minutes == 60
    assert [t.reclaim for t in validate(raw).teams] == [False, False]


def test_reclaim_settings_are_read(raw):
    raw["observability"] = {"reclaim": {"enabled": True, "dryRun": False, "schedule": "@hourly"},
                            "prometheus": {"install": False, "url": "http://prometheus.obs.svc:9090"},
                            "slo": {"pendingMinutes": 90}}
    raw["teams"][1]["reclaim"] = True
    config = validate(raw)
    obs = config.observability
    assert (obs.reclaim.enabled, obs.reclaim.dry_run, obs.reclaim.schedule) == (True, False, "@hourly")
    assert obs.prometheus.url == "http://prometheus.obs.svc:9090"
    assert obs.slo.pending_minutes == 90
    assert [t.reclaim for t in config.teams] == [False, True]
    # The base config leaves capacity unreachable (warned at teams[].quotas); nothing about reclaim is warned.
    assert [w for w in config.warnings if not w.startswith("teams[].quotas.")] == []


@pytest.mark.parametrize("change, path, fragment", [
    (lambda r: r.update(observability={"reclaim": {"enabled": "yes"}}), "observability.reclaim.enabled", "true or false"),
    (lambda r: r.update(observability={"reclaim": {"dryRun": "no"}}), "observability.reclaim.dryRun", "true or false"),
    (lambda r: r.update(observability={"reclaim": {"schedule": "every 10 minutes"}}), "observability.reclaim.schedule",
     'a cron schedule like "*/10 * * * *"'),
    (lambda r: r.update(observability={"reclaim": {"schedule": "*/10 * * *"}}), "observability.reclaim.schedule",
     "cron schedule"),
    (lambda r: r.update(observability={"reclaim": {"schedule": 10}}), "observability.reclaim.schedule", "must be a string"),
    (lambda r: r.update(observability={"reclaim": {"enable": True}}), "observability.reclaim.enable",
     "allowed: enabled, dryRun, schedule"),
    (lambda r: r.update(observability={"reclaim": True}), "observability.reclaim", "must be a mapping"),
    (lambda r: r.update(observability={"dcgm": False, "reclaim": {"enabled": True}}), "observability.reclaim.enabled",
     "needs observability.dcgm: true"),
    (lambda r: r.update(observability={"prometheus": {"install": False}, "reclaim": {"enabled": True}}),
     "observability.prometheus.url", "is required when observability.reclaim.enabled and prometheus.install is false"),
    (lambda r: r.update(observability={"prometheus": {"url": "prometheus:9090"}}), "observability.prometheus.url",
     "an http:// or https:// URL"),
    (lambda r: r.update(observability={"slo": {"pendingMinutes": 0}}), "observability.slo.pendingMinutes", ">= 1"),
    (lambda r: r.update(observability={"slo": {"pendingMinutes": "1h"}}), "observability.slo.pendingMinutes",
     "whole number"),
    (lambda r: r["teams"][0].update(reclaim="yes"), "teams[0].reclaim", "true or false"),
])
def test_each_bad_field_is_reported_at_its_path(raw, change, path, fragment):
    change(raw)
    assert fragment in reported_at(raw, path)


def test_reclaim_without_any_opted_in_team_warns(raw):
    raw["observability"] = {"reclaim": {"enabled": True}}
    warnings = validate(raw).warnings
    assert any(w.startswith("observability.reclaim.enabled") and "no team sets reclaim: true" in w for w in warnings)


def test_team_opt_in_without_the_reclaimer_warns(raw):
    raw["teams"][0]["reclaim"] = True
    warnings = validate(raw).warnings
    assert any(w.startswith("teams[0].reclaim") and "no effect" in w for w in warnings)


def test_an_explicit_prometheus_url_satisfies_reclaim_on_an_existing_prometheus(raw):
    raw["observability"] = {"prometheus": {"install": False, "url": "https://prom.example.com/"},
                            "reclaim": {"enabled": True}}
    raw["teams"][0]["reclaim"] = True
    assert validate(raw).observability.reclaim.enabled is True
