"""Simulator: jobs that can never be admitted under the stack are reported up front, with the limit that blocks
them on each flavor they may use (quota, pool size, topology domain), in the JSON and the table."""
from __future__ import annotations

import contextlib
import io
import json

from gpu_platform import cli
from gpu_platform.simulator import load_model

from support.simulator import cq, kueue_plan, run

POOLS = {"p": (4, {"nvidia.com/gpu": 8}, 8), "t": (4, {"nvidia.com/gpu": 8}, 8)}


def plan():
    """q: 16 nominal + 8 borrowing on p, 32 on the topology-aware t (4 nodes each); r lends 16 on p."""
    data = kueue_plan(POOLS, {"q": cq({"p": (16, 8, None), "t": 32}), "r": cq({"p": 16, "t": 0})})
    for res in data["resources"]:
        if res["type"].endswith(":ResourceFlavor") and res["inputs"]["metadata"]["name"] == "t":
            res["inputs"]["spec"]["topologyName"] = "gpu-network"
    return data


def limits(result):
    return {b.job.id: [(lim.flavor, lim.kind, lim.at_most) for lim in b.limits] for b in result.never_admittable}


def test_each_flavor_names_the_limit_that_blocks_the_job():
    model = load_model(plan()).with_tas({"t": 2})
    result, jobs = run(model, [("ok", "q", 0, 10, 24, "p"), ("quota", "q", 0, 10, 32, "p"),
                               ("domain", "q", 0, 10, 24, "t"), ("both", "q", 0, 10, 40)])
    assert limits(result) == {
        "quota": [("p", "quota", 24)],  # nominal 16 + borrowingLimit 8
        "domain": [("t", "topology", 16)],  # blocks of 2 nodes; t's quota and its 4 nodes would hold it
        "both": [("p", "quota", 24), ("t", "quota", 32)],
    }
    assert jobs["ok"].first_start is not None
    assert all(jobs[n].first_start is None for n in ("quota", "domain", "both"))


def test_a_gang_larger_than_its_pool_is_blocked_by_the_pool():
    # q may borrow all of p's 32 quota, but p has 2 nodes: 16 GPUs. (The cluster's other pool, where q has no
    # quota, holds 32: a job larger than every pool is refused as a bad trace instead.)
    data = kueue_plan({"p": (2, {"nvidia.com/gpu": 8}, 8), "o": (4, {"nvidia.com/gpu": 8}, 8)},
                      {"q": cq({"p": 16}), "r": cq({"p": 16, "o": 32})})
    result, _ = run(load_model(data), [("big", "q", 0, 10, 24)])
    assert limits(result) == {"big": [("p", "pool", 16)]}


def test_preferred_requests_are_only_blocked_by_the_pool():
    model = load_model(plan()).with_tas({"t": 2}, "preferred")
    result, jobs = run(model, [("domain", "q", 0, 10, 24, "t")])
    assert limits(result) == {} and jobs["domain"].first_start == 0


def test_reported_in_json_and_table(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan()))
    trace = tmp_path / "trace.csv"
    trace.write_text("job_id,team,submit_s,duration_s,gpus,pool\nquota,q,0,10,32,p\nok,q,0,10,8,p\n")
    reports = {}
    for fmt in ("json", "table"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(["simulate", "--plan", str(path), "--trace", str(trace), "--format", fmt,
                             "--baseline", "none"]) == 0
        reports[fmt] = out.getvalue()
    report = json.loads(reports["json"])
    assert report["overall"]["jobs_never_admittable"] == 1
    assert report["never_admittable"] == [{
        "job": "quota", "team": "q", "units": 32, "resource": "nvidia.com/gpu",
        "limits": [{"flavor": "p", "limit": "quota", "at_most": 24,
                    "message": "p: ClusterQueue q may hold at most 24 nvidia.com/gpu (nominalQuota 16, "
                               "borrowingLimit 8, cohort all shares 32 in all)"}]}]
    assert report["tas"] == {"t": {"flavor": "t", "topology": "gpu-network", "domain_nodes": 4,
                                   "levels": [{"label": "block", "nodes_per_domain": 4},
                                              {"label": "kubernetes.io/hostname", "nodes_per_domain": 1}],
                                   "request": "required", "level": "block"}}
    table = reports["table"]
    assert "  of which never admittable (listed below)" in table
    assert ("never admittable in the stack run (1 jobs; they stay pending):\n"
            "  job quota (team q, 32 nvidia.com/gpu): p: ClusterQueue q may hold at most 24") in table


def test_cli_block_size_and_request_reach_the_replay(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan()))
    trace = tmp_path / "trace.csv"
    trace.write_text("job_id,team,submit_s,duration_s,gpus,pool\ng,q,0,10,24,t\n")

    def never(*extra):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(["simulate", "--plan", str(path), "--trace", str(trace), "--format", "json",
                             "--baseline", "none", *extra]) == 0
        report = json.loads(out.getvalue())
        tas = report["tas"]["t"]
        return ([lim["limit"] for item in report["never_admittable"] for lim in item["limits"]],
                {k: tas[k] for k in ("flavor", "topology", "domain_nodes", "request", "level")})

    assert never() == ([], {"flavor": "t", "topology": "gpu-network", "domain_nodes": 4, "request": "required",
                            "level": "block"})
    assert never("--topology-blocks", "t=2")[0] == ["topology"]
    assert never("--topology-blocks", "t=2", "--tas-request", "preferred")[0] == []
    assert never("--tas-level", "kubernetes.io/hostname") == (["topology"], {
        "flavor": "t", "topology": "gpu-network", "domain_nodes": 4, "request": "required",
        "level": "kubernetes.io/hostname"})
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(["simulate", "--plan", str(path), "--trace", str(trace), "--topology-levels", "t=0"]) == 2
    assert "--topology-levels t=0: allowed: up to 0 whole numbers from 1" in err.getvalue()


