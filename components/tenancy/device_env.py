"""CEL for pool_admission.py: no NVIDIA device variables in a team pod's containers.

The NVIDIA container toolkit, by default, gives an unprivileged container the GPUs its NVIDIA_VISIBLE_DEVICES
names ("all" included), whatever the device plugin allocated: a pod asking for one GPU, or none, would see every
GPU of its node. Where the GPU Operator owns toolkit and device plugin on every GPU node, the toolkit takes device
lists only from the plugin's volume mounts (config/operands.py volume_mount_devices), which no pod spec can forge;
where a node image owns the toolkit (EKS, AKS) or devices pass through a cloud's plugin or CDI (GKE), this check is
the guard. Image ENV (CUDA images set NVIDIA_VISIBLE_DEVICES=all) is out of admission's sight: only the toolkit
setting covers it.

Refused: every NVIDIA_* name except those choosing driver libraries or checking versions (NVIDIA_DRIVER_CAPABILITIES,
NVIDIA_REQUIRE_*, NVIDIA_DISABLE_REQUIRE). The others add devices (visible devices, MIG config and monitor, IMEX
channels, GDS, GDRCopy, MOFED, NVSWITCH), and a name the toolkit learns later is refused rather than trusted.
envFrom: admission cannot read a ConfigMap's or Secret's keys, so where the toolkit still honours the variable, an
envFrom entry of a pod that can reach GPU nodes must carry a prefix that keeps every name it makes out of NVIDIA_
(neither a start of `NVIDIA_` nor starting with it). Pods that cannot reach GPU nodes keep prefix-less envFrom.
"""
from __future__ import annotations

import json
from typing import Any

PREFIX = "NVIDIA_"
NON_DEVICE = ("NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_DISABLE_REQUIRE")
NON_DEVICE_PREFIX = "NVIDIA_REQUIRE_"


def _device_name(name: str) -> str:
    return (f"{name}.startsWith({json.dumps(PREFIX)}) && !({name} in {json.dumps(list(NON_DEVICE))}) && "
            f"!{name}.startsWith({json.dumps(NON_DEVICE_PREFIX)})")


def env_variables() -> list[dict[str, Any]]:
    """Variables `deviceEnv` and `openEnvFrom`, over `variables.containers` (pool_admission.py's, ephemeral
    containers included)."""
    prefix = json.dumps(PREFIX)
    return [
        {"name": "deviceEnv", "expression": "variables.containers.exists(c, has(c.env) && "
                                            f"c.env.exists(v, {_device_name('v.name')}))"},
        {"name": "openEnvFrom", "expression": "variables.containers.exists(c, has(c.envFrom) && c.envFrom.exists(s, "
                                              f"!has(s.prefix) || s.prefix == \"\" || {prefix}.startsWith(s.prefix) || "
                                              f"s.prefix.startsWith({prefix})))"},
    ]


def env_validation(env_from_honoured: bool) -> dict[str, str]:
    """The check: no device variable in env, and, where the toolkit honours the variable (`env_from_honoured`), no
    envFrom that could make one in a pod that can reach GPU nodes (`variables.reachesGpuNodes`, `variables.gpu`)."""
    env_from, what = "", ""
    if env_from_honoured:
        env_from = " && !((variables.gpu || variables.reachesGpuNodes) && variables.openEnvFrom)"
        what = " or envFrom without a prefix keeping names out of NVIDIA_ in a pod that can reach GPU nodes"
    return {"expression": f"!variables.deviceEnv{env_from}",
            "message": f"team pods may not set NVIDIA_* device variables (NVIDIA_VISIBLE_DEVICES and the like){what}: "
                       "GPUs come only from resource requests",
            "reason": "Forbidden"}
