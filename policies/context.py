"""What rules know about a stack beyond its resources: its environment and its reviewed exemptions.

Under the Pulumi CLI the pack reads both from the stack config the CLI hands it (PULUMI_CONFIG); the offline
runner sets them explicitly with `using(...)`.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from typing import Iterator

from components.config import ConfigError
from components.config.model import PlatformConfig, Policy
from gpu_platform.policy.exemptions import Exemptions, review


@dataclass
class StackContext:
    """One stack's environment (None when unknown, e.g. a bare plan file) and exemptions."""

    environment: str | None = None
    exemptions: Exemptions = field(default_factory=Exemptions)


_lock = threading.Lock()
_override: StackContext | None = None
_from_config: StackContext | None = None


def build(environment: str | None, policy: Policy, today: date | None = None) -> StackContext:
    """A context whose exemptions are reviewed against the pack's rules as of `today`."""
    from policies.rules import RULES  # the rule table imports this module

    table = {rule.id: rule.exemptable for rule in RULES}
    return StackContext(environment, review(policy, table, today or date.today()))


def for_config(config: PlatformConfig, today: date | None = None) -> StackContext:
    return build(config.environment, config.policy, today)


def current() -> StackContext:
    """The context set by `using`, else the one read once from the stack config the Pulumi CLI passed."""
    global _from_config
    with _lock:
        if _override is not None:
            return _override
        if _from_config is None:
            _from_config = _read_pulumi_config()
        return _from_config


@contextmanager
def using(ctx: StackContext) -> Iterator[StackContext]:
    """Evaluate with `ctx` (visible to every thread, as the analyzer's worker threads need)."""
    global _override
    with _lock:
        previous, _override = _override, ctx
    try:
        yield ctx
    finally:
        with _lock:
            _override = previous


def _read_pulumi_config() -> StackContext:
    from components.config import load_from_pulumi

    try:
        return for_config(load_from_pulumi())
    except ConfigError:
        # No (valid) stack config reached the pack: no exemptions apply, the environment is read from the graph.
        return StackContext()


def production(protected: bool) -> bool:
    """Whether rules treat the stack as production: its environment, else (a bare plan) whether the program
    protected its resources, which it does in production."""
    environment = current().environment
    return environment == "production" if environment is not None else protected
