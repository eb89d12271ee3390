"""Exemptions: a reasoned, expiring exception to one rule for the resources a name or glob matches.

Read from `gpu-platform:policy.exemptions` (or a file with `--plan`). An exemption that is malformed, expired,
too thinly reasoned, names an unknown rule or a critical one is never applied: it is a finding itself.
"""
from __future__ import annotations

import fnmatch
import re
import threading
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Iterable, Mapping

from components.config.errors import Problems
from components.config.model import Exemption, Policy

MIN_REASON = 20
_INDEX = re.compile(r"^policy\.exemptions\[(\d+)\]")


@dataclass(frozen=True)
class Issue:
    """Why one declared exemption is not applied."""

    path: str  # policy.exemptions[2] or policy.exemptions[2].expires
    message: str
    exemption: Exemption | None = None


@dataclass(frozen=True)
class Use:
    """One finding an exemption waived."""

    path: str
    exemption: Exemption
    rule: str
    urn: str
    message: str


@dataclass
class Exemptions:
    """The exemptions of one stack, reviewed once, and every finding they waived in this run."""

    declared: list[tuple[str, Exemption]] = field(default_factory=list)  # (config path, exemption)
    active: list[tuple[str, Exemption]] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    used: list[Use] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def waive(self, rule: str, urn: str, names: Iterable[str], message: str) -> Use | None:
        """The active exemption covering `rule` for any of `names`, recorded as used; None when none does."""
        names = [n for n in names if n]
        for path, exemption in self.active:
            if exemption.rule == rule and any(fnmatch.fnmatchcase(n, exemption.resource) for n in names):
                use = Use(path, exemption, rule, urn, message)
                with self._lock:  # the analyzer serves requests from a thread pool
                    self.used.append(use)
                return use
        return None


def review(policy: Policy, rules: Mapping[str, bool], today: date) -> Exemptions:
    """Check every declared exemption against the rule table (rule id -> exemptable) and today's date."""
    result = Exemptions()
    result.issues.extend(Issue(p.path, p.message) for p in policy.malformed)
    malformed = {int(m.group(1)) for p in policy.malformed if (m := _INDEX.match(p.path))}
    indexes = (i for i in range(len(policy.exemptions) + len(malformed)) if i not in malformed)
    for index, exemption in zip(indexes, policy.exemptions):
        path = f"policy.exemptions[{index}]"
        result.declared.append((path, exemption))
        problem = _problem(exemption, rules, today)
        if problem:
            result.issues.append(Issue(f"{path}.{problem[0]}", problem[1], exemption))
        else:
            result.active.append((path, exemption))
    return result


def _problem(exemption: Exemption, rules: Mapping[str, bool], today: date) -> tuple[str, str] | None:
    if exemption.rule not in rules:
        return "rule", f"unknown rule {exemption.rule!r}; rules: {', '.join(sorted(rules))}"
    if not rules[exemption.rule]:
        return "rule", f"{exemption.rule} cannot be exempted (critical rules and exemption checks never are)"
    if len(exemption.reason.strip()) < MIN_REASON:
        return "reason", (f"must explain the exception in at least {MIN_REASON} characters; "
                          f"got {len(exemption.reason.strip())}: {exemption.reason!r}")
    if exemption.expires < today:
        return "expires", f"expired on {exemption.expires.isoformat()}; renew it with a new reason or fix the finding"
    return None


def read_file(raw: Any, source: str) -> Policy:
    """Exemptions from an `--exemptions FILE` document: a list, `{exemptions: [...]}` or `{policy: {exemptions: [...]}}`."""
    from components.config.parse import read_policy  # the stack parser's own reader, so files and stacks agree

    if isinstance(raw, dict) and "policy" in raw:
        raw = raw["policy"]
    if isinstance(raw, list):
        raw = {"exemptions": raw}
    problems = Problems()
    policy = read_policy(raw, problems)
    problems.raise_if_any(source)
    return policy


