"""Helpers the stacks tests share (moved out of the test modules that defined them)."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import jsonschema
import yaml

from gpu_platform.engine import Plan, plan_stack
from gpu_platform.engine.plan import read_stack_config

from support.paths import ROOT, strict_schema, upstream


OURS = ("gpu-platform:tenancy:", "gpu-platform:scheduling:")


def ours(plan: Plan) -> list:
    """Resources of the tenancy and scheduling components and their children (by the URN's type chain)."""
    return [r for r in plan.resources if any(t.startswith(OURS) for t in r.urn.split("::")[2].split("$"))]


def objects(plan: Plan, kind: str) -> list[dict[str, Any]]:
    """Kubernetes manifests of one kind, as planned (wire inputs)."""
    return [r.inputs for r in ours(plan) if r.inputs.get("kind") == kind and "apiVersion" in r.inputs]


def by_name(plan: Plan, kind: str) -> dict[str, dict[str, Any]]:
    """Objects of one kind by `namespace/name`, or by name when cluster-scoped."""
    return {"/".join(filter(None, (o["metadata"].get("namespace"), o["metadata"]["name"]))): o
            for o in objects(plan, kind)}


def stack_config(stack: str) -> dict[str, Any]:
    return read_stack_config(ROOT / "stacks" / f"Pulumi.{stack}.yaml")


def whole(value: Any) -> Any:
    """Wire numbers are doubles: give whole ones back their integer type, as the JSON the API server reads."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole(v) for v in value]
    return value


@lru_cache(maxsize=None)
def crd_validator(relative: str, version: str) -> jsonschema.Draft7Validator:
    """A strict validator for one served version of an upstream CRD (skips when ../shared/upstream is absent)."""
    crd = yaml.safe_load(upstream(relative).read_text())
    served = {v["name"]: v for v in crd["spec"]["versions"]}
    schema = strict_schema(served[version]["schema"]["openAPIV3Schema"])
    schema["properties"].pop("status", None)
    return jsonschema.Draft7Validator(schema)


def crd_errors(relative: str, version: str, obj: dict[str, Any]) -> list[str]:
    """Schema violations of `obj`, each with its path."""
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in crd_validator(relative, version).iter_errors(whole(obj))]


def with_scheduler(stack: str, kind: str, **settings: Any) -> dict[str, Any]:
    """Config overrides that switch the stack's scheduler (keeping its gang settings)."""
    scheduler = dict(stack_config(stack).get("gpu-platform:scheduler") or {})
    return {"gpu-platform:scheduler": {**scheduler, "kind": kind, **settings}}


@lru_cache(maxsize=None)
def planned(stack: str, kind: str) -> Plan:
    """The stack planned with `kind` as its scheduler, once per session."""
    return plan_stack(stack, config_overrides=with_scheduler(stack, kind))
