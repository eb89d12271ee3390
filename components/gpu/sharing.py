"""Device plugin sharing configs (time-slicing, MPS): one named entry per pool the operator shares."""
from __future__ import annotations

import yaml

from components.clouds import profile
from components.config.capacity import GPU_RESOURCE
from components.config.model import GpuPool, PlatformConfig
from components.config.operands import operator_shared, sharing_entry

DEVICE_PLUGIN_CONFIGMAP = "gpu-platform-device-plugin-config"
# Nodes without a `nvidia.com/device-plugin.config` label get whole GPUs. A dot keeps it apart from pool names
# (DNS-1123 labels), and naming it avoids the plugin's fallback of applying a lone entry to every node.
DEFAULT_ENTRY = "default.whole-gpu"
_SHARING_KEYS = {"time-slicing": "timeSlicing", "mps": "mps"}


def sharing_config(pool: GpuPool) -> dict:
    """One pool's config in the device plugin's v1 format (k8s-device-plugin README, "Shared Access to GPUs")."""
    resources = [{"name": GPU_RESOURCE, "replicas": pool.sharing.replicas}]
    return {"version": "v1", "sharing": {_SHARING_KEYS[pool.sharing.mode]: {"resources": resources}}}


def device_plugin_configs(config: PlatformConfig) -> dict[str, dict]:
    """Entries by name, the whole-GPU default first, then one per pool the operator shares."""
    prof = profile(config.cloud)
    entries = {DEFAULT_ENTRY: {"version": "v1"}}
    for pool in config.gpu_pools:
        if operator_shared(prof, pool):
            entries[sharing_entry(pool)] = sharing_config(pool)
    return entries


def device_plugin_data(config: PlatformConfig) -> dict[str, str]:
    """The ConfigMap data the chart creates: each entry as YAML text."""
    return {name: yaml.safe_dump(entry, sort_keys=False) for name, entry in device_plugin_configs(config).items()}
