"""GPU002: no time-slicing on a production pool more than one team can use."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies.graph import Graph
from policies.rule import Report, stack_rule
from policies.shared_pools import report_shared_pools

MODE = "time-slicing"


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    report_shared_pools(args, graph, report, MODE,
                        "time-slicing has no memory or fault isolation, so one team's OOM or hang hits the others; "
                        "use MIG for multi-tenant production inference, or give the pool to one team")


RULE = stack_rule(
    id="GPU002", slug="no-multi-tenant-time-slicing",
    title="No time-slicing on a production pool that more than one team can use",
    rationale=("Time-sliced GPUs share memory and faults between every pod on them: one tenant's OOM or "
               "Xid error takes down the others, and DCGM cannot attribute usage to pods. In production a pool "
               "several teams can reach (Kueue ClusterQueues listing its ResourceFlavor with quota or borrowing, "
               "or, without Kueue, team namespaces whose quota admits its GPUs) must use MIG or whole GPUs. "
               "Sharing is read from the pool's declaration, GKE's gpuSharingConfig and the GPU Operator device "
               "plugin entry its nodes select. MPS on such a pool is GPU012 (advisory)."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Give the pool to one team: keep its quota (`teams[].quotas.<pool>`) on a single team, and no "
        "borrowing of it by others.",
        "Or switch the pool to MIG (`sharing: {mode: mig, migProfile: ...}`) on a MIG-capable GPU, or to "
        "whole GPUs (`sharing: {mode: none}`).",
    ),
    config_key="gpuPools",
    check=check,
)
