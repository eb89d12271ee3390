"""Namespaces the platform's own components run in, named once here so the config refuses each as a team name
(config/teams.py): a team's `edit` in one would reach privileged operator pods and their credentials. Schedulers,
job frameworks and fabrics name theirs in their own tables (scheduling.kinds, framework_catalog, each cloud's facts).
"""
from __future__ import annotations

KUBE_SYSTEM = "kube-system"  # the autoscalers, Karpenter and the GPUDirect installers
GPU_OPERATOR = "gpu-operator"
CALICO = "tigera-operator"
PLATFORM = "gpu-platform-system"  # the reclaimer

PLATFORM_NAMESPACES = (KUBE_SYSTEM, GPU_OPERATOR, CALICO, PLATFORM)
