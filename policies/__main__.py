"""Serve the pack to the Pulumi CLI: `pulumi preview --policy-pack policies`.

The CLI runs this file with only the pack's directory on sys.path, and a published pack (`pulumi policy
publish`) is unpacked under a directory of any name: load that directory as the `policies` package so the
modules' `policies.*` imports resolve, and nothing of the project outside it is needed.
"""
import importlib.util
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
if "policies" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("policies", _HERE / "__init__.py",
                                                   submodule_search_locations=[str(_HERE)])
    sys.modules["policies"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["policies"])

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policies.rules import POLICIES  # noqa: E402

PolicyPack(
    name="gpu-platform",
    policies=POLICIES,
    enforcement_level=EnforcementLevel.MANDATORY,
    description="The GPU platform checklist: every rule is documented in RULES.md.",
)
