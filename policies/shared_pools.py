"""Production pools that share GPUs without isolation and that several teams can use (GPU002, GPU012)."""
from __future__ import annotations

from pulumi_policy import StackValidationArgs

from policies import context
from policies.graph import Graph, Pool
from policies.rule import Report, check_each
from policies.sharing import sharing_modes
from policies.tenancy import pool_teams


def report_shared_pools(args: StackValidationArgs, graph: Graph, report: Report, mode: str, advice: str) -> None:
    """Report each production pool shared with `mode` that more than one team can use."""
    if not context.production(graph.resources):
        args.not_applicable("not a production stack")
    using: list[Pool] = []

    def check_pool(pool: Pool) -> None:
        if mode not in sharing_modes(graph, pool):
            return
        using.append(pool)
        teams = pool_teams(graph, pool)
        if len(teams) > 1:
            report(f"pool {pool.name!r} uses {mode} and {len(teams)} teams can use it ({', '.join(teams)}): "
                   f"{advice}", pool.resource.urn)

    check_each(graph.pools(), check_pool)
    if not using:
        args.not_applicable(f"no pool uses {mode}")
