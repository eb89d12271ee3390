"""The system pool's taint, and the toleration every platform workload that runs there carries."""
from __future__ import annotations

from components.config.model import Taint

# Team pods stay off the nodes Kueue, Prometheus and the autoscaler need: the taint AKS's onlyCriticalAddonsEnabled
# sets, which every cloud's own add-ons (CoreDNS, metrics-server, CSI controllers) already tolerate.
SYSTEM_TAINT = Taint("CriticalAddonsOnly", "true", "NoSchedule")
SYSTEM_TOLERATION = {"key": SYSTEM_TAINT.key, "operator": "Exists", "effect": SYSTEM_TAINT.effect}


def tolerating(*extra: dict[str, str]) -> list[dict[str, str]]:
    """A chart's tolerations: the system pool's, then the chart defaults a values list would otherwise replace."""
    return [dict(SYSTEM_TOLERATION), *(dict(t) for t in extra)]
