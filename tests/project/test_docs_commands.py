"""Every `gpu-platform` command the README and docs/ show in a shell block runs offline as written, and those that
read a stack by name and take no stack-specific option (validate, plan, check) also run on one example stack of
every cloud: an example that works only on the stack it names would mislead readers on the other clouds."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from gpu_platform.cli import main

from support.paths import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = ("sh", "bash", "console", "shell", "")  # fenced blocks whose lines are commands (or their transcript)
PLACEHOLDER = re.compile(r"<|\[|\.\.\.|path/to/")  # usage lines (`<stack>`, `[--file PATH]`), not examples
# Read by name with no option naming a pool or team of the stack: the same example holds on every cloud.
PORTABLE = ("validate", "plan", "check")
CLOUD_STACKS = {"aws": "aws-prod", "azure": "azure-prod", "gcp": "gcp-prod", "oci": "oci-prod"}
STACK = re.compile(r"\b(aws|azure|gcp|oci)-(dev|prod)\b")


def blocks() -> list[tuple[str, list[list[str]]]]:
    """(where, commands in order) for each shell (or plain) block holding a runnable `gpu-platform` command."""
    found = []
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        fence, commands, start, i = None, [], 0, 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("```"):
                if fence is None:
                    fence, commands, start = line[3:].strip(), [], i + 1
                else:
                    if commands and fence in SHELLS:
                        found.append((f"{doc.relative_to(ROOT)}:{start}", commands))
                    fence = None
            elif fence is not None:
                text = line.removeprefix("$ ")
                while text.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    text = text[:-1] + " " + lines[i].strip()
                if text.startswith("gpu-platform ") and not PLACEHOLDER.search(text):
                    argv = shlex.split(text, comments=True)[1:]
                    # A redirection (`>> "$GITHUB_STEP_SUMMARY"`) is the shell's, not the command's.
                    redirect = [k for k, arg in enumerate(argv) if arg in (">", ">>")]
                    commands.append(argv[:redirect[0]] if redirect else argv)
            i += 1
    return found


BLOCKS = blocks()


def cases() -> list:
    out, seen = [], set()
    for where, commands in BLOCKS:
        key = tuple(map(tuple, commands))
        if key in seen:
            continue  # the same example shown twice (README and its docs page) runs once
        seen.add(key)
        out.append(pytest.param(commands, id=f"{where} as written"))
        named = {m.group(0) for argv in commands for arg in argv if (m := STACK.fullmatch(arg))}
        if all(argv[0] in PORTABLE for argv in commands) and len(named) == 1:
            (stack,) = named
            for cloud, other in CLOUD_STACKS.items():
                if other != stack:
                    out.append(pytest.param([[other if a == stack else a.replace(stack, other) for a in argv]
                                             for argv in commands], id=f"{where} on {cloud}"))
    return out


def test_the_docs_show_commands_to_run():
    assert sum(len(commands) for _, commands in BLOCKS) >= 8
    assert {where.split(":")[0] for where, _ in BLOCKS} >= {"README.md", "docs/policy.md", "docs/updates.md"}


@pytest.mark.parametrize("commands", cases())
def test_each_documented_command_runs_offline(commands, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # The one input a reader brings: their exemptions file (docs/policy.md), here with none.
    Path("exemptions.yaml").write_text("exemptions: []\n")
    for argv in commands:
        # The docs run from the checkout: a path into it (docs/examples/...) is read there; outputs land in tmp_path.
        argv = [str(ROOT / arg) if "/" in arg and (ROOT / arg).exists() else arg for arg in argv]
        code = main(argv)
        err = capsys.readouterr().err
        # 0, or 1 for what the command is documented to fail on (findings; a destructive diff): never a usage error.
        assert code in (0, 1) and "Traceback" not in err, (argv, code, err[-2000:])
