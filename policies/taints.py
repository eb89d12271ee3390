"""Taints and tolerations in Kubernetes spelling, parsed from every spelling the clouds use."""
from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from policies.props import get, mapping

GPU_TAINT_KEY = "nvidia.com/gpu"
# Our spot taint, and the ones clouds put on interruptible nodes themselves.
SPOT_TAINT_KEYS = ("gpu-platform.io/spot", "kubernetes.azure.com/scalesetpriority", "cloud.google.com/gke-spot")
API_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}
_EFFECTS = {**{v: k for k, v in API_EFFECTS.items()}, **{k: k for k in API_EFFECTS}}
_TAINT_STRING = re.compile(r"^(?P<key>[^=:\s]+)(=(?P<value>[^:\s]*))?:(?P<effect>\w+)$")
_REGISTER_WITH_TAINTS = re.compile(r"--register-with-taints[= ]([^\s\"']+)")


@dataclass(frozen=True, order=True)
class Taint:
    """A node taint in Kubernetes spelling."""

    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


def taint_from_map(raw: Any) -> Taint:
    raw = mapping(raw)
    effect = str(get(raw, "effect", ""))
    return Taint(str(get(raw, "key", "")), str(get(raw, "value", "")), _EFFECTS.get(effect, effect))


def taint_from_string(text: str) -> Taint | None:
    match = _TAINT_STRING.match(text.strip())
    if not match:
        return None
    effect = match["effect"]
    return Taint(match["key"], match["value"] or "", _EFFECTS.get(effect, effect))


def kubelet_taints(user_data: str) -> list[Taint] | None:
    """Taints a node registers with, from `--register-with-taints` in base64 cloud-init; None if not base64 text."""
    try:
        script = base64.b64decode(user_data, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    taints = []
    for flag in _REGISTER_WITH_TAINTS.findall(script):
        taints += [t for t in map(taint_from_string, flag.split(",")) if t is not None]
    return taints


def tolerates(toleration: Mapping, taint: Taint) -> bool:
    """Kubernetes' matching: same key (or an empty key with Exists), same value unless Exists, same effect unless empty."""
    key = str(get(toleration, "key", ""))
    operator = str(get(toleration, "operator", "Equal"))
    effect = str(get(toleration, "effect", ""))
    if effect and effect != taint.effect:
        return False
    if operator == "Exists":
        return not key or key == taint.key
    return key == taint.key and str(get(toleration, "value", "")) == taint.value


def tolerated(tolerations: Iterable[Mapping], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)
