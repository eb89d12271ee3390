"""Shared fixtures: the repo root, the sibling ../shared folder, and a minimal valid raw config."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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


@pytest.fixture
def raw() -> dict:
    """A fresh copy of a minimal valid config to change one field at a time."""
    return copy.deepcopy(BASE_RAW)


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


def pytest_terminal_summary(terminalreporter):
    """Fuzz counts (tests/fuzzing.py) and objects applied per stack (tests/cluster_manifests.py), so every run shows
    how many cases were tried, refused and crashed, and how much a real API server took."""
    import sys

    for module in ("fuzzing", "cluster_manifests"):
        for line in getattr(sys.modules.get(module), "SUMMARY", ()):
            terminalreporter.write_line(line)


def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: runs against the real Kubernetes control plane (tests/realcluster.py)")


@pytest.fixture(scope="session")
def control_plane():
    """The real control plane, built on first use: each test module asks it for a fresh cluster."""
    from realcluster import ControlPlane

    plane = ControlPlane()
    yield plane
    plane.close()
