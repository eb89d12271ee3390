"""What applying a plan would do to the state a previous plan describes: adds, in-place changes, replacements and
deletes, with every GPU pool replacement named.

Only custom resources are compared: components hold no cloud state. A resource is replaced when a
replace-triggering input (engine/replacements.py) changes, or when such an input holds an output of a resource it
depends on that is itself replaced (a node group on a replaced subnet, the tags of a replaced node group's Auto
Scaling group), as the real engine does once the new output is known. Offline, every id and computed output embeds
its resource's name (engine/mocks.py, from each cloud's offline.py), which is how such an input is recognised. Inputs under the new resource's ignoreChanges are not changes, as for `pulumi up`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from components.clouds import PACKAGES
from gpu_platform.engine.plan import Plan, PlannedResource
from gpu_platform.engine.replacements import (new_nodes_only, refused_changes, replace_paths, replacing_changes,
                                              value_at)

POOL_TYPE = "gpu-platform:cluster:GpuNodePool"
# The clouds' node pool resources: one outside a GpuNodePool is the cluster's system pool.
NODE_POOL_TYPES = tuple(type_ for package in PACKAGES.values() for type_ in package.OFFLINE.node_pool_types)
ACTIONS = ("add", "change", "replace", "delete")


@dataclass
class Change:
    """One resource's fate."""

    action: str  # add | change | replace | delete
    resource: PlannedResource
    paths: list[str] = field(default_factory=list)  # changed inputs; for a replacement, the ones that force it
    protected: bool = False  # the existing resource is protected: `pulumi up` refuses to replace or delete it
    pool: str = ""  # the GPU pool (config name) the resource belongs to, if any
    because_of: str = ""  # for a propagated replacement: the replaced resource whose new id it takes
    refused: list[str] = field(default_factory=list)  # in-place changes the cloud refuses (REFUSED_UPDATES)


@dataclass
class PlanDiff:
    changes: list[Change]

    def of(self, action: str) -> list[Change]:
        return [c for c in self.changes if c.action == action]

    @property
    def destructive(self) -> bool:
        return any(c.action in ("replace", "delete") or c.refused for c in self.changes)

    def warnings(self) -> list[str]:
        """One line per replaced or deleted GPU pool, and per protected resource the change would need to remove."""
        lines = []
        by_pool: dict[str, list[Change]] = {}
        for change in self.changes:
            if change.pool and change.action in ("replace", "delete"):
                by_pool.setdefault(change.pool, []).append(change)
        for pool, pool_changes in by_pool.items():
            verb = "replaces" if any(c.action == "replace" for c in pool_changes) else "deletes"
            # Name what forces it; the resources that only follow a replaced sibling are counted.
            leads = [c for c in pool_changes if c.because_of not in {p.resource.name for p in pool_changes}]
            named = "; ".join(f"{c.resource.type} {c.resource.name}" + (f" ({_reason(c)})" if c.action == "replace"
                                                                        else "") for c in leads)
            more = len(pool_changes) - len(leads)
            lines.append(f"{verb} pool {pool}: {named}{f', and {more} resources that follow it' if more else ''}"
                         f"; its nodes and running pods go")
        for change in self.of("replace"):
            if not change.pool and change.resource.type in NODE_POOL_TYPES:
                lines.append(f"replaces the system pool: {change.resource.type} {change.resource.name} "
                             f"({_reason(change)}); system pods (DNS, controllers) wait for its successor")
        for change in self.of("change"):
            if change.refused:
                lines.append(f"{change.resource.type} {change.resource.name}: the cloud refuses to change "
                             f"{', '.join(change.refused)} in place, so `pulumi up` fails; keep the old value: "
                             "only a new pool, created beside this one, can take the new one")
            later = new_nodes_only(change.resource.type, change.paths)
            if change.pool and later:
                lines.append(f"changes pool {change.pool} for new nodes only: {change.resource.type} "
                             f"{change.resource.name} ({', '.join(sorted({p.split('.')[0] for p in later}))}); "
                             "existing nodes keep the old value until the pool is cycled")
        for change in self.changes:
            if change.action not in ("replace", "delete"):
                continue
            if change.protected:
                lines.append(f"{change.resource.type} {change.resource.name} is protected: `pulumi up` refuses to "
                             f"{change.action} it until `pulumi state unprotect '{change.resource.urn}'`")
        return lines


def diff_plans(old: Plan, new: Plan) -> PlanDiff:
    """The changes that take `old`'s resources to `new`'s."""
    old_by_urn = {r.urn: r for r in old.resources if r.custom}
    new_by_urn = {r.urn: r for r in new.resources if r.custom}
    pools = {**_pool_names(old), **_pool_names(new)}
    changes: dict[str, Change] = {}
    for urn, resource in new_by_urn.items():
        before = old_by_urn.get(urn)
        if before is None:
            changes[urn] = Change("add", resource)
            continue
        ignored = resource.options.get("ignoreChanges") or []
        changed = [p for p in _changed_paths(before.inputs, resource.inputs) if not _ignored(p, ignored)]
        forcing = replacing_changes(resource.type, before.inputs, resource.inputs)
        if forcing:
            changes[urn] = Change("replace", resource, forcing)
        elif changed:
            changes[urn] = Change("change", resource, changed,
                                  refused=refused_changes(resource.type, before.inputs, resource.inputs))
    for urn, resource in old_by_urn.items():
        if urn not in new_by_urn:
            changes[urn] = Change("delete", resource)
    _propagate_replacements(changes, new_by_urn)
    parents = {r.urn: r.parent for r in (*old.resources, *new.resources)}
    for urn, change in changes.items():
        before = old_by_urn.get(urn)
        change.protected = bool(before and before.options.get("protect"))
        change.pool = _pool_of(change.resource, pools, parents)
    order = {action: i for i, action in enumerate(ACTIONS)}
    return PlanDiff(sorted(changes.values(), key=lambda c: (order[c.action], c.resource.urn)))


