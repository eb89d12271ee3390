"""Exemptions: a reasoned, expiring exception to one rule for the resources a name or glob matches.

Read from the stack's `gpu-platform:policy` block (or a file with `gpu-platform check --plan`). The pack owns
both the reading and the review, so the Pulumi CLI, the offline runner and the program's config validation
agree. An exemption that is malformed, expired, too long-lived, thinly reasoned, stack-wide, names an unknown
rule or a critical one is never applied: it is a GPU000 finding itself.
"""
from __future__ import annotations

import fnmatch
import re
import threading
import unicodedata
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Iterable, Mapping

MIN_REASON = 20  # characters, after invisible characters are removed
MIN_WORDS = 3  # distinct words of at least two letters
DEFAULT_MAX_DAYS = 180
# A stack may shorten or lengthen the allowed lifetime, but not turn the limit off.
MAX_DAYS_CEILING = 365
POLICY_KEYS = ("exemptions", "maxExemptionDays")
EXEMPTION_KEYS = ("rule", "resource", "reason", "expires")
_INDEX = re.compile(r"^policy\.exemptions\[(\d+)\]")
_WORD = re.compile(r"[^\W\d_]{2,}")
_WILDCARDS = set("*?")
_GLOB = re.compile(r"[*?\[]")  # what fnmatch does not match literally
_CLASS = re.compile(r"\[[^\]]*\]?|[*?]")  # wildcards and character classes
_BOUND = re.compile(r"[^\W_]{3}")
_URN = "urn:"


@dataclass(frozen=True)
class Exemption:
    """A reasoned, expiring exception to one policy rule for matching resources."""

    rule: str
    resource: str
    reason: str
    expires: date


@dataclass(frozen=True)
class Problem:
    """A part of the policy block that could not be read."""

    path: str
    message: str


@dataclass(frozen=True)
class Policy:
    """The stack's policy block: exemptions as read, the unreadable ones, and the allowed exemption lifetime."""

    exemptions: tuple[Exemption, ...] = ()
    malformed: tuple[Problem, ...] = ()  # reported by GPU000
    max_days: int = DEFAULT_MAX_DAYS


@dataclass(frozen=True)
class Issue:
    """Why one declared exemption (or the policy block) is not applied as written."""

    path: str  # policy.exemptions[2], policy.exemptions[2].expires, policy.maxExemptionDays
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
            if exemption.rule == rule and any(fnmatch.fnmatchcase(n, exemption.resource) if not n.startswith(_URN)
                                              else n == exemption.resource for n in names):
                use = Use(path, exemption, rule, urn, message)
                with self._lock:  # the analyzer serves requests from a thread pool
                    self.used.append(use)
                return use
        return None


# Reading -------------------------------------------------------------------------------------------------------


def _date(value: Any) -> date | None:
    if isinstance(value, datetime):  # a YAML timestamp: compare it as the day it names
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            return None
    return None


def _exemption(raw: Any, path: str) -> tuple[Exemption | None, list[Problem]]:
    if not isinstance(raw, Mapping):
        return None, [Problem(path, f"must be a mapping with keys {', '.join(EXEMPTION_KEYS)}; "
                                    f"got {type(raw).__name__}")]
    problems = [Problem(f"{path}.{k}", f"unknown key; allowed: {', '.join(EXEMPTION_KEYS)}")
                for k in raw if k not in EXEMPTION_KEYS]
    for key in ("rule", "resource", "reason"):
        if raw.get(key) is None:
            problems.append(Problem(f"{path}.{key}", "is required"))
        elif not isinstance(raw[key], str):
            problems.append(Problem(f"{path}.{key}", f"must be a string; got {raw[key]!r}"))
    expires = _date(raw.get("expires"))
    if raw.get("expires") is None:
        problems.append(Problem(f"{path}.expires", "is required"))
    elif expires is None:
        problems.append(Problem(f"{path}.expires", f"must be a date YYYY-MM-DD; got {raw['expires']!r}"))
    if problems:
        return None, problems
    return Exemption(raw["rule"], raw["resource"], raw["reason"], expires), []


def _max_days(raw: Any) -> tuple[int, list[Problem]]:
    if raw is None:
        return DEFAULT_MAX_DAYS, []
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_DAYS_CEILING:
        # The default limit still applies, so a bad setting never lengthens what exemptions may last.
        return DEFAULT_MAX_DAYS, [Problem("policy.maxExemptionDays",
                                          f"must be a whole number of days from 1 to {MAX_DAYS_CEILING}; got {raw!r}")]
    return raw, []


