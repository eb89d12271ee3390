"""Per-pool GPU caps: a team's GPU pods may only ever run on pools the team has a share of.

The namespace ResourceQuota counts in resource names, and pools advertise overlapping ones (H100s, time-sliced
replicas and single-strategy MIG slices are all `nvidia.com/gpu`), so it caps a team's sum, not its share of one
pool. Kueue's ClusterQueue caps each pool separately (one ResourceFlavor per pool, nominal quota plus borrowing
per flavor) and writes the flavor's `gpu-platform.io/pool` nodeSelector into every pod it admits; the hole is a
pod that reaches the scheduler without Kueue. This ValidatingAdmissionPolicy closes it: in a team namespace, a pod
requesting any `nvidia.com/*` resource must either still be held by a scheduling gate (Kueue's pod integration
gates pods until it admits them, and nothing schedules a gated pod) or carry a `gpu-platform.io/pool` nodeSelector
naming one of the team's pools (`teams[].quotas`). It is checked when a pod becomes schedulable (created ungated,
or its last gate removed); the kubelet re-checks the nodeSelector, so `spec.nodeName` does not escape it either.
The same holds for a pod requesting a fabric's NICs (`vpc.amazonaws.com/efa`, `rdma/ib`, ...) without GPUs: Kueue
does not count them, and a NIC-only pod on another team's node would leave that node's GPUs without their fabric.
And for every pod of a team whose namespace enforces Pod Security `privileged` (`teams[].podSecurity`, GKE
GPUDirect): such a pod can own the node it runs on, so it may run only on the team's own pools, never on the system
pool whose nodes hold the platform's credentials.
And for every pod that can land on GPU nodes without asking for GPUs: one tolerating the GPU taint (a toleration
with no key and operator Exists does) or naming its node may select no other team's GPU pool, by nodeSelector or
node affinity (node_reach.py reads what they can select). Without it, a CPU pod tolerating everything lands on
another team's GPU nodes, takes their CPU and memory, and, where the toolkit honours NVIDIA_VISIBLE_DEVICES, their
GPUs. Team pods may set no NVIDIA_* device variables either (device_env.py).

Why not per-pool resource names (device-plugin renaming): the device plugin renames only shared (time-sliced or
MPS) resources, and renamed resources break every job spec and chart that asks for `nvidia.com/gpu`.
"""
from __future__ import annotations

import json
from typing import Any

import pulumi

from components.config.fabric import fabric_resources
from components.config.labels import POOL_LABEL
from components.config.model import FABRIC_SIDECAR, GPU_TAINT, PlatformConfig
from components.config.operands import volume_mount_devices
from components.tenancy.deny_policy import deny_policy
from components.tenancy.device_env import env_validation, env_variables
from components.tenancy.node_reach import reach_variables

POLICY = "gpu-platform-gpu-pools"
GPU_PREFIX = "nvidia.com/"  # whole GPUs, shared replicas and every MIG profile


def gpu_variables() -> list[dict[str, str]]:
    """Variables `containers` (every container of the pod, ephemeral ones included) and `gpu` (whether any asks for
    an `nvidia.com/*` resource), for the policies that hold GPU pods."""
    def asks_gpu(field: str) -> str:
        return f"(has(c.resources.{field}) && c.resources.{field}.exists(r, r.startsWith({json.dumps(GPU_PREFIX)})))"

    return [
        {"name": "containers", "expression": "object.spec.containers + (has(object.spec.initContainers) ? "
                                             "object.spec.initContainers : []) + "
                                             "(has(object.spec.ephemeralContainers) ? "
                                             "object.spec.ephemeralContainers : [])"},
        {"name": "gpu", "expression": f"variables.containers.exists(c, has(c.resources) && "
                                      f"({asks_gpu('limits')} || {asks_gpu('requests')}))"},
    ]


def team_pools(config: PlatformConfig) -> dict[str, list[str]]:
    """The pools each team may place GPU pods on: those in its quotas (a 0 entry is its borrowing reach)."""
    return {team.name: sorted(team.quotas) for team in config.teams}


