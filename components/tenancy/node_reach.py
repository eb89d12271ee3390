"""CEL for pool_admission.py: can a pod land on GPU nodes at all, and on which GPU pools.

A pod lands on a GPU node when it tolerates the GPU taint every GPU pool carries (nvidia.com/gpu=present:
NoSchedule, GPU001), or names its node (`spec.nodeName` skips the scheduler, and the kubelet ignores NoSchedule
taints). Tolerations match as the scheduler matches them: no key with operator Exists tolerates every taint, no
effect tolerates every effect, Equal (the default) needs the taint's value.

Which pools it may then land on is what its nodeSelector and required node affinity can select: the nodeSelector
is ANDed with the affinity, whose terms are ORed and whose expressions within a term are ANDed. Only the pool label
narrows the reach: In and NotIn are read, DoesNotExist excludes every pool (each GPU node carries the label), and
Exists, Gt, Lt or anything else excludes none. An expression on another label, a matchFields term, or an empty
term (which selects nothing) is read as selecting every pool: shapes the CEL cannot judge only ever refuse more.
An ungated pod's nodeSelector and affinity are immutable, its tolerations are not: a change to them is checked again.
"""
from __future__ import annotations

import json
from typing import Any

from components.config.labels import POOL_LABEL
from components.config.model import GPU_TAINT


def _tolerates_gpu_taint() -> str:
    key, value, effect = (json.dumps(v) for v in (GPU_TAINT.key, GPU_TAINT.value, GPU_TAINT.effect))
    return ("variables.tolerations.exists(t, "
            f"(!has(t.effect) || t.effect == \"\" || t.effect == {effect}) && "
            f"(!has(t.key) || t.key == \"\" || (t.key == {key} && "
            f"((has(t.operator) && t.operator == \"Exists\") || (has(t.value) && t.value == {value})))))")


def _expression_allows(pool: str) -> str:
    """One matchExpression `e` leaves `pool` selectable."""
    return (f"e.key != {json.dumps(POOL_LABEL)} || "
            f"(e.operator == \"In\" ? (has(e.values) && {pool} in e.values) : "
            f"e.operator == \"NotIn\" ? !(has(e.values) && {pool} in e.values) : e.operator != \"DoesNotExist\")")


def reach_variables(gpu_pools: list[str]) -> list[dict[str, Any]]:
    """Variables `reachesGpuNodes` and `reachesOtherPool`; they read `variables.pool` (the pod's pool nodeSelector,
    "" without one) and `variables.pools` (the team's pools), which pool_admission.py defines before them."""
    affinity = "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    return [
        {"name": "gpuPools", "expression": json.dumps(sorted(gpu_pools))},
        {"name": "tolerations", "expression": "has(object.spec.tolerations) ? object.spec.tolerations : []"},
        # Tolerations are the one scheduling field a pending pod may still gain: an added one is checked again.
        {"name": "tolerationsChanged", "expression": 'request.operation == "UPDATE" && '
                                                     "(has(oldObject.spec.tolerations) ? oldObject.spec.tolerations "
                                                     ": []) != variables.tolerations"},
        {"name": "reachesGpuNodes", "expression": f"{_tolerates_gpu_taint()} || "
                                                  "(has(object.spec.nodeName) && object.spec.nodeName != \"\")"},
        {"name": "terms", "expression": "has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && "
                                        f"has({affinity}) ? {affinity}.nodeSelectorTerms : []"},
        # Some GPU pool outside the team's that both the nodeSelector and some affinity term leave selectable.
        {"name": "reachesOtherPool", "expression": (
            "variables.gpuPools.exists(p, !(p in variables.pools) && "
            "(variables.pool == \"\" || variables.pool == p) && "
            "(size(variables.terms) == 0 || variables.terms.exists(term, !has(term.matchExpressions) || "
            f"term.matchExpressions.all(e, {_expression_allows('p')}))))")},
    ]
