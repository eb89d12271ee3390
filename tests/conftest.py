"""Fixtures and hooks every test module gets; paths and shared helpers are in support/."""
from __future__ import annotations

import copy

import pytest

from support.cluster import cluster  # noqa: F401  (fixtures shared across test modules)
from support.paths import BASE_RAW
from support.policy import oci_plan  # noqa: F401  (fixtures shared across test modules)


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
