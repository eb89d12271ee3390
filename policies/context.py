"""What rules know about a stack beyond its resources: its environment and its reviewed exemptions.

Under the Pulumi CLI the pack reads both from the stack config the CLI hands it (PULUMI_CONFIG); the offline
runner sets them explicitly with `using(...)`. The program also records the environment on a
`gpu-platform:policy:StackFacts` resource, so a bare plan file (no stack config) still says what it is.
"""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Iterator

from policies.exemptions import Exemptions, Policy, read_policy, review
from policies.props import get

NAMESPACE = "gpu-platform"
PRODUCTION = "production"
STACK_FACTS = "gpu-platform:policy:StackFacts"


@dataclass
class StackContext:
    """One stack's environment (None when no stack config reached the pack, e.g. a bare plan) and exemptions."""

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


def for_config(config, today: date | None = None) -> StackContext:
    """The context of a validated stack config (anything with `environment` and `policy`, as the CLI's model)."""
    return build(config.environment, config.policy, today)


def current() -> StackContext:
    """The context set by `using`, else the one read once from the stack config the Pulumi CLI passed."""
    global _from_config
    with _lock:
        if _override is not None:
            return _override
        if _from_config is None:
            _from_config = from_pulumi_config()
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


def _config_value(config: dict[str, Any], key: str) -> Any:
    text = config.get(f"{NAMESPACE}:{key}")
    try:
        return json.loads(text)  # structured values arrive as JSON text
    except (TypeError, ValueError):
        return text


def from_pulumi_config(today: date | None = None) -> StackContext:
    """The environment and exemptions from the stack config the Pulumi CLI passes a policy pack.

    Read here rather than with the program's config model: the published pack runs without the project's code.
    """
    from pulumi.runtime.config import get_config_env

    config = get_config_env()
    environment = _config_value(config, "environment")
    return build(str(environment) if environment is not None else None, read_policy(_config_value(config, "policy")),
                 today)


def recorded_environments(resources) -> set[str]:
    """The environments the program recorded on its StackFacts resources (empty when it recorded none)."""
    return {str(get(r.props, "environment", "")) for r in resources if r.resource_type == STACK_FACTS}


def production(resources) -> bool:
    """Whether rules treat the stack as production.

    The stack config's environment, else the one the program recorded in the graph. Strict by default: a graph
    without the record, records that disagree with each other or with the stack config, all count as
    production, so removing or editing one marker (or the `protect` flags) never switches rules off.
    """
    environment = current().environment
    recorded = recorded_environments(resources)
    if environment is not None:
        return environment == PRODUCTION or bool(recorded - {environment})
    return len(recorded) != 1 or recorded == {PRODUCTION}
