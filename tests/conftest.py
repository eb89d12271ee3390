"""Fixtures and hooks every test module gets; paths and shared helpers are in support/."""
from __future__ import annotations

import copy
from functools import lru_cache

import kubernetes_validate.utils
import pytest

from support.cluster import cluster  # noqa: F401  (fixtures shared across test modules)
from support.paths import BASE_RAW
from support.policy import oci_plan  # noqa: F401  (fixtures shared across test modules)

# kubernetes_validate.validate re-reads and re-parses its JSON schema files (the definitions file alone is
# megabytes) on every call; they are the installed package's files and never change, so each is read once a session.
kubernetes_validate.utils.schema_contents = lru_cache(maxsize=None)(kubernetes_validate.utils.schema_contents)


@pytest.fixture
def raw() -> dict:
    """A fresh copy of a minimal valid config to change one field at a time."""
    return copy.deepcopy(BASE_RAW)


def pytest_terminal_summary(terminalreporter):
    """Fuzz counts (tests/support/fuzzing.py) and objects applied per stack (tests/support/cluster_manifests.py), so
    every run shows
    how many cases were tried, refused and crashed, and how much a real API server took."""
    import sys

    for module in ("support.fuzzing", "support.cluster_manifests"):
        for line in getattr(sys.modules.get(module), "SUMMARY", ()):
            terminalreporter.write_line(line)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cluster: runs against the real Kubernetes control plane (tests/support/realcluster.py)")


@pytest.fixture(scope="session")
def control_plane():
    """The real control plane, built on first use: each test module asks it for a fresh cluster."""
    from support.realcluster import ControlPlane

    plane = ControlPlane()
    yield plane
    plane.close()
