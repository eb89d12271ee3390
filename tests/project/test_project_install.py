"""`pulumi install` at the project root: Pulumi's pip toolchain creates the virtualenv Pulumi.yaml names and runs
`pip install -r requirements.txt` in the project root (no option names another file), so that file must carry the
program's runtime pins, the same ones pyproject.toml declares."""
from __future__ import annotations

import re

import pytest
import yaml

from support.paths import ROOT

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")


def requirement_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_root_requirements_are_pyprojects_runtime_dependencies_with_every_cloud():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    required = requirement_lines((ROOT / "requirements.txt").read_text())
    assert sorted(required) == sorted(project["dependencies"] + extras["all"])
    # `all` is exactly the per-cloud extras, each one SDK.
    clouds = [extras[cloud] for cloud in ("aws", "azure", "gcp", "oci")]
    assert all(len(sdk) == 1 for sdk in clouds) and sorted(sum(clouds, [])) == sorted(extras["all"])
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", line) for line in required), required


def test_pulumi_install_reads_the_root_requirements_into_the_projects_virtualenv():
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    runtime = project["runtime"]
    assert runtime["name"] == "python"
    # The pip toolchain installs <project root>/requirements.txt; uv and poetry would read pyproject.toml instead.
    assert runtime["options"]["toolchain"] == "pip"
    assert runtime["options"]["virtualenv"] == ".venv"


def test_the_first_make_install_shows_pips_progress(tmp_path):
    """`make plan` on a fresh machine spends minutes in this pip run: it prints a line per package and download
    progress, never nothing (--quiet) and never the resolver's debug log (-v)."""
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    venv = tmp_path / "venv"
    dry = subprocess.run(["make", "-n", f"VENV={venv}", f"{venv}/.installed"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    installs = [line.split() for line in dry.splitlines() if "pip install" in line and "-e" in line.split()]
    assert len(installs) == 1, dry
    words = installs[0]
    assert not {"-q", "--quiet", "-v", "--verbose"} & set(words), words
    assert words[words.index("--progress-bar") + 1] == "on", words
