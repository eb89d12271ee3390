"""Which input changes make a provider replace a resource instead of updating it in place.

Pulumi's bridged providers replace a resource when an input its Terraform schema marks `ForceNew` changes;
azure-native replaces on the properties its metadata marks `forceNew`. The offline engine has no provider plugins
to ask, so the facts for the resources whose replacement costs running work are stated in each cloud's package
(components/clouds/<cloud>/offline.py), each from the provider's own schema. Paths are the wire (camelCase) input
names of the plan JSON; a path names an object or list as a whole when any change inside it replaces the resource.
"""
from __future__ import annotations

from typing import Any

from components.clouds import PACKAGES

_OFFLINE = [package.OFFLINE for package in PACKAGES.values()]
REPLACE_ON_CHANGES: dict[str, tuple[str, ...]] = {
    type_: paths for offline in _OFFLINE for type_, paths in offline.replace_on_changes.items()}
# Inputs updated in place that reach only nodes created afterwards: existing nodes keep the old value until cycled.
NEW_NODES_ONLY: dict[str, tuple[str, ...]] = {
    type_: paths for offline in _OFFLINE for type_, paths in offline.new_nodes_only.items()}

# Inputs the provider updates in place but the cloud refuses to change, so `pulumi up` fails on them. `list[].field`
# compares `field` of each list entry by its `name`. AKS: the system pool is an agentPoolProfiles entry of the
# ManagedCluster, and Azure refuses to change an existing pool's availabilityZones there as on an AgentPool.
REFUSED_UPDATES: dict[str, tuple[str, ...]] = {
    "azure-native:containerservice:ManagedCluster": ("agentPoolProfiles[].availabilityZones",),
}

# pulumi-kubernetes replaces any object whose name or namespace changes (a new object, then the old one deleted).
KUBERNETES_REPLACE_ON_CHANGES: tuple[str, ...] = ("metadata.name", "metadata.namespace")


def replace_paths(type_: str) -> tuple[str, ...]:
    """The replace-triggering input paths of a resource type; empty when every change updates in place."""
    if type_.startswith("kubernetes:") and "/" in type_.split(":")[1]:
        return KUBERNETES_REPLACE_ON_CHANGES
    return REPLACE_ON_CHANGES.get(type_, ())


def value_at(inputs: dict[str, Any], path: str) -> Any:
    """The input at a dotted path, or None where the path does not exist."""
    value: Any = inputs
    for key in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def new_nodes_only(type_: str, paths: list[str]) -> list[str]:
    """The changed paths that reach only nodes created afterwards."""
    heads = NEW_NODES_ONLY.get(type_, ())
    return [p for p in paths if p.split(".")[0] in heads]


def replacing_changes(type_: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The replace-triggering paths whose value differs between two input sets."""
    return [path for path in replace_paths(type_) if value_at(old, path) != value_at(new, path)]


def refused_changes(type_: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The refused-in-place paths (REFUSED_UPDATES) whose value differs, one per list entry: `list[name].field`."""
    refused = []
    for path in REFUSED_UPDATES.get(type_, ()):
        head, field = path.split("[].")
        before = {e.get("name"): e for e in value_at(old, head) or [] if isinstance(e, dict)}
        for entry in value_at(new, head) or []:
            if isinstance(entry, dict) and entry.get("name") in before \
                    and value_at(before[entry["name"]], field) != value_at(entry, field):
                refused.append(f"{head}[{entry['name']}].{field}")
    return refused
