"""Simulator: Kueue topology-aware scheduling (TAS) in the queue replay, on hand-made traces.

One pool of four 8-GPU nodes whose ResourceFlavor names a Topology, in blocks of two nodes ({0,1} and {2,3}),
1-second cycles at whole seconds, no finish or eviction latency.
"""
from __future__ import annotations

import pytest

from gpu_platform.simulator import SimulationError, load_model
from gpu_platform.simulator.kueue.tas import assign
from gpu_platform.simulator.model import TasRequest

from support.simulator import cq, kueue_object, kueue_plan, run

# The EKS Topology the platform plans for labelled instance types (components/scheduling/topology.py): three
# network layers, then the host.
EKS_LEVELS = ("topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
              "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname")


def request(mode: str, spans=(None, 2, 1), level: int = 1) -> TasRequest:
    """Blocks of two nodes under one domain over the pool, unless `spans` (nodes per domain, broadest first)."""
    levels = ("block", "kubernetes.io/hostname") if len(spans) == 2 else EKS_LEVELS[-len(spans):]
    return TasRequest(levels, spans, len(spans) - 1 if mode == "implied" else level, mode)


def tas_model(request: str = "required", domain_nodes: int = 2, topology: str = "gpu-network", nodes: int = 4,
              above: dict | None = None, level: str | None = None, levels: tuple[str, ...] | None = None, **kw):
    plan = kueue_plan({"p": (nodes, {"nvidia.com/gpu": 8}, 8)}, {"q": cq({"p": 8 * nodes}, cohort=None)}, **kw)
    for res in plan["resources"]:
        if res["type"].endswith(":ResourceFlavor"):
            res["inputs"]["spec"]["topologyName"] = topology
    if levels:
        plan["resources"].append(kueue_object("Topology", topology,
                                              spec={"levels": [{"nodeLabel": label} for label in levels]}))
    return load_model(plan).with_tas({"p": domain_nodes}, request, above, level)


# One head per cycle: x1..x4 are admitted at 0..3; x1, x2 fill block 0 and x3, x4 block 1 (best fit keeps x2 next
# to x1). x2 and x3 end at 11 and 12, leaving one free node in each block: 16 GPUs free, within quota, but no block
# with two. x1 ends at 100, freeing block 0.
FRAGMENTED = [("x1", "q", 0, 100, 8), ("x2", "q", 0, 10, 8), ("x3", "q", 0, 10, 8), ("x4", "q", 0, 100, 8),
              ("g", "q", 5, 50, 16)]