def _propagate_replacements(changes: dict[str, Change], resources: dict[str, PlannedResource]) -> None:
    """Replace every resource whose replace-triggering input holds an output of a replaced dependency, until none
    is left."""
    while True:
        replaced = {urn: c.resource.name for urn, c in changes.items() if c.action == "replace"}
        grew = False
        for urn, resource in resources.items():
            current = changes.get(urn)
            if current is not None and current.action in ("add", "replace"):
                continue
            names = [replaced[d] for d in resource.options.get("dependsOn") or [] if d in replaced]
            for path in replace_paths(resource.type) if names else ():
                hit = _holds_output_of(value_at(resource.inputs, path), names)
                if hit:
                    changes[urn] = Change("replace", resource, [path], because_of=hit)
                    grew = True
                    break
        if not grew:
            return


def _holds_output_of(value: Any, names: list[str]) -> str:
    """The name of the dependency one of whose outputs (which embed its name offline) `value` holds, or ""."""
    if isinstance(value, str):
        return next((name for name in names if name in value), "")
    if isinstance(value, list):
        return next((hit for hit in (_holds_output_of(v, names) for v in value) if hit), "")
    if isinstance(value, dict):
        return next((hit for hit in (_holds_output_of(v, names) for v in value.values()) if hit), "")
    return ""


def _changed_paths(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the leaves that differ; lists compare as a whole."""
    if isinstance(old, dict) and isinstance(new, dict):
        paths = []
        for key in sorted(set(old) | set(new)):
            paths += _changed_paths(old.get(key), new.get(key), f"{prefix}{key}.")
        return paths
    return [] if old == new else [prefix.rstrip(".")]


def _ignored(path: str, ignored: list[str]) -> bool:
    return any(path == i or path.startswith(i + ".") for i in ignored)


def _pool_names(plan: Plan) -> dict[str, str]:
    """GpuNodePool component URN -> the pool's config name."""
    return {r.urn: r.inputs.get("poolName", r.name) for r in plan.resources if r.type == POOL_TYPE}


def _pool_of(resource: PlannedResource, pools: dict[str, str], parents: dict[str, str]) -> str:
    """The pool whose component is an ancestor of `resource`, or ""."""
    urn = resource.parent
    while urn:
        if urn in pools:
            return pools[urn]
        urn = parents.get(urn, "")
    return ""


def _reason(change: Change) -> str:
    if change.because_of:
        return f"{', '.join(change.paths)} follows replaced {change.because_of}"
    return ", ".join(change.paths)


def render_diff(diff: PlanDiff) -> str:
    """Counts, then one line per resource: `+` add, `~` change, `+-` replace, `-` delete; replacements flagged."""
    counts = ", ".join(f"{len(diff.of(a))} to {a}" for a in ACTIONS)
    lines = [f"diff: {counts}"]
    marks = {"add": "+ ", "change": "~ ", "replace": "+-", "delete": "- "}
    for change in diff.changes:
        note = ""
        if change.action == "replace":
            note = f"  REPLACE: {_reason(change)}"
        elif change.action == "change":
            note = f"  ({', '.join(change.paths[:6])}{', ...' if len(change.paths) > 6 else ''})"
            if change.refused:
                note += f"  REFUSED BY THE CLOUD: {', '.join(change.refused)}"
        if change.pool:
            note += f"  [pool {change.pool}]"
        if change.protected and change.action in ("replace", "delete"):
            note += "  [protected]"
        lines.append(f"  {marks[change.action]} {change.resource.type}  {change.resource.name}{note}")
    lines += [f"warning: {w}" for w in diff.warnings()]
    return "\n".join(lines)


def diff_json(diff: PlanDiff) -> dict[str, Any]:
    return {action: [{"urn": c.resource.urn, "paths": c.paths, "pool": c.pool, "protected": c.protected}
                     for c in diff.of(action)] for action in ACTIONS} | {"warnings": diff.warnings()}


class PlanFileError(Exception):
    """A previous plan that cannot be read; the message names the file and what is wrong."""


def same_stack(old: Plan, new: Plan, path: str) -> None:
    """Refuse to compare plans of different stacks: every URN would differ, so everything would read as replaced."""
    if (old.project, old.stack) != (new.project, new.stack):
        raise PlanFileError(f"{path} is a plan of {old.project}/{old.stack}, not of {new.project}/{new.stack}")


def read_plan_file(path: str) -> Plan:
    """A `plan --format json` output, checked enough that comparing against it cannot fail halfway."""
    try:
        with open(path) as fh:
            data = json.load(fh)
    except OSError as exc:
        raise PlanFileError(f"cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PlanFileError(f"{path} is not JSON ({exc}); expected the output of `gpu-platform plan --format json`") \
            from None
    resources = data.get("resources") if isinstance(data, dict) else None
    if not isinstance(resources, list) or not {"project", "stack"} <= set(data):
        raise PlanFileError(f"{path} is not a plan: expected the output of `gpu-platform plan --format json` "
                            "(an object with project, stack and resources)")
    keys = {"urn", "type", "name", "parent", "custom", "inputs", "options"}
    for i, resource in enumerate(resources):
        if not isinstance(resource, dict) or set(resource) != keys or not isinstance(resource["inputs"], dict) \
                or not isinstance(resource["options"], dict):
            raise PlanFileError(f"{path}: resources[{i}] is not a planned resource; each needs exactly "
                                f"{', '.join(sorted(keys))}")
    return Plan.from_json(data)