# Volcano: a job no session can ever bind is reported too (capability, deserved share, pool size).

def volcano(queues, extra_pool=False, capacity_plugin=False):
    from support.simulator import gpu_pool
    from support.simulator import volcano_plan

    data = volcano_plan(queues)  # pool p: 2 nodes of 8 GPUs
    if extra_pool:
        data["resources"].append(gpu_pool("o", 1, {"nvidia.com/gpu": 8}, 8))
    if capacity_plugin:
        release = next(r for r in data["resources"] if r["type"] == "kubernetes:helm.sh/v3:Release")
        custom = release["inputs"]["values"]["custom"]
        custom["scheduler_config_override"] = custom["scheduler_config_override"].replace("proportion", "capacity")
    return load_model(data)


def test_volcano_a_gang_above_its_queues_capability_is_blocked():
    model = volcano({"a": {"weight": 1, "capability": {"nvidia.com/gpu": "8"}}, "b": {"weight": 1}})
    result, jobs = run(model, [("ok", "a", 0, 10, 8), ("big", "a", 0, 10, 12), ("other", "b", 0, 10, 12)])
    assert limits(result) == {"big": [("*", "quota", 8)]}
    assert jobs["ok"].first_start is not None and jobs["big"].first_start is None
    assert "capability allows at most 8 nvidia.com/gpu" in result.never_admittable[0].limits[0].message


def test_volcano_capacity_plugin_blocks_by_capability_not_deserved():
    # The capacity plugin allocates up to capability; deserved only decides what reclaim takes back.
    model = volcano({"a": {"weight": 1, "deserved": {"nvidia.com/gpu": "4"}, "capability": {"nvidia.com/gpu": "8"}}},
                    capacity_plugin=True)
    assert "capacity" in model.plugins
    result, jobs = run(model, [("above-deserved", "a", 0, 10, 8), ("above-capability", "a", 0, 10, 12)])
    assert limits(result) == {"above-capability": [("*", "quota", 8)]}
    assert jobs["above-deserved"].first_start is not None


def test_volcano_a_gang_larger_than_every_pool_is_blocked_by_the_pools():
    # 24 GPUs in the cluster (p 16, o 8), so the trace is valid; but a job's pods are bound into one pool.
    model = volcano({"a": {"weight": 1}}, extra_pool=True)
    result, jobs = run(model, [("ok", "a", 0, 10, 16), ("big", "a", 0, 10, 20)])
    # 20 GPUs go in four 5-GPU pods, one per 8-GPU node: p holds 10, o 5.
    assert sorted(limits(result)["big"]) == [("o", "pool", 5), ("p", "pool", 10)]
    assert jobs["ok"].first_start is not None and jobs["big"].first_start is None


def test_volcano_a_job_that_fits_later_is_not_reported():
    # Proportion's deserved share grows to the whole cluster when the other queue is idle: 16 fits in time.
    model = volcano({"a": {"weight": 1}, "b": {"weight": 1}})
    result, jobs = run(model, [("b", "b", 0, 100, 8), ("a", "a", 1, 10, 16)])
    assert limits(result) == {} and jobs["a"].first_start == 100
