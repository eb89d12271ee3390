"""The real Pulumi engine for tests: the CLI, the Python language host and the Kubernetes provider built from their
Go modules (tests/realparts/pulumi, tests/realparts/kubernetes), a throwaway project folder around the repo's program
(tests/pulumi_cli_program), a file backend, a passphrase, and no Pulumi Cloud or plugin downloads.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpu_platform.engine.wire import to_plain

from support.paths import ROOT, UPSTREAM
from support.realcluster import realparts

PROGRAM = ROOT / "tests" / "pulumi_cli_program" / "__main__.py"
CHARTS = UPSTREAM / "charts"
PASSPHRASE = "gpu-platform-tests"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"


def binaries() -> list[Path]:
    """The bin folders of the CLI (with its language host) and of the Kubernetes provider, built if missing."""
    return [realparts("pulumi"), realparts("kubernetes")]


@dataclass
class Project:
    """A Pulumi project folder (Pulumi.yaml, the program wrapper, one stack file) and the environment to run in."""
    folder: Path
    stack: str
    env: dict[str, str]

    def pulumi(self, *args: str, check: bool = True, timeout: float = 1200,
               extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        env = {**self.env, **(extra_env or {})}
        done = subprocess.run(["pulumi", "--non-interactive", "--color", "never", *args], cwd=self.folder, env=env,
                              capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"pulumi {' '.join(args)} failed ({done.returncode}):\n"
                                 f"{done.stderr[-6000:]}\n{done.stdout[-6000:]}")
        return done

    @property
    def stack_file(self) -> Path:
        return self.folder / f"Pulumi.{self.stack}.yaml"

    def set_config(self, config: dict, secrets: dict[str, str] = {}) -> None:
        """Replace the stack's gpu-platform config (plain values as YAML, secrets through `pulumi config set`)."""
        data = yaml.safe_load(self.stack_file.read_text()) or {}
        data["config"] = {f"gpu-platform:{k}": v for k, v in config.items()}
        self.stack_file.write_text(yaml.safe_dump(data, sort_keys=False))
        for path, value in secrets.items():
            self.pulumi("config", "set", "--secret", "--path", f"gpu-platform:{path}", "--", value)

    def registrations(self, *args: str) -> list[dict]:
        """`pulumi preview` with gRPC logging: every RegisterResource request the program sent the engine, with
        the URN the engine answered, in the offline plan's shape (gpu_platform/engine/monitor.py)."""
        log = self.folder / "grpc.json"
        log.unlink(missing_ok=True)
        self.pulumi("preview", *args, extra_env={"PULUMI_DEBUG_GRPC": str(log)})
        out = []
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            # Each call is logged twice: when it arrives (request only) and when answered (request and response).
            if entry.get("method") != "/pulumirpc.ResourceMonitor/RegisterResource" or "response" not in entry:
                continue
            req, resp = entry["request"], entry["response"]
            if req["type"] == "pulumi:pulumi:Stack":
                continue
            out.append({"urn": resp.get("urn"), "type": req["type"], "name": req["name"],
                        "parent": req.get("parent", ""), "custom": bool(req.get("custom")),
                        "provider": req.get("provider", ""), "protect": bool(req.get("protect")),
                        "ignoreChanges": sorted(req.get("ignoreChanges", [])),
                        "dependsOn": sorted(set(req.get("dependencies", []))),
                        "deleteBeforeReplace": bool(req.get("deleteBeforeReplace")),
                        "inputs": to_plain(req.get("object", {}))})
        return out

    def offline_plan(self) -> dict:
        """`gpu-platform plan --format json` of the same stack file."""
        done = subprocess.run([sys.executable, "-m", "gpu_platform.cli", "plan", "--file", str(self.stack_file),
                               "--format", "json"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


def make_project(folder: Path, stack: str) -> Project:
    """A project named like the repo's (so URNs match) whose program is tests/pulumi_cli_program, running under
    this interpreter's virtualenv, with an empty stack `stack` on a file backend in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    project.pop("stackConfigDir", None)
    project["runtime"]["options"]["virtualenv"] = sys.prefix
    (folder / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
    (folder / "__main__.py").write_text(PROGRAM.read_text())
    home, state = folder / ".pulumi-home", folder / ".state"
    state.mkdir(exist_ok=True)
    path = os.pathsep.join([*(str(b) for b in binaries()), str(Path(sys.prefix) / "bin"), os.environ["PATH"]])
    env = {**os.environ, "PATH": path, "PULUMI_HOME": str(home), "PULUMI_BACKEND_URL": f"file://{state}",
           "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE, "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
           "PULUMI_SKIP_UPDATE_CHECK": "true", "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
           "GPU_PLATFORM_ROOT": str(ROOT), "GPU_PLATFORM_CHART_DIR": str(CHARTS)}
    proj = Project(folder, stack, env)
    proj.pulumi("stack", "init", stack, "--secrets-provider", "passphrase")
    return proj


def chart_package(chart: str, version: str) -> str:
    return str(CHARTS / f"{chart.rstrip('/').rsplit('/', 1)[-1]}-{version}.tgz")


def local_charts(resource: dict) -> dict:
    """The program wrapper's stack transformation applied to one offline-plan resource: a Helm release installs
    from the local chart package, with no repository and without waiting for pods."""
    if resource["type"] != HELM_RELEASE:
        return resource
    inputs = {k: v for k, v in resource["inputs"].items() if k != "repositoryOpts"}
    inputs["chart"] = chart_package(inputs["chart"], inputs["version"])
    inputs["skipAwait"] = True
    return {**resource, "inputs": inputs}
