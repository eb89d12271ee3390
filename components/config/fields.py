"""Typed readers over raw YAML values that record problems under dotted paths instead of raising."""
from __future__ import annotations

import re
from typing import Any

from components.config.errors import Problems

_MISSING = object()
# At most 63 characters: namespaces, and the label values pool and team names also become.
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DNS1123_WHAT = "a DNS-1123 label (lowercase letters, digits, '-', at most 63 characters)"
# Kubernetes and the cloud APIs carry counts as int32: a larger number is refused (or wraps) there.
INT32_MAX = 2**31 - 1
MAX_DURATION_S = 7 * 86400  # a timeout of more than a week is a typo (Kueue takes any duration, but none helps)
_DURATION = re.compile(r"([0-9]{1,9})(s|m|h)")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600}


def short(value: int) -> str:
    """A number for a message: 10**30 as its magnitude, not 31 digits (nor a ValueError past 4300 digits)."""
    if abs(value) < 10**12:
        return str(value)
    return f"{'-' if value < 0 else ''}about 10^{int(value.bit_length() * 0.30103)}"


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class Section:
    """A mapping at `path`; readers record problems and return a usable fallback."""

    def __init__(self, raw: Any, path: str, problems: Problems, allowed: tuple[str, ...]):
        self.path = path
        self.problems = problems
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            problems.add(path, f"must be a mapping with keys {', '.join(allowed)}; got {type(raw).__name__}")
            raw = {}
        self.raw = raw
        for key in raw:
            if key not in allowed:
                problems.add(join(path, str(key)), f"unknown key; allowed: {', '.join(allowed)}")

    def at(self, key: str) -> str:
        return join(self.path, key)

    def has(self, key: str) -> bool:
        return key in self.raw and self.raw[key] is not None

    def value(self, key: str, default: Any = _MISSING) -> Any:
        if not self.has(key):
            if default is _MISSING:
                self.problems.add(self.at(key), "is required")
                return None
            return default
        return self.raw[key]

    def str(self, key: str, default: Any = _MISSING, choices: tuple[str, ...] | None = None,
            pattern: re.Pattern | None = None, what: str = "") -> str | None:
        value = self.value(key, default)
        if value is None or (value is default and default is not _MISSING):
            return value
        if not isinstance(value, str):
            allowed = f"; allowed: {', '.join(choices)}" if choices else ""
            self.problems.add(self.at(key), f"must be a string{allowed}; got {value!r:.80}")
            return None
        if not value.strip() and not (pattern is not None and pattern.fullmatch(value)):
            # An empty value would silently mean "unset" further on (an empty instanceType dropped its pool).
            allowed = f"; allowed: {', '.join(choices)}" if choices else ""
            self.problems.add(self.at(key), f"must not be empty{allowed}")
            return None
        if choices is not None and value not in choices:
            self.problems.add(self.at(key), f"{value!r} is not allowed; allowed: {', '.join(choices)}")
            return None
        if pattern is not None and not pattern.fullmatch(value):
            self.problems.add(self.at(key), f"{value!r} is not {what or 'valid'}")
            return None
        return value

    def int(self, key: str, default: Any = _MISSING, minimum: int | None = None, maximum: int = INT32_MAX,
            why: str = "") -> int | None:
        value = self.value(key, default)
        if value is None or (value is default and default is not _MISSING):
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            self.problems.add(self.at(key), f"must be a whole number; got {value!r:.80}")
            return None
        if minimum is not None and value < minimum:
            self.problems.add(self.at(key), f"must be >= {minimum}; got {short(value)}")
            return None
        if value > maximum:
            self.problems.add(self.at(key), f"must be <= {maximum}{f' ({why})' if why else ''}; got {short(value)}")
            return None
        return value

    def number(self, key: str, default: Any, low: float, high: float) -> float | None:
        value = self.value(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            self.problems.add(self.at(key), f"must be a number from {low} to {high}; got {value!r}")
            return None
        return float(value)

    def bool(self, key: str, default: Any = _MISSING) -> bool | None:
        value = self.value(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, bool):
            self.problems.add(self.at(key), f"must be true or false; got {value!r}")
            return None
        return value

    def duration(self, key: str, default_s: int) -> int | None:
        """Seconds from `30s`, `10m`, `1h` (Kubernetes/Kueue style) or a bare number of seconds."""
        value = self.value(key, None)
        if value is None:
            return default_s
        if isinstance(value, int) and not isinstance(value, bool):
            seconds = value
        else:
            match = _DURATION.fullmatch(value) if isinstance(value, str) else None
            seconds = int(match.group(1)) * _DURATION_UNITS[match.group(2)] if match else 0
        if not 0 < seconds <= MAX_DURATION_S:
            self.problems.add(self.at(key), f"must be a positive duration like 30s, 10m or 1h (or seconds), at most "
                                            f"7 days; got {value!r:.80}")
            return None
        return seconds

    def str_map(self, key: str) -> dict[str, str]:
        value = self.value(key, {})
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            self.problems.add(self.at(key), f"must be a mapping of strings to strings; got {value!r}")
            return {}
        return dict(value)

    def str_list(self, key: str) -> list[str]:
        value = self.value(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problems.add(self.at(key), f"must be a list of strings; got {value!r}")
            return []
        return list(value)

    def list(self, key: str, required: bool = False) -> list[Any]:
        value = self.value(key) if required else self.value(key, [])
        if value is None:
            return []
        if not isinstance(value, list):
            self.problems.add(self.at(key), f"must be a list; got {type(value).__name__}")
            return []
        return value


def name_index(items: Any) -> dict[str, int]:
    """Where each named item of a raw list sits (the first one with that name); items whose name is not a string
    (a list, a mapping) have their own error and no entry."""
    index: dict[str, int] = {}
    for i, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            index.setdefault(item["name"], i)
    return index
