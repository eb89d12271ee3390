"""What every command prints around its result: `--version`, and config warnings with one prefix on standard error,
whatever the command and its output format."""
from __future__ import annotations

import json
from importlib.metadata import version

import pytest

from gpu_platform.cli import main

from support.paths import ROOT

# aws-dev without its authorized networks: valid, with one config warning.
WARNED = "warning: cluster.authorizedNetworks: is required when cluster.privateEndpoint is false"


@pytest.fixture(scope="module")
def warned_stack(tmp_path_factory):
    text = (ROOT / "stacks" / "Pulumi.aws-dev.yaml").read_text()
    path = tmp_path_factory.mktemp("stacks") / "Pulumi.aws-dev.yaml"
    path.write_text("\n".join(line for line in text.splitlines() if "authorizedNetworks" not in line) + "\n")
    return str(path)


def test_version_is_the_installed_package_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"gpu-platform {version('gpu-platform')}\n"


@pytest.mark.parametrize("argv", [
    ["validate"],
    ["plan"],
    ["plan", "--format", "json"],
    ["check"],
    ["check", "--format", "json"],
    ["simulate", "--format", "json", "--baseline", "none", "--trace", "synthetic:jobs=5,interarrival=60"],
    ["nccl-test", "--pool", "a10g-train"],
], ids=" ".join)
def test_config_warnings_carry_the_prefix_on_stderr_in_every_command(warned_stack, argv, capsys):
    # check also fails GPU013 on this stack (its public endpoint): the warning is printed all the same.
    assert main([*argv, "--file", warned_stack]) == (1 if argv[0] == "check" else 0)
    captured = capsys.readouterr()
    assert [line for line in captured.err.splitlines() if "authorizedNetworks" in line] == \
        [line for line in captured.err.splitlines() if line.startswith(WARNED)]
    assert WARNED in captured.err
    assert WARNED not in captured.out
    if "json" in argv:
        json.loads(captured.out)  # standard output stays the result alone


def test_each_config_warning_is_printed_once_outside_pytest(warned_stack):
    """The program logs its config warnings for `pulumi up`; under the offline engine they went to Python's logging
    as well, printed bare beside the command's own line (pytest's log capture hides that, so a real process runs)."""
    import os
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "gpu_platform.cli", "plan", "--file", warned_stack, "--format",
                           "json"], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "authorizedNetworks" in line]
    assert len(lines) == 1 and lines[0].startswith(WARNED), done.stderr
