"""Reading resource properties the same way offline (plain inputs) and under the CLI (unknown-checking proxies).

Properties are Mappings and Sequences, never assumed to be dict/list; reading an unknown value raises the
SDK's UnknownValueError, which the analyzer reports as "can't be known during preview".
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

# How the offline plan spells a secret input; under the CLI the pack receives secrets decrypted.
SECRET = "[secret]"


class SecretValueError(UnknownValueError):
    """A secret the offline plan only knows is set: as unreadable as an unknown value."""

    def __init__(self, path: list[str]):
        super().__init__(UNKNOWN_STRING_VALUE, path)
        self.message = f"secret value at .{'.'.join(path)} is not readable offline"


class Undecidable(UnknownValueError):
    """A fact a rule needs that the graph does not hold (e.g. a launch template outside the stack): reported
    like an unknown value, so `--fail-on unknown` can fail on it."""

    def __init__(self, message: str):
        super().__init__(UNKNOWN_STRING_VALUE, [])
        self.message = message


def get(props: Any, path: str, default: Any = None) -> Any:
    """The value at dotted `path`, or `default` when any step is missing (unknown steps raise)."""
    value = props
    for step in path.split("."):
        if not isinstance(value, Mapping) or step not in value:
            return default
        value = value[step]
    if value is None:
        return default
    if value == SECRET:
        raise SecretValueError(path.split("."))
    return value


def mapping(value: Any) -> Mapping:
    return value if isinstance(value, Mapping) else {}


def items(value: Any) -> list:
    """The elements of a list value (empty for anything else); unknown elements raise when read."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [value[i] for i in range(len(value))]
    return []


def plain(value: Any) -> Any:
    """A proxy tree read fully into dicts and lists (raises on the first unknown inside)."""
    if isinstance(value, Mapping):
        return {k: plain(value[k]) for k in value}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [plain(v) for v in items(value)]
    return value


def parent_types(urn: str) -> list[str]:
    """The types of a resource's ancestors, read from its URN's qualified type (`parent$parent$type`)."""
    parts = urn.split("::")
    return parts[2].split("$")[:-1] if len(parts) >= 4 else []
