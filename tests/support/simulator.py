"""Helpers the simulator tests share (moved out of the test modules that defined them)."""
from __future__ import annotations

import yaml

from gpu_platform.simulator.engine import Simulation, Timing, build_jobs
from gpu_platform.simulator.traces import TraceJob, split_pool


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


KUEUE = "kueue.x-k8s.io/v1beta2"


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


FAST = Timing(cycle_s=1.0, finish_latency_s=0.0, evict_latency_s=0.0)


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


DEFAULT_TIERS = [{"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
                 {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"},
                              {"name": "nodeorder"}, {"name": "binpack"}]}]


def volcano_plan(queues: dict[str, dict], nodes: int = 2, actions: str = "enqueue, allocate, backfill",
                 gang: bool = True) -> dict:
    tiers = [{"plugins": [p for p in tier["plugins"] if gang or p["name"] != "gang"]} for tier in DEFAULT_TIERS]
    conf = yaml.safe_dump({"actions": actions, "tiers": tiers})
    resources = [gpu_pool("p", nodes, {"nvidia.com/gpu": 8}, 8),
                 resource("kubernetes:helm.sh/v3:Release", "volcano-release",
                          {"chart": "volcano", "values": {"custom": {"scheduler_config_override": conf}}})]
    for name, spec in queues.items():
        resources.append(resource("kubernetes:scheduling.volcano.sh/v1beta1:Queue", f"volcano-queue-{name}",
                                  {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                   "metadata": {"name": name}, "spec": spec}))
    return {"project": "gpu-platform", "stack": "test", "resources": resources, "outputs": {}}
