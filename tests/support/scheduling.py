"""Helpers the scheduling tests share (moved out of the test modules that defined them)."""
from __future__ import annotations

import pytest

from components.config import ConfigError, validate

from support.stacks import stack_config


def with_frameworks(names, **scheduler):
    current = dict(stack_config("aws-prod").get("gpu-platform:scheduler") or {})
    return {"gpu-platform:scheduler": {**current, "frameworks": names, **scheduler}}


def problems(raw: dict) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        validate(raw)
    return {p.path: p.message for p in info.value.problems}
