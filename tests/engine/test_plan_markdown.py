"""`plan --format markdown`: per-pool quotas and unreachable capacity; with --diff, the totals, the summary rows that
change and the old -> new value of every changed input under Pulumi's marks. `check --format markdown` puts the
findings under the same summary."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpu_platform.cli import main

from support.paths import ROOT


def _run(tmp_path: Path, *argv: str, code: int = 0) -> str:
    out = tmp_path / "out.md"
    assert main([*argv, "--out", str(out)]) == code
    return out.read_text()


def _rows(text: str, header_start: str) -> list[list[str]]:
    """The rows of the Markdown table whose header starts with `header_start`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


@pytest.fixture(scope="module")
def base_plan(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "aws-prod.json"
    assert main(["plan", "aws-prod", "--format", "json", "--out", str(path)]) == 0
    return path


def test_quotas_are_per_pool_and_unreachable_capacity_per_pool(tmp_path):
    text = _run(tmp_path, "plan", "aws-prod", "--format", "markdown")
    quotas = {(r[0], r[3]): (r[5], r[6], r[7]) for r in _rows(text, "| team |")}
    # research's quota is 16 on h100-train and 32 on l4-notebooks, not one sum of 48, each in its pool's units
    assert quotas[("research", "h100-train")] == ("GPUs", "16", "8")
    assert quotas[("research", "l4-notebooks")] == ("time-slicing replicas", "32", "8")
    assert quotas[("serving", "a100-infer")] == ("MIG slices", "56", "0")
    pools = {r[0]: r for r in _rows(text, "| pool |")}
    assert pools["h100-train"][3] == "0-4" and pools["h100-train"][-1] == "8 GPUs"
    assert pools["a100-infer"][-1] == "none"


def test_diff_shows_changed_summary_rows_and_old_to_new_inputs(tmp_path, base_plan):
    text = (ROOT / "stacks" / "Pulumi.aws-prod.yaml").read_text()
    h100 = re.search(r"- name: h100-train\n(?:      .*\n)*?      maxNodes: 4\n", text).group(0)
    text = text.replace(h100, h100.replace("maxNodes: 4", "maxNodes: 8"))
    text = text.replace("quotas: {h100-train: 16, l4-notebooks: 32}", "quotas: {h100-train: 48, l4-notebooks: 32}")
    stack = tmp_path / "Pulumi.aws-prod.yaml"
    stack.write_text(text)
    shown = _run(tmp_path, "plan", "--file", str(stack), "--diff", str(base_plan), "--format", "markdown")
    assert re.search(r"^\*\*0 to add, \d+ to change, 0 to replace, 0 to delete\*\*$", shown, flags=re.M)
    summary = _rows(shown, "|  | row |")
    assert ["~", "pool h100-train", "nodes", "0-4 → 0-8"] in summary
    assert ["~", "team research on h100-train", "nominal", "16 → 48"] in summary
    inputs = _rows(shown, "|  | type |")
    assert all(row[0] in ("+", "~", "+-", "-") for row in inputs)
    assert ["~", "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "kueue-queue-research",
            "`spec.resourceGroups[0].flavors[0].resources[0].nominalQuota`", "`16` → `48`"] in inputs
    # a key holding dots (requests.nvidia.com/gpu) is read as one key, not as unset
    assert any(row[3] == "`spec.hard.requests.nvidia.com/gpu`" and "(unset)" not in row[4] for row in inputs)
    assert any(row[2].endswith("(pool h100-train)") and row[4] == "`4` → `8`" for row in inputs)


def test_check_markdown_puts_findings_under_the_summary(tmp_path):
    text = _run(tmp_path, "check", "aws-prod", "--format", "markdown")
    assert text.index("### Quotas per pool") < text.index("## gpu-platform check `aws-prod`: PASS")
    findings = _rows(text, "|  | rule |")
    assert {(r[0], r[1]) for r in findings} >= {("WARN", "GPU019"), ("config warning", "-")}
    assert all(re.search(r"`stacks/Pulumi\.aws-prod\.yaml:\d+`", r[3]) for r in findings)
