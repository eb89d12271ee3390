"""Module-scoped plan fixtures and the one-resource lookup the cloud, hardening and simulator tests share."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_platform.engine import Plan, plan_stack

from support.stacks import stack_config


def plan_fixture(stack: str, overrides: dict[str, Any] | None = None, cluster: dict[str, Any] | None = None):
    """A module-scoped fixture planning `stack` once; `cluster` changes fields of the stack's own cluster section."""
    @pytest.fixture(scope="module")
    def planned() -> Plan:
        changes = dict(overrides or {})
        if cluster is not None:
            section = copy.deepcopy(stack_config(stack)["gpu-platform:cluster"])
            section.update(cluster)
            changes["gpu-platform:cluster"] = section
        return plan_stack(stack, config_overrides=changes or None)
    return planned


def plan_file_fixture(file_name: str, text: str):
    """A module-scoped fixture planning a stack file written from `text` (stacks the examples do not cover)."""
    @pytest.fixture(scope="module")
    def planned(tmp_path_factory) -> Plan:
        path = tmp_path_factory.mktemp("stacks") / file_name
        path.write_text(text)
        return plan_stack(file=path)
    return planned


def one(plan: Plan, type_: str, name: str):
    """The single resource of a type and name, failing with the names of that type that were planned."""
    matches = [r for r in plan.resources if r.type == type_ and r.name == name]
    assert len(matches) == 1, f"{type_} {name}: {[r.name for r in plan.of_type(type_)]}"
    return matches[0]
