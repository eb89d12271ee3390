"""Where things are: the repo root, the sibling ../shared folder, the example stacks, a minimal valid raw
config, and helpers for upstream files and strict CRD schemas."""
from __future__ import annotations

from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
UPSTREAM = SHARED / "upstream"
STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))

BASE_RAW = {
    "cloud": "aws",
    "environment": "production",
    "cluster": {"name": "ml-prod", "region": "us-east-1"},
    "gpuPools": [
        {"name": "h100-train", "instanceType": "p5.48xlarge", "maxNodes": 4},
        {"name": "a100-infer", "instanceType": "p4de.24xlarge", "maxNodes": 2, "workload": "inference",
         "sharing": {"mode": "mig", "migProfile": "all-1g.10gb"}},
    ],
    "teams": [
        {"name": "research", "quotas": {"h100-train": 16}, "borrowingLimit": 8},
        {"name": "serving", "quotas": {"a100-infer": 56}},
    ],
}


def upstream(relative: str) -> Path:
    """A file under ../shared/upstream, or skip: that folder is a sibling checkout users may not have."""
    path = UPSTREAM / relative
    if not path.exists():
        pytest.skip(f"../shared/upstream not present ({path}): upstream conformance needs the shared fixtures")
    return path


def strict_schema(schema):
    """A CRD schema with unknown fields as errors: additionalProperties false wherever properties are listed and
    neither additionalProperties nor x-kubernetes-preserve-unknown-fields opens the object. Go regexps may set
    flags after `^`; Python wants them first. OpenAPI v3.0's boolean exclusiveMinimum/Maximum (KAI's CRDs use it)
    becomes JSON Schema draft 7's number form."""
    if isinstance(schema, list):
        return [strict_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict_schema(v) for k, v in schema.items()}
    if isinstance(out.get("pattern"), str):
        out["pattern"] = out["pattern"].replace("^(?i)", "(?i)^")
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if isinstance(out.get(exclusive), bool):
            if out.pop(exclusive) and bound in out:
                out[exclusive] = out.pop(bound)
    if "properties" in out and "additionalProperties" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out
