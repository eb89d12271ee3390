"""Each cloud's provider SDK is an extra: a stack without its cloud's SDK is refused naming the extra to install, and
another cloud's stack plans without it. The SDK is hidden from a child interpreter (an import blocker on its
meta path), never uninstalled."""
from __future__ import annotations

import os
import subprocess
import sys

from support.paths import ROOT

BLOCKER = '''
import sys


class HideSdk:
    """Imports of {module} fail as if it were not installed."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "{module}" or fullname.startswith("{module}."):
            raise ModuleNotFoundError(f"No module named {{fullname!r}}", name=fullname)
        return None


sys.meta_path.insert(0, HideSdk())
'''


def without_sdk(tmp_path, module: str, *argv: str) -> subprocess.CompletedProcess:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER.format(module=module))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    return subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_blocker_hides_the_sdk(tmp_path):
    hidden = without_sdk(tmp_path, "pulumi_gcp", "-c", "import pulumi_gcp")
    assert hidden.returncode == 1 and "No module named 'pulumi_gcp'" in hidden.stderr


def test_a_stack_without_its_clouds_sdk_is_refused_naming_the_extra(tmp_path):
    result = without_sdk(tmp_path, "pulumi_gcp", "-m", "gpu_platform.cli", "plan", "gcp-dev")
    assert result.returncode == 2, result.stderr
    assert "cloud: gcp clusters need the pulumi-gcp SDK, which is not installed: pip install 'gpu-platform[gcp]'" \
        in result.stderr
    assert "Traceback" not in result.stderr


def test_another_clouds_stack_plans_without_that_sdk(tmp_path):
    result = without_sdk(tmp_path, "pulumi_gcp", "-m", "gpu_platform.cli", "plan", "aws-dev", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert '"aws:eks/cluster:Cluster"' in result.stdout
