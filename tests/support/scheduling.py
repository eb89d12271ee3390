"""Helpers the scheduling tests share (moved out of the test modules that defined them)."""
from __future__ import annotations

from support.stacks import crd_errors, objects, planned, stack_config


def with_frameworks(names, **scheduler):
    current = dict(stack_config("aws-prod").get("gpu-platform:scheduler") or {})
    return {"gpu-platform:scheduler": {**current, "frameworks": names, **scheduler}}


def checked_queues(framework: str, stacks, crd: str, version: str, api_version: str) -> int:
    """How many Queues `framework` plans on `stacks`, each of `api_version` and valid against the upstream CRD."""
    checked = 0
    for stack in stacks:
        for queue in objects(planned(stack, framework), "Queue"):
            assert queue["apiVersion"] == api_version
            assert crd_errors(crd, version, queue) == [], queue["metadata"]
            checked += 1
    return checked
