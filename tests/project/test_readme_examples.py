"""The README and docs show what the commands print today: the Mermaid pictures and the Markdown summary of example
stacks are compared with the commands' output, every stack's picture is parsed by Mermaid's own parser
(tests/mermaid), and the CI workflow's `gpu-platform` commands are parsed with the real command line and run on an
example stack."""
from __future__ import annotations

import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from gpu_platform.cli import build_parser, main

from support.paths import ROOT, STACKS

README = ROOT / "README.md"
WORKFLOW_MARK = "# .github/workflows/policy.yml"
# Current majors (2026-12), from the actions' own release notes.
ACTIONS = {"actions/checkout": "v7", "actions/setup-python": "v7", "github/codeql-action/upload-sarif": "v4",
           "actions/upload-artifact": "v7"}


def _blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", path.read_text(), flags=re.S | re.M)


def _printed(tmp_path: Path, *argv: str) -> str:
    out = tmp_path / "out"
    assert main([*argv, "--out", str(out)]) == 0
    return out.read_text().rstrip("\n")


@pytest.mark.parametrize("doc, stack", [("README.md", "aws-prod"), ("docs/scheduling.md", "gcp-dev")])
def test_the_pictures_are_what_plan_prints_today(doc, stack, tmp_path):
    printed = _printed(tmp_path, "plan", stack, "--format", "mermaid")
    assert printed + "\n" in _blocks(ROOT / doc, "mermaid"), \
        f"{doc}'s picture of {stack} is stale: paste `gpu-platform plan {stack} --format mermaid`"


def test_the_readme_summary_is_what_plan_prints_today(tmp_path):
    printed = _printed(tmp_path, "plan", "aws-prod", "--format", "markdown")
    shown = re.search(r"<!-- begin: gpu-platform plan aws-prod --format markdown -->\n(.*?)\n<!-- end -->",
                      README.read_text(), flags=re.S)
    assert shown and shown.group(1) == printed, \
        "README's Markdown summary is stale: paste `gpu-platform plan aws-prod --format markdown`"


def _mermaid_problems(text: str) -> list[str]:
    """What would make Mermaid refuse or misdraw a flowchart of ours: ids, quoting, subgraphs, dangling edges."""
    lines = text.splitlines()
    problems = [] if lines[0] == "flowchart LR" else [f"first line {lines[0]!r}"]
    declared, edges, depth = set(), [], 0
    node = re.compile(r'^([A-Za-z][A-Za-z0-9_]*)(\["[^"]*"\]|\[\["[^"]*"\]\]|\(\["[^"]*"\]\))$')
    edge = re.compile(r'^([A-Za-z][A-Za-z0-9_]*) (?:-->|-- "[^"]*" -->|-\. "[^"]*" \.->) ([A-Za-z][A-Za-z0-9_]*)$')
    for line in (text.strip() for text in lines[1:]):
        if line.startswith("subgraph "):
            depth += 1
            match = re.fullmatch(r'subgraph ([A-Za-z][A-Za-z0-9_]*)\["[^"]*"\]', line)
            problems += [] if match else [f"subgraph {line!r}"]
        elif line == "end":
            depth -= 1
        elif line == "direction TB":
            continue
        elif match := node.match(line):
            declared.add(match.group(1))
        elif match := edge.match(line):
            edges.append(match.groups())
        else:
            problems.append(f"not a node, edge or subgraph line: {line!r}")
    problems += [] if depth == 0 else [f"{depth} subgraph(s) not closed"]
    problems += [f"edge to undeclared {end}" for pair in edges for end in pair if end not in declared]
    return problems


@pytest.mark.parametrize("stack", STACKS)
def test_the_picture_is_a_well_formed_flowchart_with_pools_teams_queues_and_borrowing(stack, tmp_path):
    text = _printed(tmp_path, "plan", stack, "--format", "mermaid")
    assert _mermaid_problems(text) == []
    if stack == "aws-prod":
        assert 'subgraph cohort_gpu_platform["Kueue cohort gpu-platform"]' in text
        assert "taint gpu-platform.io/spot=true:NoSchedule" in text  # the spot pool's own taint
        assert 'queue_research -- "16 GPUs + borrows up to 8" --> pool_h100_train' in text
        assert 'queue_applied -. "borrows h100-train from" .-> queue_research' in text
        # serving may borrow nothing: no dotted edge leaves its queue
        assert not re.search(r"^  queue_serving -\.", text, flags=re.M)


