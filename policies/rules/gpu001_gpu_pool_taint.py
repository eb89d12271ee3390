"""GPU001: every GPU node pool carries a NoSchedule GPU taint, on the component and on each cloud's resource."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, Severity

from policies.props import get, items, mapping, parent_types
from policies.rule import Report, resource_rule
from policies.shapes import POOL_COMPONENT, SHAPES, NodePoolShape
from policies.taints import GPU_TAINT_KEY, Taint, taint_from_map

BLOCKING = ("NoSchedule", "NoExecute")
WANTED = Taint(GPU_TAINT_KEY, "present", "NoSchedule")
# Clusters that can declare GPU pools inline, and where: AKS agentPoolProfiles share the AgentPool shape.
INLINE = {"azure-native:containerservice:ManagedCluster": ("agentPoolProfiles", "azure-native:containerservice:AgentPool")}


def _missing(taints: list[Taint]) -> str | None:
    """Why these taints do not keep non-GPU pods off, or None when they do."""
    gpu = [t for t in taints if t.key == GPU_TAINT_KEY]
    if any(t.effect in BLOCKING for t in gpu):
        return None
    if gpu:
        return f"its {GPU_TAINT_KEY} taint has effect {gpu[0].effect}, which only discourages other pods"
    return f"it has no {GPU_TAINT_KEY} taint" + (f" (taints: {', '.join(map(str, taints))})" if taints else "")


def _check_cloud(args: ResourceValidationArgs, report: Report, shape: NodePoolShape, props, where: str = "") -> None:
    under_component = POOL_COMPONENT in parent_types(args.urn)
    if not under_component and not shape.gpu(props):
        return
    problem = _missing(shape.taints(props))
    if problem:
        report(f"{shape.service} GPU pool {where}({shape.instance(props)}): {problem}; nothing keeps CPU pods "
               f"off these GPUs. Add {shape.spelling(WANTED)} to {shape.taint_field}.")


def check(args: ResourceValidationArgs, report: Report) -> None:
    if args.resource_type == POOL_COMPONENT:
        problem = _missing([taint_from_map(t) for t in items(get(args.props, "taints"))])
        if problem:
            report(f"GPU pool {get(args.props, 'poolName', args.name)!r}: {problem}.")
        return
    if args.resource_type in INLINE:
        field, shape_type = INLINE[args.resource_type]
        for profile in items(get(args.props, field)):
            _check_cloud(args, report, SHAPES[shape_type], mapping(profile), f"profile {get(profile, 'name', '?')!r} ")
        return
    shape = SHAPES[args.resource_type]
    if POOL_COMPONENT not in parent_types(args.urn) and not shape.gpu(args.props):
        args.not_applicable(f"{shape.service} pool without GPUs ({shape.instance(args.props)})")
    _check_cloud(args, report, shape, args.props)


RULE = resource_rule(
    id="GPU001", slug="gpu-pool-noschedule-taint",
    title="Every GPU node pool carries a NoSchedule GPU taint",
    rationale=("Without a NoSchedule taint, the scheduler packs ordinary pods onto GPU nodes: GPUs sit behind "
               "log shippers and web servers, the autoscaler keeps idle GPU nodes alive, and GPU jobs wait. The "
               "check reads the GpuNodePool component and each cloud's own spelling: EKS `taints` "
               "(`NO_SCHEDULE`), AKS `nodeTaints` (`key=value:NoSchedule`), GKE `nodeConfig.taints` "
               "(`NO_SCHEDULE`) and OKE's kubelet `--register-with-taints` inside the base64 cloud-init "
               "(`nodeMetadata.user_data`), since OKE node pools have no taint field. NoExecute also passes."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Pools made from `gpu-platform:gpuPools` always get `nvidia.com/gpu=present:NoSchedule`; if this "
        "finding names one, the taint was removed in code: restore `pool_taints` in components/clouds/labels.py.",
        "For a node pool created outside the GpuNodePool component, add the taint in that cloud's field "
        "(see the rule description), or move the pool into `gpu-platform:gpuPools`.",
        "Workloads that need the GPUs tolerate `nvidia.com/gpu` (pods requesting nvidia.com/gpu get the "
        "toleration automatically where the ExtendedResourceToleration admission plugin runs).",
    ),
    config_key="gpuPools",
    types=(POOL_COMPONENT, *SHAPES, *INLINE),
    check=check,
)
