"""Report formats: text for people, JSON for tools, SARIF 2.1.0 for code scanning, JUnit XML for CI test views,
Markdown for pull requests."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Sequence

from gpu_platform.policy.findings import Report

if TYPE_CHECKING:  # annotations only: the CLI imports FORMATS at start, and policies.rule loads the Pulumi SDK
    from policies.rule import Rule

FORMATS = ("text", "json", "sarif", "junit", "markdown")


def render(report: Report, rules: Sequence[Rule], fmt: str, fail_on: str | None) -> str:
    """`report` in format `fmt`; `fail_on` decides which findings count as failing (None: mandatory ones)."""
    module = importlib.import_module(f"{__name__}.{fmt}_format")
    return module.render(report, rules, fail_on)
