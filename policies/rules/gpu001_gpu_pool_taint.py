"""GPU001: every GPU node pool carries a NoSchedule GPU taint, on the component and on each cloud's resource."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies.graph import Graph
from policies.props import get, items, mapping, parent_types
from policies.rule import Pending, Report, stack_rule
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


def _cloud_problem(shape: NodePoolShape, props, where: str = "") -> str | None:
    problem = _missing(shape.taints(props))
    if problem:
        return (f"{shape.service} GPU pool {where}({shape.instance(props)}): {problem}; nothing keeps CPU pods off "
                f"these GPUs. Add {shape.spelling(WANTED)} to {shape.taint_field}.")
    return None


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    pending = Pending()
    checked = 0
    for component in graph.of_type(POOL_COMPONENT):
        with pending.each():
            checked += 1
            problem = _missing([taint_from_map(t) for t in items(get(component.props, "taints"))])
            if problem:
                report(f"GPU pool {get(component.props, 'poolName', component.name)!r}: {problem}.", component.urn)
    for node_pool in graph.of_type(*SHAPES):
        with pending.each():
            shape = SHAPES[node_pool.resource_type]
            # Unknown taints or an unreadable template raise here: a "cannot decide" note, never a silent pass.
            props = graph.node_pool_props(node_pool)
            if POOL_COMPONENT not in parent_types(node_pool.urn) and not shape.gpu(props):
                continue
            checked += 1
            if problem := _cloud_problem(shape, props):
                report(problem, node_pool.urn)
    for cluster in graph.of_type(*INLINE):
        field, shape_type = INLINE[cluster.resource_type]
        for profile in items(get(cluster.props, field)):
            with pending.each():
                shape = SHAPES[shape_type]
                if not shape.gpu(mapping(profile)):
                    continue
                checked += 1
                if problem := _cloud_problem(shape, mapping(profile), f"profile {get(profile, 'name', '?')!r} "):
                    report(problem, cluster.urn)
    pending.finish()
    if not checked:
        graph.outside_plan(args, "no GPU node pools", "GPU node pools and their taints")


RULE = stack_rule(
    id="GPU001", slug="gpu-pool-noschedule-taint",
    title="Every GPU node pool carries a NoSchedule GPU taint",
    rationale=("Without a NoSchedule taint, the scheduler packs ordinary pods onto GPU nodes: GPUs sit behind "
               "log shippers and web servers, the autoscaler keeps idle GPU nodes alive, and GPU jobs wait. The "
               "check reads the GpuNodePool component and each cloud's own spelling: EKS `taints` "
               "(`NO_SCHEDULE`), AKS `nodeTaints` (`key=value:NoSchedule`), GKE `nodeConfig.taints` "
               "(`NO_SCHEDULE`) and OKE's kubelet `--register-with-taints` inside the base64 cloud-init "
               "(`nodeMetadata.user_data`), since OKE node pools have no taint field: only the flag passed to OKE's "
               "init script counts when every run of the script the shell may make passes it and one run surely "
               "happens (straight-line, or in every branch of an if/else), not a comment, echoed text, a "
               "here-document, a line after `exit` or a branch that may not run; the same flag in an OCI instance "
               "configuration's `instanceDetails.launchDetails.metadata.user_data` (self-managed RDMA nodes, joined by "
               "`oke-install.sh` or `oke bootstrap`). A Karpenter NodePool (EKS with "
               "`cluster.aws.provisioner: karpenter`, AKS with `cluster.azure.provisioner: nap`) is read by its "
               "`spec.template.spec.taints`, and is a GPU pool when its requirements select GPU instance types "
               "(EC2 `p*`/`g*`, Azure `Standard_N*`), families, categories or a GPU count. "
               "A node pool "
               "outside the component is a GPU pool when its instance type is, including an EKS node group whose "
               "launch template sets it; a pool whose taints or template cannot be read is reported as "
               "undecided (a failure with `--fail-on unknown`). NoExecute also passes."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Pools made from `gpu-platform:gpuPools` always get `nvidia.com/gpu=present:NoSchedule`; if this "
        "finding names one, the taint was removed in code: restore `pool_taints` in components/config/labels.py.",
        "For a node pool created outside the GpuNodePool component, add the taint in that cloud's field "
        "(see the rule description), or move the pool into `gpu-platform:gpuPools`.",
        "Workloads that need the GPUs tolerate `nvidia.com/gpu` (pods requesting nvidia.com/gpu get the "
        "toleration automatically where the ExtendedResourceToleration admission plugin runs).",
    ),
    config_key="gpuPools",
    check=check,
)
