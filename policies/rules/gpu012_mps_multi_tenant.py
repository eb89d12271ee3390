"""GPU012: MPS on a production pool more than one team can use (advisory)."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies.graph import Graph
from policies.rule import Report, stack_rule
from policies.shared_pools import report_shared_pools


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    report_shared_pools(args, graph, report, "mps",
                        "MPS isolates memory but not faults, and DCGM cannot attribute its metrics to pods; prefer MIG "
                        "for multi-tenant production inference")


RULE = stack_rule(
    id="GPU012", slug="mps-multi-tenant",
    title="MPS on a production pool that more than one team can use is flagged",
    rationale=("MPS limits each client's memory and compute share, but a fault in one client still resets the "
               "GPU for all, and DCGM cannot attribute metrics to pods under MPS (dcgm-exporter#151). It is "
               "acceptable for a trusted tenant mix, so this is advisory; MIG is the isolating choice. Teams "
               "and sharing are found as in GPU002."),
    severity=Severity.MEDIUM, enforcement=EnforcementLevel.ADVISORY,
    remediation=(
        "Prefer MIG (`sharing: {mode: mig}`) for pools several teams share in production.",
        "Or restrict the pool to one team, or record the accepted risk as an exemption with an expiry.",
    ),
    config_key="gpuPools",
    check=check,
)
