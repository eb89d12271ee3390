"""The gpu-platform Pulumi program: one validated stack config in, a GPU Kubernetes platform out."""
import pulumi

from components.config import ConfigError, load_from_pulumi
from components.program import build

try:
    config = load_from_pulumi()
except ConfigError as exc:
    # RunError prints the message without a traceback; nothing has been registered yet.
    raise pulumi.RunError(str(exc)) from None

for warning in config.warnings:
    pulumi.log.warn(warning)

for key, value in build(config).items():
    pulumi.export(key, value)