def blocks(job):
    return {node // 2 for node, _ in job.bound}


def test_required_gang_waits_for_one_domain_where_quota_alone_admits_it_across_two():
    _, jobs = run(tas_model("required"), FRAGMENTED)
    assert jobs["g"].first_start == 100 and jobs["g"].admit_t == 100
    _, jobs = run(tas_model("required"), FRAGMENTED, horizon=5)
    assert [blocks(jobs[n]) for n in ("x1", "x2", "x3", "x4")] == [{0}, {0}, {1}, {1}]


def test_preferred_gang_spreads_over_domains_when_none_holds_it():
    _, jobs = run(tas_model("preferred"), FRAGMENTED)
    assert jobs["g"].first_start == 12


def test_without_tas_the_same_gang_starts_split_over_blocks():
    plan = kueue_plan({"p": (4, {"nvidia.com/gpu": 8}, 8)}, {"q": cq({"p": 32}, cohort=None)})
    _, jobs = run(load_model(plan), FRAGMENTED)
    assert jobs["g"].first_start == 12
    _, jobs = run(load_model(plan), FRAGMENTED, horizon=20)
    assert blocks(jobs["g"]) == {0, 1}


def test_a_tas_gang_never_half_starts():
    # Without TAS, kube-scheduler binds a's pod and b's first pod, and b waits holding a node (quota admits both).
    # TAS places at admission: b is admitted only when both its pods have nodes, and starts at once.
    plan = kueue_plan({"p": (2, {"nvidia.com/gpu": 8}, 8)}, {"q": cq({"p": 32}, cohort=None)})
    trace = [("a", "q", 0, 100, 8), ("b", "q", 0, 100, 16)]
    result, jobs = run(load_model(plan), trace, horizon=50)
    assert jobs["b"].first_start is None and len(jobs["b"].bound) == 1
    for res in plan["resources"]:
        if res["type"].endswith(":ResourceFlavor"):
            res["inputs"]["spec"]["topologyName"] = "gpu-network"
    result, jobs = run(load_model(plan).with_tas({"p": 2}), trace, horizon=50)
    assert jobs["b"].first_start is None and jobs["b"].bound == [] and jobs["b"].admit_t is None
    _, jobs = run(load_model(plan).with_tas({"p": 2}), trace)
    assert jobs["b"].first_start == 100


def test_hosts_only_topology_places_unconstrained():
    # gpu-hosts has no block level: jobs go unannotated (implied), so g spreads over the two free nodes.
    _, jobs = run(tas_model("required", topology="gpu-hosts"), FRAGMENTED)
    assert jobs["g"].first_start == 12


@pytest.mark.parametrize("free, size, count, mode, expected", [
    # preferred, the gang in no block: pods go to the hosts of the chosen blocks with most room, pooled (Kueue's
    # descent ignores how many each block was given): block {0,1} was given 4 and {2,3} 1, node 2 takes 3
    ([2, 2, 3, 0], 1, 5, "preferred", [0, 0, 2, 2, 2]),
    # best fit: the fuller block that still holds the gang, then the fuller node of it
    ([8, 0, 8, 8], 8, 1, "required", [0]),
    ([8, 8, 8, 0], 4, 2, "required", [2, 2]),
    # required: no block holds 3 pods of 8
    ([8, 8, 8, 8], 8, 3, "required", None),
    # preferred: the largest block first, best fit for the rest
    ([8, 8, 8, 0], 8, 3, "preferred", [0, 1, 2]),
    # implied (LeastFreeCapacity): the fullest node that holds the gang, else fill from the fullest
    ([8, 4, 8, 8], 4, 1, "implied", [1]),
    ([8, 4, 8, 0], 4, 4, "implied", [0, 0, 1, 2]),
])
def test_assignment_follows_kueue_best_fit_and_least_free_capacity(free, size, count, mode, expected):
    assert assign(free, size, count, request(mode)) == expected


def test_preemption_targets_must_leave_a_domain_for_the_gang():
    # a1 (a) and b1 fill block 0, b2 and b3 block 1; b borrows 8 of a's nominal 16. A (a, 16) reclaims by quota,
    # and the minimal target is b3, the most recently admitted: evicting it frees node 3 alone, no whole block, so
    # Kueue's TAS check with the target gone fails and nothing is evicted (else b3 would be evicted and readmitted
    # again and again). A starts when b1 ends and block 0 is free.
    plan = kueue_plan({"p": (4, {"nvidia.com/gpu": 8}, 8)}, {"a": cq({"p": 16}, reclaim="Any"), "b": cq({"p": 16})})
    for res in plan["resources"]:
        if res["type"].endswith(":ResourceFlavor"):
            res["inputs"]["spec"]["topologyName"] = "gpu-network"
    trace = [("a1", "a", 0, 100, 8), ("b1", "b", 0, 200, 8), ("b2", "b", 0, 1000, 8), ("b3", "b", 0, 1000, 8),
             ("A", "a", 10, 50, 16)]
    result, jobs = run(load_model(plan).with_tas({"p": 2}), trace)
    assert result.preemptions == [] and result.livelock is None
    assert jobs["A"].first_start == 200


@pytest.mark.parametrize("spans, free, expected", [
    # blocks of 2 nodes, two blocks per layer-2 domain: free nodes 0, 1 (domain 0) and 4, 5, 6 (domain 1). The
    # gang of 3 fits no block, so Kueue looks one level up and takes the layer-2 domain that holds it.
    ((None, 4, 2, 1), [8, 8, 0, 0, 8, 8, 8, 0], [4, 5, 6]),
    # with the layers above one domain over the pool, the largest block first and best fit for the rest
    ((None, None, 2, 1), [8, 8, 0, 0, 8, 8, 8, 0], [0, 1, 6]),
    # no layer-2 domain holds it either: spread over layer-1 domains (here one), then pooled blocks
    ((None, 4, 2, 1), [8, 8, 0, 0, 8, 0, 8, 0], [0, 1, 4]),
])
def test_preferred_gang_falls_back_one_level_at_a_time(spans, free, expected):
    assert assign(free, 8, 3, request("preferred", spans, level=2)) == expected


def test_required_at_a_level_above_the_block():
    four = (None, 4, 2, 1)
    free = [8, 8, 0, 0, 8, 8, 8, 0]
    assert assign(free, 8, 3, request("required", four, level=2)) is None  # no block holds 3
    assert assign(free, 8, 3, request("required", four, level=1)) == [4, 5, 6]
    assert assign(free, 8, 4, request("required", four, level=1)) is None


# Eight 8-GPU nodes in blocks of two; x0..x6 take nodes 0..6 at 0..6 (best fit keeps each next to the last); x0, x1,
# x4 and x5 end at 10, leaving nodes 0, 1 (block 0), 4, 5 (block 2) and 7 (block 3) free. g (24 GPUs: 3 pods) then
# fits no block.
SPLIT = [(f"x{i}", "q", 0, 10 if i in (0, 1, 4, 5) else 1000, 8) for i in range(7)] + [("g", "q", 20, 50, 24)]


def test_preferred_gang_takes_one_domain_of_the_level_above_when_it_holds_it():
    # With two blocks per layer-2 domain, Kueue places g in the layer-2 domain {4..7}, which holds it; with the
    # levels above the block not modelled, it took block 0 and node 7, across two layer-2 domains.
    model = tas_model("preferred", nodes=8, above={"p": (2,)}, levels=EKS_LEVELS)
    _, jobs = run(model, SPLIT, horizon=30)
    assert sorted(n for n, _ in jobs["g"].bound) == [4, 5, 7]
    _, jobs = run(tas_model("preferred", nodes=8, levels=EKS_LEVELS), SPLIT, horizon=30)
    assert sorted(n for n, _ in jobs["g"].bound) == [0, 1, 7]


def test_required_at_layer_2_admits_a_gang_no_block_holds():
    # Required at the block (layer-3) g can never be admitted: a block holds 2 pods. Required at layer-2 (one domain
    # over the pool here) it is admitted at once, in the domain's pooled blocks.
    model = tas_model("required", nodes=8, levels=EKS_LEVELS)
    _, jobs = run(model, SPLIT, horizon=100)
    assert jobs["g"].admit_t is None
    model = tas_model("required", nodes=8, levels=EKS_LEVELS, level=EKS_LEVELS[1])
    _, jobs = run(model, SPLIT, horizon=100)
    assert jobs["g"].first_start == 20


def test_tas_options_are_checked_against_the_planned_topology():
    with pytest.raises(SimulationError) as err:
        tas_model(levels=EKS_LEVELS, above={"p": (2, 2, 2)}, level="rack")
    assert "--topology-levels p=2/2/2: allowed: up to 2" in str(err.value)
    assert "--tas-level 'rack': allowed: topology.k8s.aws/network-node-layer-1" in str(err.value)