def read_policy(raw: Any) -> Policy:
    """The stack's `policy` block (a mapping, or None); unreadable parts are kept as `malformed` for GPU000.

    Unknown keys of the block itself are left to the caller (the stack validator refuses them; the pack under
    the CLI ignores them).
    """
    raw = raw if isinstance(raw, Mapping) else {}
    max_days, problems = _max_days(raw.get("maxExemptionDays"))
    items = raw.get("exemptions") or []
    if not isinstance(items, list):
        return Policy((), (*problems, Problem("policy.exemptions", f"must be a list; got {type(items).__name__}")),
                      max_days)
    exemptions = []
    for i, item in enumerate(items):
        exemption, local = _exemption(item, f"policy.exemptions[{i}]")
        problems += local
        if exemption is not None:
            exemptions.append(exemption)
    return Policy(tuple(exemptions), tuple(problems), max_days)


# Review --------------------------------------------------------------------------------------------------------


def words(reason: str) -> tuple[str, list[str]]:
    """The reason without invisible (format and control) characters, and its distinct words."""
    visible = "".join(c for c in unicodedata.normalize("NFKC", reason) if unicodedata.category(c)[0] != "C")
    visible = " ".join(visible.split())
    return visible, sorted({w.lower() for w in _WORD.findall(visible)})


def review(policy: Policy, rules: Mapping[str, bool], today: date) -> Exemptions:
    """Check every declared exemption against the rule table (rule id -> exemptable) and today's date."""
    result = Exemptions()
    result.issues.extend(Issue(p.path, p.message) for p in policy.malformed)
    malformed = {int(m.group(1)) for p in policy.malformed if (m := _INDEX.match(p.path))}
    indexes = (i for i in range(len(policy.exemptions) + len(malformed)) if i not in malformed)
    for index, exemption in zip(indexes, policy.exemptions):
        path = f"policy.exemptions[{index}]"
        result.declared.append((path, exemption))
        problems = _problems(exemption, rules, today, policy.max_days)
        result.issues.extend(Issue(f"{path}.{key}", message, exemption) for key, message in problems)
        if not problems:
            result.active.append((path, exemption))
    return result


def _unbounded(pattern: str) -> str:
    """Why a glob is not limited to some resources, or "". Judged on the pattern alone, so it holds for every graph
    it will ever meet: a glob is bounded only by its literal text, and one without a run of three letters or digits
    (`*-*`, `[a-z]*`, `ml-*`) matches every name the platform gives. URNs are matched only in full, never by glob,
    since every URN starts with the same `urn:pulumi:<stack>::<project>::`."""
    if not _GLOB.search(pattern):
        return ""  # a name or a URN, matched exactly
    if pattern.startswith(_URN):
        return "a glob over URNs; name resources by name, or give one URN in full"
    literal = _CLASS.sub(" ", pattern)
    if not _BOUND.search(literal):
        return "no literal part of at least 3 letters or digits"
    return ""


def _problems(exemption: Exemption, rules: Mapping[str, bool], today: date, max_days: int) -> list[tuple[str, str]]:
    """Every reason the exemption is not applied, each at its key: a review lists them all, so one fix cycle
    settles the exemption rather than one problem per run."""
    problems = []
    if exemption.rule not in rules:
        problems.append(("rule", f"unknown rule {exemption.rule!r}; rules: {', '.join(sorted(rules))}"))
    elif not rules[exemption.rule]:
        problems.append(("rule", f"{exemption.rule} cannot be exempted (critical rules and exemption checks never "
                                 "are)"))
    pattern = exemption.resource.strip()
    if not pattern or set(pattern) <= _WILDCARDS:
        problems.append(("resource", f"{exemption.resource!r} matches every resource; name the resources (a name or "
                                     "a glob such as ml-prod-l4-*)"))
    elif broad := _unbounded(pattern):
        problems.append(("resource", f"{exemption.resource!r} can match every resource ({broad}); name the "
                                     "resources: a name, or a glob that starts with a name prefix such as ml-prod-l4-*"))
    visible, found = words(exemption.reason)
    if len(visible) < MIN_REASON or len(found) < MIN_WORDS:
        problems.append(("reason", f"must explain the exception in at least {MIN_REASON} characters and {MIN_WORDS} "
                                   f"different words; got {len(visible)} characters and {len(found)} words: "
                                   f"{exemption.reason!r}"))
    latest = today + timedelta(days=max_days)
    if exemption.expires < today:
        problems.append(("expires", f"expired on {exemption.expires.isoformat()}; renew it with a new reason or fix "
                                    "the finding"))
    elif exemption.expires > latest:
        problems.append(("expires", f"{exemption.expires.isoformat()} is more than {max_days} days away (latest "
                                    f"allowed: {latest.isoformat()}, policy.maxExemptionDays); exemptions are "
                                    "renewed, not permanent"))
    return problems
