"""What the policy pack must know about a stack when it sees only the resource graph (a saved plan file)."""
from __future__ import annotations

import pulumi

from components.config.model import PlatformConfig


class StackFacts(pulumi.ComponentResource):
    """Records the stack's environment in the graph.

    The pack reads it when no stack config reaches it and treats a graph without it as production, so
    dropping this resource (or the `protect` flags) never relaxes a rule.
    """

    TYPE = "gpu-platform:policy:StackFacts"

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"environment": config.environment}, opts)
        self.register_outputs({})
