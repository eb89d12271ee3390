"""Simulator: the queue model read from planned objects (plan-JSON fixtures), and the helpers other simulator
tests build their scenarios with."""
from __future__ import annotations

import json

import pytest
import yaml

from gpu_platform.simulator import SimulationError, load_model
from gpu_platform.simulator.engine import Simulation, Timing, build_jobs
from gpu_platform.simulator.model import duration, quantity
from gpu_platform.simulator.traces import TraceJob, split_pool

KUEUE = "kueue.x-k8s.io/v1beta2"
FAST = Timing(cycle_s=1.0, finish_latency_s=0.0, evict_latency_s=0.0)


def resource(type_: str, name: str, inputs: dict, custom: bool = True) -> dict:
    return {"urn": f"urn:pulumi:test::gpu-platform::{type_}::{name}", "type": type_, "name": name, "parent": "",
            "custom": custom, "inputs": inputs, "options": {"protect": False, "ignoreChanges": [], "dependsOn": []}}


def kueue_object(kind: str, name: str, namespace: str | None = None, **body) -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return resource(f"kubernetes:{KUEUE}:{kind}", f"kueue-{kind.lower()}-{name}",
                    {"apiVersion": KUEUE, "kind": kind, "metadata": meta, **body})


def gpu_pool(name: str, nodes: int, per_node: dict[str, int], gpus_per_node: int) -> dict:
    return resource("gpu-platform:cluster:GpuNodePool", f"cluster-{name}",
                    {"poolName": name, "maxNodes": nodes, "advertised": per_node, "gpusPerNode": gpus_per_node,
                     "labels": {"gpu-platform.io/pool": name}}, custom=False)


def cq(quotas: dict, cohort: str | None = "all", within: str = "Never", reclaim: str = "Never",
       strategy: str = "BestEffortFIFO", weight: float | None = None, resource_name: str = "nvidia.com/gpu",
       borrow_within: dict | None = None) -> dict:
    """A ClusterQueue spec; quotas: {flavor: nominal | (nominal, borrowingLimit, lendingLimit)} or
    {(flavor, resource): ...}."""
    flavors: dict[str, list] = {}
    for key, value in quotas.items():
        flavor, res = key if isinstance(key, tuple) else (key, resource_name)
        nominal, borrowing, lending = value if isinstance(value, tuple) else (value, None, None)
        item = {"name": res, "nominalQuota": nominal}
        if borrowing is not None:
            item["borrowingLimit"] = borrowing
        if lending is not None:
            item["lendingLimit"] = lending
        flavors.setdefault(flavor, []).append(item)
    spec = {"queueingStrategy": strategy,
            "resourceGroups": [{"coveredResources": sorted({i["name"] for v in flavors.values() for i in v}),
                                "flavors": [{"name": f, "resources": r} for f, r in flavors.items()]}],
            "preemption": {"withinClusterQueue": within, "reclaimWithinCohort": reclaim,
                           **({"borrowWithinCohort": borrow_within} if borrow_within else {})}}
    if cohort:
        spec["cohortName"] = cohort
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return spec


def kueue_plan(pools: dict[str, tuple[int, dict[str, int], int]], queues: dict[str, dict],
               pods_ready: dict | None = None, fair: bool = False, priorities: dict[str, int] | None = None,
               team_priority: dict[str, str] | None = None, default_priority: int | None = None) -> dict:
    """A plan in the stable JSON shape with the objects the scheduling layer creates."""
    resources = [gpu_pool(name, *spec) for name, spec in pools.items()]
    if default_priority is not None:
        resources.append(resource("kubernetes:scheduling.k8s.io/v1:PriorityClass", "gpu-default",
                                  {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                   "metadata": {"name": "gpu-default"}, "value": default_priority,
                                   "globalDefault": True}))
    for name in pools:
        resources.append(kueue_object("ResourceFlavor", name, spec={"nodeLabels": {"gpu-platform.io/pool": name}}))
    for name, value in (priorities or {}).items():
        resources.append(kueue_object("WorkloadPriorityClass", name, value=value, description=name))
    for name, spec in queues.items():
        resources.append(kueue_object("ClusterQueue", name, spec=spec))
        resources.append(kueue_object("LocalQueue", "default", namespace=name, spec={"clusterQueue": name}))
        labels = {"gpu-platform.io/team": name}
        if team_priority and name in team_priority:
            labels["gpu-platform.io/priority"] = team_priority[name]
        resources.append(resource("kubernetes:core/v1:Namespace", f"{name}-namespace",
                                  {"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": name, "labels": labels}}))
    conf = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
    if pods_ready is not None:
        conf["waitForPodsReady"] = pods_ready
    if fair:
        conf["fairSharing"] = {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
    resources.append(resource("kubernetes:helm.sh/v3:Release", "kueue-release",
                              {"chart": "oci://registry.k8s.io/kueue/charts/kueue", "name": "kueue",
                               "values": {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(conf)}}}))
    return {"project": "gpu-platform", "stack": "test", "resources": resources, "outputs": {}}


def run(model, jobs: list[tuple], timing: Timing = FAST, horizon: float | None = None):
    """Run (id, team, submit, duration, units[, pool[, priority]]) jobs with invariant checks after every event."""
    trace = []
    for j in jobs:
        pool, resource_name = split_pool(j[5] or "") if len(j) > 5 else (None, None)
        trace.append(TraceJob(j[0], j[1], j[2], j[3], j[4], pool=pool, resource=resource_name,
                              priority=j[6] if len(j) > 6 else None))
    sim_jobs = build_jobs(model, trace)
    result = Simulation(model, sim_jobs, timing, horizon=horizon, check=True).run()
    return result, {j.id: j for j in sim_jobs}


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
    # (tests/test_cluster_kueue.py): the namespace's priority label is the team's ceiling, not its default.
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
