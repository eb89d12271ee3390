"""The pack stands alone, as `pulumi policy publish` ships it: only policies/ and its requirements, no project
code (issue 16). Rules import neither the CLI package nor the program's, nor each other."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2_grpc

from policies.rules import RULES

from support.paths import ROOT

PACK = ROOT / "policies"
PROJECT_PACKAGES = ("components", "gpu_platform", "tests")
TIMEOUT = 20

# Serves the pack as the Pulumi CLI does (`python -m pulumi.policy <engine> <pack dir>`), in an interpreter where
# the project's packages cannot be imported even though the shared virtualenv has the repository on its path.
RUNNER = textwrap.dedent("""
    import importlib.abc, runpy, sys

    BLOCKED = {blocked!r}

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"the standalone pack imported {{name}}", name=name)
            return None

    sys.meta_path.insert(0, Block())
    sys.path[:] = [p for p in sys.path if p not in ("", {root!r})]
    sys.argv = ["pulumi.policy", "127.0.0.1:0", {pack!r}]
    runpy.run_module("pulumi.policy", run_name="__main__", alter_sys=True)
""")


def test_pack_serves_every_rule_with_only_its_own_directory(tmp_path):
    # A copy under another directory name: a published pack is unpacked wherever the service puts it.
    pack = tmp_path / "crossguard-pack"
    shutil.copytree(PACK, pack, ignore=shutil.ignore_patterns("__pycache__", "venv"))
    script = tmp_path / "serve.py"
    script.write_text(RUNNER.format(blocked=PROJECT_PACKAGES, root=str(ROOT), pack=str(pack)))
    process = subprocess.Popen([sys.executable, "-u", str(script)], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin"})
    try:
        line = process.stdout.readline().strip()
        assert line.isdigit(), f"the pack did not start: {line!r}\n{process.stderr.read() if process.poll() else ''}"
        with grpc.insecure_channel(f"127.0.0.1:{line}") as channel:
            info = analyzer_pb2_grpc.AnalyzerStub(channel).GetAnalyzerInfo(empty_pb2.Empty(), timeout=TIMEOUT)
        assert sorted(p.name for p in info.policies) == sorted(rule.policy.name for rule in RULES)
    finally:
        process.kill()
        process.wait(timeout=TIMEOUT)


def _imports(path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_no_pack_module_imports_project_code_and_rules_do_not_import_rules():
    problems = []
    for path in sorted(PACK.rglob("*.py")):
        for module in _imports(path):
            if module.split(".")[0] in PROJECT_PACKAGES:
                problems.append(f"{path.relative_to(ROOT)} imports {module}")
            if path.parent.name == "rules" and path.stem.startswith("gpu") and module.startswith("policies.rules."):
                problems.append(f"{path.relative_to(ROOT)} imports another rule ({module})")
    assert problems == []


def test_requirements_pin_what_the_pack_imports():
    pins = {line.split("==")[0].lower(): line.split("==")[1] for line in (PACK / "requirements.txt").read_text()
            .splitlines() if "==" in line and not line.startswith("#")}
    assert set(pins) == {"pulumi", "pulumi-policy", "pyyaml"}
    project = (ROOT / "pyproject.toml").read_text()
    assert all(f'"{name}=={version}"' in project for name, version in pins.items()), "pins differ from pyproject.toml"


def test_pack_reads_environment_and_exemptions_from_the_config_the_cli_passes(monkeypatch):
    import json
    from datetime import date, timedelta

    from policies import context

    expires = (date.today() + timedelta(days=30)).isoformat()
    policy = {"maxExemptionDays": 60, "exemptions": [
        {"rule": "GPU001", "resource": "ml-prod-h100-*", "reason": "taint restored in the next release (PLAT-7)",
         "expires": expires},
        {"rule": "GPU002", "resource": "*", "reason": "every pool, for no reason at all", "expires": expires}]}
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"gpu-platform:environment": "production",
                                                    "gpu-platform:policy": json.dumps(policy)}))
    ctx = context.from_pulumi_config()
    assert ctx.environment == "production"
    assert [p for p, _ in ctx.exemptions.active] == ["policy.exemptions[0]"]
    assert [i.path for i in ctx.exemptions.issues] == ["policy.exemptions[1].resource"]
    monkeypatch.setenv("PULUMI_CONFIG", "{}")
    assert context.from_pulumi_config().environment is None  # the graph's record, else production, decides
