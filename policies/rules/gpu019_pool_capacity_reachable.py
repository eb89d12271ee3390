"""GPU019: the teams' queues can reach every GPU a pool offers at maxNodes, and its nominal quotas fit in it."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies.graph import Graph
from policies.pool_reach import pool_reach, scheduler
from policies.props import Undecidable
from policies.rule import Pending, Report, stack_rule

QUEUES = {"kueue": "the Kueue ClusterQueues", "volcano": "the Volcano Queues", "kai": "the KAI Queues"}


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    pools = graph.pools()
    if not pools:
        graph.outside_plan(args, "no GPU pools", "GPU pools and their sizes")
    resources = [(r.resource_type, r.props) for r in graph.resources]
    kind = scheduler(resources)
    if kind is None:
        args.not_applicable("no Kueue ClusterQueue, Volcano Queue or KAI Queue")
    pending = Pending()
    reach = {}
    with pending.each():
        reach = pool_reach(resources)
    for pool in pools:
        with pending.each():
            if pool.component is None:
                raise Undecidable(f"{pool.name}: a GPU node pool outside the GpuNodePool component, whose maxNodes "
                                  "and advertised GPU resources the plan does not state")
            found = reach.get(pool.name)
            if found is None:
                continue  # its figures could not be read: already noted above
            if found.unreachable:
                report(f"pool {pool.name!r} offers {found.capacity} {found.unit} at maxNodes but {QUEUES[kind]} can "
                       f"use at most {found.reachable}: {found.unreachable} {found.unit} are unreachable, capacity "
                       "planned that no team can ever use", pool.resource.urn)
            if found.oversubscribed:
                report(f"pool {pool.name!r} offers {found.capacity} {found.unit} at maxNodes but the ClusterQueues' "
                       f"nominal quotas on it add up to {found.nominal}: {found.oversubscribed} {found.unit} of "
                       "nominal quota can never be honoured", pool.resource.urn)
    pending.finish()


RULE = stack_rule(
    id="GPU019", slug="pool-capacity-reachable",
    title="Teams' queues can use every GPU a pool offers at maxNodes, and its nominal quotas fit in it",
    rationale=("A pool scales up to maxNodes for whatever the scheduler admits, but the scheduler admits only "
               "within the teams' queues. Kueue admits at most the nominal quotas of the ResourceFlavors selecting a "
               "pool (borrowing moves unused quota between ClusterQueues, it adds none); a Volcano Queue grows into "
               "idle capacity up to its `capability`. Capacity above what the queues reach is never used; nominal "
               "quota above the pool's capacity is a guarantee that cannot be kept. Read from the plan's "
               "GpuNodePool components (maxNodes, advertised resources) and queue objects, in each pool's units "
               "(GPUs, MIG slices, shared replicas). Advisory."),
    severity=Severity.MEDIUM, enforcement=EnforcementLevel.ADVISORY,
    remediation=(
        "Make the teams' quotas on the pool (`teams[].quotas`) add up to what it offers at maxNodes: raise them, "
        "give the pool to another team, or lower `gpuPools[].maxNodes`.",
        "Under Volcano a team's `borrowingLimit` also reaches idle capacity; under Kueue only nominal quota does.",
    ),
    config_key="teams.quotas",
    check=check,
)
