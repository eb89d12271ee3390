"""A registry's table: rows by name, in the order their packages register them (schedulers, provisioners)."""
from __future__ import annotations

from typing import Protocol, TypeVar


class Named(Protocol):
    @property
    def name(self) -> str: ...


Row = TypeVar("Row", bound=Named)


class Rows(dict[str, Row]):
    """name -> row; a second row of one name is refused: two packages would claim the same choice."""

    def __init__(self, what: str):
        super().__init__()
        self.what = what  # how the refusal names a row: "scheduler kind", "provisioner"

    def register(self, row: Row) -> Row:
        """Add a package's row; called once from its `facts.py`."""
        if row.name in self:
            raise ValueError(f"{self.what} {row.name!r} is registered twice")
        self[row.name] = row
        return row
