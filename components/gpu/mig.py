"""The mig-manager ConfigMap: mig-parted layouts for the pools the operator partitions."""
from __future__ import annotations

import yaml

from components.clouds import profile
from components.config.model import PlatformConfig
from components.config.operands import MIG_DISABLED, operator_mig

MIG_CONFIGMAP = "gpu-platform-mig-parted-config"
MIG_CONFIG_KEY = "config.yaml"  # mig-manager reads only this key


def mig_configs(config: PlatformConfig) -> dict[str, list[dict]]:
    """`mig-configs` in mig-parted v1 format: `all-disabled` plus each operator-partitioned pool's layout."""
    prof = profile(config.cloud)
    configs: dict[str, list[dict]] = {MIG_DISABLED: [{"devices": "all", "mig-enabled": False}]}
    for pool in config.gpu_pools:
        if operator_mig(prof, pool):
            layout = pool.sharing.mig_layout(pool.instance)
            configs[pool.sharing.mig_config_name] = [
                {"devices": "all", "mig-enabled": True, "mig-devices": dict(sorted(layout.items()))}]
    return configs


def mig_parted_config(config: PlatformConfig) -> str:
    """The `config.yaml` text mig-manager applies when a node's `nvidia.com/mig.config` label changes."""
    return yaml.safe_dump({"version": "v1", "mig-configs": mig_configs(config)}, sort_keys=False)
