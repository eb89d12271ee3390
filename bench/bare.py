"""The SDK floor: a bare program registering the same resources straight through the SDK, with no gpu-platform code.

Same types, names, parents, inputs and type aliases (the typed provider classes add up to ~110 aliases per resource,
which the SDK resolves at a real cost), so the only difference left is the work our program does.
"""
from __future__ import annotations

from typing import Callable

import pulumi

from gpu_platform.engine.monitor import Registration
from gpu_platform.engine.wire import to_plain


def bare_program(registrations: list[Registration]) -> Callable[[], None]:
    """A program that replays recorded registrations (parents first) through the plain SDK resource classes."""
    rows = sorted(registrations, key=lambda r: (r.urn.split("::")[2].count("$"), r.urn))
    plain = [(r, to_plain(r.inputs)) for r in rows]

    def program() -> None:
        registered: dict[str, pulumi.Resource] = {}
        for row, inputs in plain:
            opts = pulumi.ResourceOptions(parent=registered.get(row.parent), protect=row.protect,
                                          aliases=[pulumi.Alias(type_=t) for t in row.alias_types] or None)
            if row.type.startswith("pulumi:providers:"):
                resource = pulumi.ProviderResource(row.type.split(":")[2], row.name, inputs, opts)
            elif row.custom:
                resource = pulumi.CustomResource(row.type, row.name, inputs, opts)
            else:
                resource = pulumi.ComponentResource(row.type, row.name, inputs, opts)
            registered[row.urn] = resource

    return program
