"""Each cloud's Pulumi provider SDK is an extra (`pip install gpu-platform[gcp]`): a stack whose cloud's SDK is
missing is refused up front, naming the extra, instead of failing deep inside an import."""
from __future__ import annotations

import importlib

from components.config.errors import ConfigError, Problem
from components.config.model import PlatformConfig

# cloud -> (import name, pyproject extra): the extras in pyproject.toml's [project.optional-dependencies].
SDKS = {
    "aws": ("pulumi_aws", "aws"),
    "azure": ("pulumi_azure_native", "azure"),
    "gcp": ("pulumi_gcp", "gcp"),
    "oci": ("pulumi_oci", "oci"),
}


def require_cloud_sdk(config: PlatformConfig) -> None:
    """Raise ConfigError at `cloud` when the stack creates its cluster with an SDK this environment lacks."""
    if config.cluster.adopted or config.cloud not in SDKS:
        return  # an adopted cluster is reached through its kubeconfig alone: no cloud SDK
    module, extra = SDKS[config.cloud]
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise  # the SDK is there but broken: its own error says more than ours would
        raise ConfigError([Problem("cloud", f"{config.cloud} clusters need the {module.replace('_', '-')} SDK, "
                                            f"which is not installed: pip install 'gpu-platform[{extra}]' (or "
                                            "'gpu-platform[all]')")]) from None
