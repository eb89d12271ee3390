"""A mock resource monitor that also records each registration's parent, options and wire inputs."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from pulumi.runtime.mocks import MockMonitor

from gpu_platform.engine.schema import SchemaProblem, check_resource


@dataclass
class Registration:
    """What the engine was asked to register, in the order it was asked."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    provider: str
    protect: bool
    ignore_changes: list[str]
    depends_on: list[str]
    inputs: dict[str, Any] = field(default_factory=dict)
    alias_types: list[str] = field(default_factory=list)  # provider classes' own type aliases (the bench replays them)
    delete_before_replace: bool = False


class RecordingMonitor(MockMonitor):
    """Records every RegisterResource request next to the mock's usual answer."""

    def __init__(self, mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        self.schema_problems: list[SchemaProblem] = []  # reported together once the program has run

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The real engine leaves the root Stack out of child URNs' qualified types; the stock mock does not.
        if parent and parent.split("::")[2] == "pulumi:pulumi:Stack":
            parent = ""
        return super().make_urn(parent, type_, name)

    def RegisterResource(self, request):
        if request.type == "pulumi:pulumi:Stack":
            return super().RegisterResource(request)
        # The wire object is read as JSON here: deserializing properties again inside the monitor deadlocks.
        inputs = json_format.MessageToDict(request.object, preserving_proto_field_name=True)
        urn = self.make_urn(request.parent, request.type, request.name)
        problems = check_resource(request.type, urn, inputs, request.custom)
        if problems:
            # Echoed back, a value of the wrong type fails the SDK's output reading first, with a worse message.
            self.mocks.refused.add((request.type, request.name))
            self.schema_problems.extend(problems)
        response = super().RegisterResource(request)
        self.registrations.append(Registration(
            urn=response.urn, type=request.type, name=request.name, parent=request.parent, custom=request.custom,
            provider=request.provider, protect=bool(request.protect), ignore_changes=list(request.ignoreChanges),
            depends_on=sorted(set(request.dependencies)), inputs=inputs,
            alias_types=[alias.spec.type for alias in request.aliases if alias.spec.type],
            delete_before_replace=bool(request.deleteBeforeReplace),
        ))
        return response
