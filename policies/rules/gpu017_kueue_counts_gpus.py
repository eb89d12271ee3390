"""GPU017: Kueue counts GPU resources against its queues' quotas (no excluded prefix or transformation drops them)."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import charts, k8s, quantity
from policies.charts import Release
from policies.graph import Graph
from policies.props import get, items, mapping
from policies.rule import Report, check_each, stack_rule

GPU_PREFIX = "nvidia.com/"  # whole GPUs, shared replicas and every MIG profile
GPU = "nvidia.com/gpu"


def hidden_gpus(config) -> list[str]:
    """What in this Kueue Configuration keeps GPU requests out of quota: excluded prefixes that match a GPU
    resource, and transformations replacing one with nothing GPU-shaped."""
    if not isinstance(config, dict):
        return []  # the chart's own configuration excludes nothing
    found = []
    for prefix in (str(p) for p in items(get(config, "resources.excludeResourcePrefixes"))):
        if GPU.startswith(prefix) or prefix.startswith(GPU_PREFIX):
            found.append(f"resources.excludeResourcePrefixes has {prefix!r}, which matches GPU resources")
    for rule in items(get(config, "resources.transformations")):
        source = str(get(rule, "input", ""))
        outputs = mapping(get(rule, "outputs"))
        # Kueue: "an empty Outputs combined with a Replace Strategy causes the Input resource to be ignored".
        if source.startswith(GPU_PREFIX) and get(rule, "strategy") == "Replace" and \
                not any(str(o).startswith(GPU_PREFIX) and _counts(amount) for o, amount in outputs.items()):
            listed = ", ".join(f"{o}: {amount}" for o, amount in outputs.items())
            found.append(f"resources.transformations replaces {source} with {listed or 'nothing'} (no GPU resource "
                         "counted above zero)")
    return found


def _counts(amount) -> bool:
    """An output that charges something per GPU; one that cannot be read is not trusted to."""
    try:
        return quantity.parse(amount) > 0
    except quantity.QuantityError:
        return False


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    releases = charts.releases(graph, charts.KUEUE)
    if not releases:
        args.not_applicable("no Kueue release")

    def check_release(release: Release) -> None:
        for problem in hidden_gpus(k8s.yaml_text(get(release.values, charts.KUEUE_MANAGER_CONFIG))):
            report(f"Kueue release {release.resource.name!r}: {problem}, so GPU jobs are admitted outside every "
                   "ClusterQueue's GPU quota, per-pool caps and fair sharing", release.resource.urn)

    check_each(releases, check_release)


RULE = stack_rule(
    id="GPU017", slug="kueue-counts-gpus",
    title="Kueue counts GPU resources against its queues' quotas",
    rationale=("Each team's per-pool GPU share, its borrowing and preemption live in Kueue's ClusterQueues. Kueue "
               "ignores every resource an entry of `resources.excludeResourcePrefixes` is a prefix of (an empty "
               "entry, `nvidia.com` or `nvidia.com/gpu` match GPUs), and a `resources.transformations` entry with "
               "strategy `Replace` turns its input into its outputs (none, or GPU outputs counted as zero in any quantity "
               "spelling such as `0m` or `0Ki`: ignored). Either makes GPU jobs free: "
               "admitted at once, whatever the quota. The fabric NICs (`vpc.amazonaws.com/efa`, `rdma/...`) and "
               "cpu/memory may be excluded; GPUs may not."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Let the platform write Kueue's configuration (`gpu-platform:scheduler.kind: kueue`): it excludes cpu, "
        "memory, storage, hugepages and fabric NICs only.",
        "In your own configuration, exclude no prefix of `nvidia.com/` and keep GPU transformations at `Retain`, "
        "or `Replace` with a `nvidia.com/` output above zero.",
    ),
    config_key="scheduler",
    check=check,
)
