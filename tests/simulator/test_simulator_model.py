"""Simulator: the queue model read from planned objects (plan-JSON fixtures), and the helpers other simulator
tests build their scenarios with."""
from __future__ import annotations

import json

import pytest

from gpu_platform.simulator import SimulationError, load_model
from gpu_platform.simulator.model import duration, quantity

from support.simulator import cq, kueue_plan


def test_model_reads_queues_flavors_pools_and_gang_settings():
    plan = kueue_plan({"h100": (4, {"nvidia.com/gpu": 8}, 8)},
                      {"research": cq({"h100": (16, 8, None)}, within="LowerPriority", reclaim="Any", weight=2),
                       "serving": cq({"h100": (16, None, 4)})},
                      pods_ready={"timeout": "10m", "blockAdmission": True,
                                  "requeuingStrategy": {"backoffBaseSeconds": 30, "backoffLimitCount": 3}},
                      fair=True, priorities={"gpu-high": 100000, "gpu-normal": 10000},
                      team_priority={"research": "high"}, default_priority=5)
    model = load_model(plan)
    assert model.scheduler == "kueue" and model.fair_sharing
    assert model.pools["h100"].nodes == 4 and model.pools["h100"].per_node == {"nvidia.com/gpu": 8}
    assert model.flavors["h100"].pool == "h100"
    research = model.queues["research"]
    assert research.cohort == "all" and research.weight == 2
    assert research.quotas[("h100", "nvidia.com/gpu")].nominal == 16
    assert research.quotas[("h100", "nvidia.com/gpu")].borrowing_limit == 8
    assert model.queues["serving"].quotas[("h100", "nvidia.com/gpu")].guaranteed == 12
    assert (research.within_cluster_queue, research.reclaim_within_cohort) == ("LowerPriority", "Any")
    assert model.gang.enabled and model.gang.timeout_s == 600 and model.gang.block_admission
    assert (model.gang.backoff_base_s, model.gang.backoff_limit) == (30, 3)
    # A job without a priority class runs at the global default PriorityClass, as real Kueue gives it
    # (tests/cluster/test_cluster_kueue.py): the namespace's priority label is the team's ceiling, not its default.
    assert model.teams["research"].priority == model.teams["serving"].priority == 5
    assert model.teams["research"].namespaces == ("research",)


def test_model_accepts_a_plan_json_file(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(kueue_plan({"p": (1, {"nvidia.com/gpu": 8}, 8)}, {"a": cq({"p": 8})})))
    assert set(load_model(path).queues) == {"a"}


def test_model_variants_static_no_gang_and_node_override():
    model = load_model(kueue_plan({"p": (4, {"nvidia.com/gpu": 8}, 8)},
                                  {"a": cq({"p": (8, 4, None)}, reclaim="Any")}, pods_ready={"timeout": "5m"}))
    static = model.static()
    assert static.queues["a"].cohort is None and static.queues["a"].reclaim_within_cohort == "Never"
    assert static.queues["a"].quotas[("p", "nvidia.com/gpu")].borrowing_limit is None
    assert model.gang.enabled and not model.without_gang().gang.enabled
    assert model.with_nodes({"p": 2}).pools["p"].nodes == 2
    with pytest.raises(SimulationError, match="unknown pool"):
        model.with_nodes({"nope": 1})


@pytest.mark.parametrize("bad, message", [
    ({"project": "x", "stack": "y", "resources": []}, "resources: is empty"),
    ({"project": "x", "stack": "y", "resources": [{"urn": "u", "type": "random:index/randomPassword:RandomPassword",
                                                   "name": "p", "parent": "", "custom": True, "inputs": {},
                                                   "options": {}}]}, "no Kueue ClusterQueue and no Volcano Queue"),
])
def test_model_rejects_plans_without_queues(bad, message):
    with pytest.raises(SimulationError, match=message):
        load_model(bad)


def test_model_rejects_a_file_that_is_not_plan_json(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text("{not json")
    with pytest.raises(SimulationError, match=r"plan.json is not a plan .*\n  - line 1: not JSON"):
        load_model(path)


def test_quantities_durations_and_gpu_equivalents():
    assert quantity("8", "x") == 8 and quantity(8.0, "x") == 8 and quantity("2k", "x") == 2000
    assert duration("10m") == 600 and duration("1h30m") == 5400 and duration("600s") == 600
    with pytest.raises(SimulationError):
        duration("ten minutes")
    mixed = load_model(kueue_plan({"a100": (1, {"nvidia.com/mig-1g.10gb": 32, "nvidia.com/mig-3g.40gb": 8}, 8)},
                                  {"a": cq({("a100", "nvidia.com/mig-1g.10gb"): 32}, cohort=None)})).pools["a100"]
    assert mixed.gpu_equivalent("nvidia.com/mig-1g.10gb") == pytest.approx(1 / 7)
    assert mixed.gpu_equivalent("nvidia.com/mig-3g.40gb") == pytest.approx(3 / 7)
    shared = load_model(kueue_plan({"l4": (1, {"nvidia.com/gpu": 16}, 4)}, {"a": cq({"l4": 16})})).pools["l4"]
    assert shared.gpu_equivalent("nvidia.com/gpu") == 0.25
