"""Strict provider mocks: resources echo their inputs plus the outputs later resources read; unknown invokes fail."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable

import pulumi

from components.clouds import PACKAGES
from gpu_platform.engine.zones import zones


class UnmockedInvokeError(RuntimeError):
    """An invoke the offline engine has no answer for: the plan would silently use `{}` otherwise."""


_OFFLINE = {cloud: package.OFFLINE for cloud, package in PACKAGES.items()}
# Outputs a real provider computes that the program reads back (e.g. to build a kubeconfig), each cloud's from its
# package, and the random provider's.
_COMPUTED: dict[str, Callable[[str, dict], dict]] = {
    **{type_: answer for offline in _OFFLINE.values() for type_, answer in offline.computed.items()},
    "random:index/randomPassword:RandomPassword": lambda name, _: {"result": f"offline-{name}"},
}
# Invokes the program may make, with offline answers.
_INVOKES: dict[str, Callable[[dict], dict]] = {
    token: answer for offline in _OFFLINE.values() for token, answer in offline.invokes.items()}
# Invokes whose answer depends on the region (of the invoke's provider, else the stack's): real zone names, so a
# stack naming a real zone (a Capacity Block's AZ) plans offline as it applies.
_ZONE_INVOKES: dict[str, tuple[str, Callable[[tuple[str, ...], dict], dict]]] = {
    token: (cloud, answer) for cloud, offline in _OFFLINE.items() for token, answer in offline.zone_invokes.items()}


def fake_id(type_: str, name: str) -> str:
    return f"{name}-{hashlib.sha256(f'{type_}::{name}'.encode()).hexdigest()[:8]}"


class StrictMocks(pulumi.runtime.Mocks):
    """Mocks that record every resource's inputs and refuse invokes they do not know."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.inputs: dict[tuple[str, str], dict[str, Any]] = {}
        self.config = config or {}  # the stack config as the CLI passes it, for regions
        self.refused: set[tuple[str, str]] = set()  # (type, name) whose inputs the provider schema refuses

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.inputs[(args.typ, args.name)] = args.inputs
        if (args.typ, args.name) in self.refused:
            return fake_id(args.typ, args.name), {}
        computed = _COMPUTED.get(args.typ)
        outputs = {**args.inputs, **(computed(args.name, args.inputs) if computed else {})}
        return fake_id(args.typ, args.name), outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token in _ZONE_INVOKES:
            cloud, zone_answer = _ZONE_INVOKES[args.token]
            return zone_answer(zones(cloud, self.region(cloud, args.provider)), args.args)
        answer = _INVOKES.get(args.token)
        if answer is None:
            raise UnmockedInvokeError(f"invoke {args.token} has no offline answer; add one to "
                                      "its cloud's components/clouds/<cloud>/offline.py or avoid the invoke")
        return answer(args.args)

    def region(self, package: str, provider_ref: str | None) -> str:
        """The invoke's region: its explicit provider's `region`, else `<package>:region`, else `cluster.region`."""
        if provider_ref:
            urn = provider_ref.rsplit("::", 1)[0]
            type_, name = urn.split("::")[2].split("$")[-1], urn.split("::")[3]
            region = self.inputs.get((type_, name), {}).get("region")
            if region:
                return region
        cluster = self.config.get("gpu-platform:cluster") or {}
        if isinstance(cluster, str):
            cluster = json.loads(cluster)
        return self.config.get(f"{package}:region") or cluster.get("region", "")
