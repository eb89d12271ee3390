"""Serve the pack to the Pulumi CLI: `pulumi preview --policy-pack policies`."""
import sys
from pathlib import Path

# The CLI runs this file with only policies/ on sys.path; the rules live in the project's packages.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policies.rules import POLICIES  # noqa: E402

PolicyPack(
    name="gpu-platform",
    policies=POLICIES,
    enforcement_level=EnforcementLevel.MANDATORY,
    description="The GPU platform checklist: every rule is documented in RULES.md.",
)