def pool_rules(config: PlatformConfig, team_label: str) -> dict[str, Any]:
    """The policy spec: match pods in team namespaces, then the CEL deciding whether a GPU pod may be admitted."""
    table = json.dumps(team_pools(config), sort_keys=True)
    pool = json.dumps(POOL_LABEL)

    nics = json.dumps(fabric_resources(config))
    host_access = json.dumps(sorted(t.name for t in config.teams if t.pod_security in ("privileged", FABRIC_SIDECAR)))

    def asks_nics(field: str) -> str:
        return f"(has(c.resources.{field}) && c.resources.{field}.exists(r, r in {nics}))"

    variables = [
        {"name": "teamPools", "expression": table},
        {"name": "team", "expression": f"namespaceObject.metadata.labels[{json.dumps(team_label)}]"},
        # A team label the table does not know (a namespace labelled by hand) may use no pool at all.
        {"name": "pools", "expression": "variables.team in variables.teamPools ? variables.teamPools[variables.team] "
                                        ": []"},
        *gpu_variables(),
        {"name": "nics", "expression": f"variables.containers.exists(c, has(c.resources) && "
                                       f"({asks_nics('limits')} || {asks_nics('requests')}))"},
        # A privileged team's every pod: it may mount the host and run privileged (teams[].podSecurity); a
        # fabric-sidecar team's too, whose sidecars mount host /sys and /proc/sys.
        {"name": "hostAccess", "expression": f"variables.team in {host_access}"},
        {"name": "gated", "expression": "has(object.spec.schedulingGates) && size(object.spec.schedulingGates) > 0"},
        # A pod becomes schedulable at creation or when its last gate is removed; an ungated pod's nodeSelector is
        # immutable, so later updates (labels, annotations) of running pods have nothing new to check.
        {"name": "becomesSchedulable", "expression": 'request.operation == "CREATE" || '
                                                     "(has(oldObject.spec.schedulingGates) && "
                                                     "size(oldObject.spec.schedulingGates) > 0)"},
        {"name": "pool", "expression": f"has(object.spec.nodeSelector) && {pool} in object.spec.nodeSelector ? "
                                       f"object.spec.nodeSelector[{pool}] : \"\""},
        *reach_variables([p.name for p in config.gpu_pools]),
        *env_variables(),
    ]
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": team_label, "operator": "Exists"}]},
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                               # `kubectl debug` adds containers (and their env) through this subresource.
                               "resources": ["pods", "pods/ephemeralcontainers"], "scope": "Namespaced"}],
        },
        "variables": variables,
        "validations": [{
            "expression": "!(variables.gpu || variables.nics || variables.hostAccess) || variables.gated || "
                          "!variables.becomesSchedulable || variables.pool in variables.pools",
            "message": f"a GPU or fabric NIC pod in a team namespace, and every pod of a privileged team, must be "
                       f"admitted by the team's queue or carry nodeSelector {POOL_LABEL} naming one of the team's "
                       f"pools (teams[].quotas)",
            "reason": "Forbidden",
        }, {
            "expression": "!variables.reachesGpuNodes || variables.gated || "
                          "!(variables.becomesSchedulable || variables.tolerationsChanged) || "
                          "!variables.reachesOtherPool",
            "message": f"a team pod tolerating the GPU taint ({GPU_TAINT}, or every taint) or naming its node may "
                       f"select only the team's own GPU pools: nodeSelector {POOL_LABEL} naming one of them, or "
                       f"node affinity on {POOL_LABEL} excluding every other GPU pool",
            "reason": "Forbidden",
        }, env_validation(env_from_honoured=not volume_mount_devices(config))],
    }


class GpuPoolAdmission(pulumi.ComponentResource):
    """The admission policy keeping each team's GPU pods on its own pools, and its binding."""

    TYPE = "gpu-platform:tenancy:GpuPoolAdmission"

    def __init__(self, name: str, config: PlatformConfig, team_label: str,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"policy": POLICY, "teamPools": team_pools(config)}, opts)
        deny_policy(name, POLICY, pool_rules(config, team_label), self)
        self.register_outputs({"policy": POLICY})
