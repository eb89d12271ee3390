"""Exemptions for `gpu-platform check`: the pack's own reading and review (policies/exemptions.py), plus the
`--exemptions FILE` document shapes."""
from __future__ import annotations

from typing import Any

from components.config.errors import Problems
from policies.exemptions import Exemptions, Policy, review  # noqa: F401  (the CLI's names for them)


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
