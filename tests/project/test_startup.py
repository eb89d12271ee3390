"""Lean start-up: a stack imports only its own cloud's provider SDK."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from support.paths import ROOT

PROVIDERS = {"aws": "pulumi_aws", "azure": "pulumi_azure_native", "gcp": "pulumi_gcp", "oci": "pulumi_oci"}
PROBE = """
import json, sys
from gpu_platform.engine import plan_stack
from gpu_platform.policy.runner import check
from policies import context
plan = plan_stack(sys.argv[1])
check(plan, context.for_config(plan.config))
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


@pytest.mark.parametrize("stack, cloud", [("aws-prod", "aws"), ("azure-prod", "azure"), ("gcp-prod", "gcp"),
                                          ("oci-prod", "oci")])
def test_plan_and_check_import_only_the_stacks_cloud(stack, cloud):
    out = subprocess.run([sys.executable, "-c", PROBE, stack], cwd=ROOT, capture_output=True, text=True, check=True,
                         timeout=300)
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert PROVIDERS[cloud] in loaded
    assert not loaded & (set(PROVIDERS.values()) - {PROVIDERS[cloud]})


def test_validating_a_stack_loads_no_pulumi_sdk():
    # `gpu-platform validate` only reads the config: the SDKs (and the job framework components) stay unloaded.
    probe = ("import json, sys\nfrom gpu_platform.engine.plan import validate_stack\nvalidate_stack('aws-prod')\n"
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True,
                         timeout=300)
    assert not set(json.loads(out.stdout.splitlines()[-1])) & {"pulumi", "pulumi_kubernetes", *PROVIDERS.values()}
