"""`plan` prints a summary people read first (layers, GPU pools, teams), then the tree; JSON keeps its shape.
Long simulations say how far they are; the Makefile says what its first install fetches."""
from __future__ import annotations

import io
import json

import pytest

from gpu_platform.cli import main
from gpu_platform.commands.simulate import Progress
from gpu_platform.engine.plan import Plan, plan_stack
from gpu_platform.engine.summary import layer_counts, render_summary

from support.paths import ROOT
from support.plans import shared_plan


@pytest.fixture(scope="module")
def aws_prod() -> Plan:
    return shared_plan("aws-prod")


def section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[start:end]


def test_summary_comes_first_then_the_tree(capsys, aws_prod):
    assert main(["plan", "aws-prod"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    custom = sum(1 for r in aws_prod.resources if r.custom)
    components = len(aws_prod.resources) - custom
    assert lines[0] == (f"gpu-platform/aws-prod: {len(aws_prod.resources)} resources ({custom} cloud and Kubernetes "
                        f"resources, {components} components)")
    assert lines.index("layers:") < lines.index("GPU pools:") < lines.index("teams:") < lines.index("resources:")
    assert "  gpu-platform:aws:EksCluster  ml-prod [protected]" in lines[lines.index("resources:"):]


def test_every_gpu_pool_with_type_gpus_bounds_capacity_sharing_and_driver_owner(aws_prod):
    rows = section(render_summary(aws_prod), "GPU pools:")
    assert rows[0].split() == ["pool", "instance", "type", "GPUs", "per", "node", "nodes", "capacity", "sharing",
                               "driver", "fabric", "unreachable", "GPUs"]
    assert rows[1].split() == ["a100-infer", "p4de.24xlarge", "8", "x", "A100-80GB", "1-2", "on-demand", "mig",
                               "all-1g.10gb", "cloud", "image", "none", "(efa", "unused:", "not", "attached)", "none"]
    assert rows[2].split() == ["h100-train", "p5.48xlarge", "8", "x", "H100-80GB", "0-4", "on-demand", "none",
                               "cloud", "image", "efa", "8", "GPUs"]
    assert rows[3].split() == ["l4-notebooks", "g6.12xlarge", "4", "x", "L4", "0-4", "spot", "time-slicing", "x4",
                               "cloud", "image", "none", "(efa", "unused:", "not", "attached)", "32", "time-slicing",
                               "replicas"]


def test_a_fabric_on_the_instance_type_but_not_attached_is_shown_unused():
    rows = {row.split()[0]: row for row in section(render_summary(shared_plan("oci-prod")), "GPU pools:")[1:]}
    assert "none (rdma unused: not attached)" in rows["h100-train"]  # BM.GPU.H100.8, fabric: none
    assert "unused" not in rows["a10-infer"]  # VM.GPU.A10.2 has no fabric to leave unused


def test_every_team_with_quota_and_queue(aws_prod):
    rows = section(render_summary(aws_prod), "teams:")
    # research: 16 (h100) + 32 (l4) nominal + 8 borrowing... as the quota the Team plans: nominal plus borrowing.
    assert "  research  high      nvidia.com/gpu 64                kueue research/default -> ClusterQueue research" \
        in rows
    assert len(rows) == 4  # header + 3 teams


def test_volcano_queues_and_operator_driver_owner_are_named():
    teams = section(render_summary(shared_plan("gcp-dev")), "teams:")
    assert len(teams) > 1 and all(row.rstrip().endswith(f"volcano Queue {row.split()[0]}") for row in teams[1:])
    config = {"gpu-platform:gpuPools": [{"name": "a100", "instanceType": "a2-ultragpu-8g", "maxNodes": 2,
                                         "driver": "operator"}],
              "gpu-platform:teams": [{"name": "research", "quotas": {"a100": 8}}]}
    pools = section(render_summary(plan_stack("gcp-dev", config_overrides=config)), "GPU pools:")
    assert pools[1].split()[0] == "a100" and pools[1].rstrip().endswith("GPU Operator  none    8 GPUs")


# What no team's queue can ever use of each pool at maxNodes, per example stack (policies/pool_reach.py).
UNREACHABLE = {
    "aws-dev": {"a10g-train": "none", "l4-dev": "none"},
    "aws-prod": {"a100-infer": "none", "h100-train": "8 GPUs", "l4-notebooks": "32 time-slicing replicas"},
    "azure-prod": {"a10-spot": "none", "a100-infer": "28 MIG slices", "h100-train": "none"},
    "gcp-dev": {"l4-infer": "none", "l4-train": "none"},
    "gcp-prod": {"a100-infer": "none", "h100-train": "none", "l4-spot": "none"},
    "oci-prod": {"a10-infer": "none", "a10-spot": "none", "a100-infer": "none", "h100-train": "none"},
}


@pytest.mark.parametrize("stack", sorted(UNREACHABLE))
def test_unreachable_capacity_per_pool_of_every_example_stack(stack):
    rows = section(render_summary(shared_plan(stack)), "GPU pools:")
    start = rows[0].index("unreachable GPUs")
    assert {row.split()[0]: row[start:].strip() for row in rows[1:]} == UNREACHABLE[stack]


def test_unreachable_is_unknown_when_the_queues_cannot_be_read(aws_prod):
    plan = Plan.from_json(json.loads(json.dumps(aws_prod.to_json())))
    flavor = next(r for r in plan.resources if r.type.endswith(":ResourceFlavor") and r.inputs["metadata"]["name"]
                  == "h100-train")
    flavor.inputs["spec"]["nodeLabels"] = {"eks.amazonaws.com/nodegroup": "ml-prod-h100-train"}
    rows = section(render_summary(plan), "GPU pools:")
    assert all(row.rstrip().endswith("?") for row in rows[1:])


def test_layer_counts_add_up_to_the_plan(aws_prod):
    counts = layer_counts(aws_prod)
    assert set(counts) == {"cluster", "gpu", "autoscaling", "scheduling", "tenancy", "observability", "policy"}
    assert sum(c + r for c, r in counts.values()) == len(aws_prod.resources)
    tenancy = [r for r in aws_prod.resources if r.type.startswith("gpu-platform:tenancy:")]
    assert counts["tenancy"] == (len(tenancy), sum(1 for r in aws_prod.resources if r.custom and any(
        r.parent.endswith(f"{t.type}::{t.name}") for t in tenancy)))


def test_json_output_keeps_its_documented_shape(tmp_path):
    out = tmp_path / "plan.json"
    assert main(["plan", "aws-prod", "--format", "json", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data) == {"project", "stack", "resources", "outputs"}
    assert all(set(r) == {"urn", "type", "name", "parent", "custom", "inputs", "options"} for r in data["resources"])
    assert all(set(r["options"]) == {"protect", "ignoreChanges", "dependsOn"} for r in data["resources"])


def test_a_plan_read_back_from_json_summarizes_the_same(aws_prod):
    assert render_summary(Plan.from_json(json.loads(json.dumps(aws_prod.to_json())))) == render_summary(aws_prod)


# --- progress and first-run messages ---------------------------------------------------------------------------

def test_progress_is_silent_for_short_runs_and_reports_long_ones():
    now = [0.0]
    out = io.StringIO()
    progress = Progress("stack", last_submit_s=7200, out=out, clock=lambda: now[0])
    now[0] = 1.0
    progress(1800)
    assert out.getvalue() == ""
    now[0] = 3.0
    progress(3600)
    now[0] = 4.0
    progress(5400)  # within 2 s of the last line: quiet
    now[0] = 5.5
    progress(9000)
    assert out.getvalue().splitlines() == [
        "simulate: stack: 1.0 h simulated, 50% of the trace submitted, 3 s",
        "simulate: stack: 2.5 h simulated, 100% of the trace submitted, 6 s",
    ]


def test_simulate_reports_progress_on_stderr_only(monkeypatch, capsys):
    from gpu_platform.commands import simulate
    from gpu_platform.simulator import engine

    monkeypatch.setattr(simulate, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(engine, "PROGRESS_EVERY", 50)
    assert main(["simulate", "aws-prod", "--format", "json", "--trace",
                 "synthetic:jobs=300,interarrival=60,pool=h100-train"]) == 0
    captured = capsys.readouterr()
    assert "simulate: stack: " in captured.err and "simulate: baseline static: " in captured.err
    json.loads(captured.out)  # standard output stays the report alone


def test_makefile_says_what_the_first_install_fetches_before_pip_runs():
    recipe = (ROOT / "Makefile").read_text().split("$(VENV)/.installed: pyproject.toml")[1].split("\n\n")[0]
    lines = [line.strip() for line in recipe.splitlines() if line.strip()]
    install = next(i for i, line in enumerate(lines) if "pip install" in line and " -e " in line)
    assert lines[install - 1].startswith("@echo") and "10 minutes" in " ".join(lines[:install])
