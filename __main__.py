"""The gpu-platform Pulumi program: one validated stack config in, a GPU Kubernetes platform out."""
import pulumi

from components.cloud_sdks import require_cloud_sdk
from components.config import ConfigError, load_from_pulumi
from components.program import build

try:
    config = load_from_pulumi()
    require_cloud_sdk(config)
except ConfigError as exc:
    # RunError prints the message without a traceback; nothing has been registered yet.
    raise pulumi.RunError(str(exc)) from None

for warning in config.warnings:
    pulumi.log.warn(warning)

for key, value in build(config).items():
    pulumi.export(key, value)
