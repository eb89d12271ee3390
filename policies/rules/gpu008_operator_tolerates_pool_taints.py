"""GPU008: the GPU Operator's DaemonSets (and NFD's worker) tolerate every taint on every GPU pool."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import charts
from policies.charts import UnknownDefault
from policies.graph import Graph
from policies.props import items
from policies.rule import Pending, Report, stack_rule
from policies.taints import tolerated

BLOCKING = ("NoSchedule", "NoExecute")
OPERANDS = "daemonsets.tolerations"
NFD_WORKER = "node-feature-discovery.worker.tolerations"


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    releases = charts.releases(graph, charts.GPU_OPERATOR)
    if not releases:
        args.not_applicable("no GPU Operator release")
    pools = graph.pools()
    if not pools:
        graph.outside_plan(args, "no GPU pools", "GPU pools and their taints")
    pending = Pending()
    for release in releases:
        try:
            keys = [OPERANDS] + ([NFD_WORKER] if release.value("nfd.enabled") is True else [])
            tolerations = {key: [t for t in items(release.value(key))] for key in keys}
        except UnknownDefault as exc:
            report(str(exc), release.resource.urn)
            continue
        for pool in pools:
            with pending.each():
                for key, granted in tolerations.items():
                    missing = [t for t in pool.taints() if t.effect in BLOCKING and not tolerated(granted, t)]
                    if missing:
                        who = "operand DaemonSets" if key == OPERANDS else "node-feature-discovery worker"
                        report(f"pool {pool.name!r}: the GPU Operator's {who} ({release.resource.name} values.{key}) "
                               f"do not tolerate {', '.join(map(str, missing))}, so they never run on its nodes "
                               "and no GPU is advertised there", pool.resource.urn)
    pending.finish()


RULE = stack_rule(
    id="GPU008", slug="operator-tolerates-pool-taints",
    title="The GPU Operator tolerates every taint on every GPU pool",
    rationale=("The operator's driver, toolkit, device plugin and DCGM DaemonSets only land on nodes whose taints "
               "they tolerate, and node-feature-discovery's worker must label a node before any of them select "
               "it. The chart tolerates only `nvidia.com/gpu` by default, so an AKS `sku=gpu` taint, a spot "
               "taint or a custom one leaves the GPUs of that pool unadvertised (nebari-dev/nebari#3074). "
               "Taints are the pool's declared ones, those on its cloud resource (a Karpenter NodePool's "
               "`spec.template.spec.taints` included) and those the cloud adds itself (AKS spot nodes). Tolerations are the release's values over the chart defaults."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "The GPU layer derives `daemonsets.tolerations` and `node-feature-discovery.worker.tolerations` from "
        "every pool's taints: keep new taints in `gpuPools[].taints` so they are included.",
        "For your own values, add `{key: <taint key>, operator: Exists, effect: NoSchedule}` for each taint to "
        "both lists.",
    ),
    config_key="gpuPools",
    check=check,
)
