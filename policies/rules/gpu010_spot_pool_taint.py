"""GPU010: spot (interruptible) GPU pools carry a spot taint."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, Severity

from policies.props import get, items, parent_types
from policies.rule import Report, resource_rule
from policies.shapes import POOL_COMPONENT, SHAPES
from policies.taints import SPOT_TAINT_KEYS, Taint, taint_from_map

BLOCKING = ("NoSchedule", "NoExecute")
WANTED = Taint(SPOT_TAINT_KEYS[0], "true", "NoSchedule")


def _tainted(taints: list[Taint]) -> bool:
    return any(t.key in SPOT_TAINT_KEYS and t.effect in BLOCKING for t in taints)


def check(args: ResourceValidationArgs, report: Report) -> None:
    if args.resource_type == POOL_COMPONENT:
        if get(args.props, "capacityType") != "spot":
            args.not_applicable("not a spot pool")
        if not _tainted([taint_from_map(t) for t in items(get(args.props, "taints"))]):
            report(f"spot GPU pool {get(args.props, 'poolName', args.name)!r} has no spot taint: pods that cannot "
                   f"survive interruption land there. Add {WANTED}.")
        return
    shape = SHAPES[args.resource_type]
    if not shape.spot(args.props) or (POOL_COMPONENT not in parent_types(args.urn) and not shape.gpu(args.props)):
        args.not_applicable("not a spot GPU pool")
    if not _tainted([*shape.taints(args.props), *shape.implicit_taints(args.props)]):
        report(f"{shape.service} spot GPU pool ({shape.instance(args.props)}) has no spot taint: pods that cannot "
               f"survive interruption land there. Add {shape.spelling(WANTED)} to {shape.taint_field}.")


RULE = resource_rule(
    id="GPU010", slug="spot-pool-taint",
    title="Spot GPU pools carry a spot taint",
    rationale=("Spot and preemptible GPU nodes disappear with a short notice. Without a taint of their own, a "
               "serving replica or a long training job without checkpoints lands there like anywhere else. "
               "Accepted: `gpu-platform.io/spot` (ours), `kubernetes.azure.com/scalesetpriority` (AKS adds it to "
               "spot pools itself) and `cloud.google.com/gke-spot`, with NoSchedule or NoExecute."),
    severity=Severity.MEDIUM, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Pools with `capacityType: spot` get `gpu-platform.io/spot=true:NoSchedule` from the platform; restore "
        "it if removed.",
        "Workloads that tolerate interruption add the matching toleration.",
    ),
    config_key="gpuPools",
    types=(POOL_COMPONENT, *SHAPES),
    check=check,
)