def test_the_checker_refuses_a_broken_picture():
    assert _mermaid_problems('flowchart LR\n  a["x"]\n  a --> b') == ["edge to undeclared b"]
    assert _mermaid_problems('flowchart LR\n  subgraph s["x"]\n  a["say "hi""]') == [
        "not a node, edge or subgraph line: 'a[\"say \"hi\"\"]'", "1 subgraph(s) not closed"]


MERMAID = ROOT / "tests" / "mermaid"


def test_mermaids_own_parser_accepts_every_picture_and_refuses_a_broken_one(tmp_path):
    if not (MERMAID / "node_modules" / "mermaid").is_dir():
        pytest.fail("Mermaid's parser is not installed: `make test` installs it (npm ci --prefix tests/mermaid)")
    files = []
    for stack in STACKS:
        files.append(tmp_path / f"{stack}.mmd")
        assert main(["plan", stack, "--format", "mermaid", "--out", str(files[-1])]) == 0
    files.append(tmp_path / "broken.mmd")
    files[-1].write_text('flowchart LR\n  a[["unclosed"] --> b\n')
    result = subprocess.run(["node", str(MERMAID / "check.mjs"), *map(str, files)], capture_output=True, text=True,
                            timeout=120)
    lines = result.stdout.splitlines()
    assert result.returncode == 1, result.stderr
    assert lines[:-1] == [f"ok {f} flowchart-v2" for f in files[:-1]]
    assert lines[-1].startswith(f"refused {files[-1]}: Parse error")


def _workflow() -> dict:
    (block,) = [b for b in _blocks(README, "yaml") if b.startswith(WORKFLOW_MARK)]
    return yaml.safe_load(block)


def _commands(workflow: dict, stack: str) -> list[tuple[dict, list[str]]]:
    """Each step's `gpu-platform` command as argv, for one matrix stack, without the shell's redirections."""
    found = []
    for step in workflow["jobs"]["check"]["steps"]:
        run = step.get("run", "")
        if not run.startswith("gpu-platform "):
            continue
        line = run.replace("${{ matrix.stack }}", stack).split(" || ")[0].split(" >> ")[0]
        found.append((step, shlex.split(line)[1:]))
    return found


def test_the_readme_workflow_has_code_scanning_permissions_and_current_actions():
    workflow = _workflow()
    assert workflow["permissions"] == {"contents": "read", "security-events": "write", "actions": "read"}
    used = [step["uses"] for job in workflow["jobs"].values() for step in job["steps"] if "uses" in step]
    assert {u.split("@")[0] for u in used} == set(ACTIONS)
    assert all(u.split("@")[1] == ACTIONS[u.split("@")[0]] for u in used), used
    steps = workflow["jobs"]["check"]["steps"]
    assert any("$GITHUB_STEP_SUMMARY" in s.get("run", "") and "--format markdown" in s["run"] for s in steps)


def test_the_readme_workflow_plans_once_and_its_commands_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    commands = _commands(_workflow(), "aws-prod")
    parser = build_parser()
    parsed = [(step, argv, parser.parse_args(argv)) for step, argv in commands]  # every flag exists as written
    plans = [args for _, _, args in parsed if args.command == "plan"]
    assert len(plans) == 1 and plans[0].format == "json" and plans[0].out == "plan-aws-prod.json"
    checks = [args for step, _, args in parsed if args.command == "check" and "failure()" not in str(step.get("if"))]
    assert checks and all(args.plan == "plan-aws-prod.json" for args in checks)
    assert {args.format for args in checks} == {"sarif", "markdown", "junit"}
    for step, argv, _ in parsed:
        if "failure()" in str(step.get("if")):
            continue  # the invalid-stack fallback: tests/policy/test_check_reports.py runs it
        assert main(argv) == 0, argv
    assert (tmp_path / "policy-aws-prod.sarif").exists()
    assert ET.parse(tmp_path / "policy-aws-prod.xml").getroot().tag == "testsuites"
