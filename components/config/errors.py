"""Config problems collected with their dotted paths, reported all at once."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the stack config, at a dotted path such as ``gpuPools[1].instanceType``."""

    path: str
    message: str
    warning: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(ValueError):
    """Raised with every problem found, so a user fixes them in one pass."""

    def __init__(self, problems: list[Problem], source: str = "stack config"):
        self.problems = problems
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        count = len(self.problems)
        return bulleted(f"{self.source} is invalid ({count} problem{'s' if count != 1 else ''}):", self.problems)


def bulleted(heading: str, problems: Sequence[object]) -> str:
    """`heading` and then one indented bullet a problem: how every error that lists problems reads."""
    return "\n".join([heading, *(f"  - {p}" for p in problems)])


class Problems:
    """A collector that walks a raw config and records problems under dotted paths."""

    def __init__(self) -> None:
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.errors.append(Problem(path, message))

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(Problem(path, message, warning=True))

    def raise_if_any(self, source: str = "stack config") -> None:
        if self.errors:
            raise ConfigError(self.errors, source)
