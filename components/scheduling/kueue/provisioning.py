"""Queued provisioning through Kueue (GKE Dynamic Workload Scheduler), as the Kueue installer creates it: one
ProvisioningRequest admission check, run only for workloads admitted to a `provisioning: queued` pool's flavor."""
from __future__ import annotations

from typing import Any

from components.config.capacity import GPU_RESOURCE
from components.config.model import PlatformConfig, Team
from components.config.shares import team_shares

ADMISSION_CHECK = "queued-provisioning"
PROVISIONING_CONFIG = "queued-provisioning"
CONTROLLER = "kueue.x-k8s.io/provisioning-request"  # Kueue's built-in ProvisioningRequest admission check
GROUP = "kueue.x-k8s.io"


def queued_pools(config: PlatformConfig) -> list[str]:
    return [pool.name for pool in config.gpu_pools if pool.queued]


def admission_check_spec() -> dict[str, Any]:
    return {"controllerName": CONTROLLER,
            "parameters": {"apiGroup": GROUP, "kind": "ProvisioningRequestConfig", "name": PROVISIONING_CONFIG}}


def provisioning_config_spec(provisioning_class: str) -> dict[str, Any]:
    """The ProvisioningRequest Kueue creates: the cloud's queued class, for the pod sets that ask for GPUs."""
    return {"provisioningClassName": provisioning_class, "managedResources": [GPU_RESOURCE]}


def admission_checks(config: PlatformConfig, team: Team) -> dict[str, Any] | None:
    """The ClusterQueue's admissionChecksStrategy: the check on the team's queued flavors only, so workloads on
    autoscaled pools are admitted as before."""
    queued = set(queued_pools(config))
    flavors = [share.pool.name for share in team_shares(config, team) if share.pool.name in queued]
    if not flavors:
        return None
    return {"admissionChecks": [{"name": ADMISSION_CHECK, "onFlavors": flavors}]}
