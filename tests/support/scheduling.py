"""Helpers the scheduling tests share (moved out of the test modules that defined them)."""
from __future__ import annotations

from support.stacks import stack_config


def with_frameworks(names, **scheduler):
    current = dict(stack_config("aws-prod").get("gpu-platform:scheduler") or {})
    return {"gpu-platform:scheduler": {**current, "frameworks": names, **scheduler}}
