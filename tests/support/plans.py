"""Plans shared across the session, module-scoped plan fixtures, and the one-resource lookup the cloud, hardening and
simulator tests share."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_platform.engine import Plan, plan_stack

from support.stacks import stack_config


_SHARED: dict[tuple[str, str], Plan] = {}


def shared_plan(stack: str, overrides: dict[str, Any] | None = None) -> Plan:
    """`stack` planned with `overrides` once per test session, for tests that read a plan rather than test planning
    (a plan of a stack takes a second or more; a copy a hundredth of that). Each caller gets its own deep copy, so a
    test that edits its plan changes no other test's."""
    key = (stack, repr(overrides or None))
    if key not in _SHARED:
        _SHARED[key] = plan_stack(stack, config_overrides=overrides or None)
    return copy.deepcopy(_SHARED[key])


def plan_fixture(stack: str, overrides: dict[str, Any] | None = None, cluster: dict[str, Any] | None = None):
    """A module-scoped fixture with `stack` planned (once per session: `shared_plan`); `cluster` changes fields of the
    stack's own cluster section."""
    @pytest.fixture(scope="module")
    def planned() -> Plan:
        changes = dict(overrides or {})
        if cluster is not None:
            section = copy.deepcopy(stack_config(stack)["gpu-platform:cluster"])
            section.update(cluster)
            changes["gpu-platform:cluster"] = section
        return shared_plan(stack, changes)
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
