"""Compliant plan fixtures (trimmed `gpu-platform plan --format json` of aws-prod and gcp-dev) and helpers to
change one field and evaluate rules on the result."""
from __future__ import annotations

import copy
import json
from datetime import date
from pathlib import Path

from components.config.model import Exemption, Policy
from gpu_platform.engine.plan import Plan
from gpu_platform.policy.runner import evaluate
from policies import context
from policies.rules import BY_ID

HERE = Path(__file__).parent
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # how the engine marks a value known only after deployment
TODAY = date(2026, 6, 1)
ENVIRONMENTS = {"aws-prod": "production", "gcp-dev": "development",  # as their stack files say
                "gcp-dev-kai": "development"}  # gcp-dev with scheduler.kind: kai
_CACHE: dict[str, dict] = {}


def load(name: str) -> dict:
    """A fresh copy of fixture `name` (aws-prod, gcp-dev) as plan JSON."""
    if name not in _CACHE:
        _CACHE[name] = json.loads((HERE / f"{name}.plan.json").read_text())
    return copy.deepcopy(_CACHE[name])


def resource(plan: dict, type_: str, name: str | None = None) -> dict:
    """The plan entry of the first resource of `type_` (named `name`)."""
    return next(r for r in plan["resources"] if r["type"] == type_ and (name is None or r["name"] == name))


def inputs(plan: dict, type_: str, name: str | None = None) -> dict:
    return resource(plan, type_, name)["inputs"]


def drop(plan: dict, type_: str, name: str | None = None) -> None:
    plan["resources"] = [r for r in plan["resources"]
                         if not (r["type"] == type_ and (name is None or r["name"] == name))]


def run(plan: dict, *rule_ids: str, environment: str | None = "", exemptions: tuple = (), today: date = TODAY):
    """Evaluate `rule_ids` (and GPU000) on `plan` in the fixture's environment (unless given);
    exemptions are (rule, resource, reason, expires) tuples."""
    environment = ENVIRONMENTS[plan["stack"]] if environment == "" else environment
    declared = tuple(Exemption(rule, res, reason, expires) for rule, res, reason, expires in exemptions)
    ctx = context.build(environment, Policy(exemptions=declared), today)
    rules = [BY_ID["GPU000"], *(BY_ID[i] for i in rule_ids if i != "GPU000")]
    return evaluate(Plan.from_json(plan), ctx, rules)


def ids(report) -> list[str]:
    """Rule ids of the findings that were not waived, sorted."""
    return sorted(f.rule for f in report.active)


# What the example stacks really say, kept by their fixtures: aws-prod's queues reach 24 of h100-train's 32 GPUs
# and 32 of l4-notebooks' 64 replicas (GPU019, advisory).
KNOWN = {"aws-prod": ["GPU019", "GPU019"], "gcp-dev": [], "gcp-dev-kai": []}


def new_ids(report, fixture: str) -> list[str]:
    """Rule ids of the findings a change adds to what its fixture already reports (of the rules run)."""
    found = ids(report)
    for rule in KNOWN[fixture]:
        if rule in found:
            found.remove(rule)
    return found


def notes(report, rule: str, kind: str) -> list[str]:
    return [n.reason for n in report.notes if n.rule == rule and n.kind == kind]


def assert_undecided(report, rule: str) -> None:
    """`rule` set aside what it could not know during preview, saying why, and reported nothing for it."""
    reasons = notes(report, rule, "unknown")
    assert reasons and all("can't be known during preview" in r for r in reasons), report.notes
    assert [f for f in report.findings if f.rule == rule] == []
