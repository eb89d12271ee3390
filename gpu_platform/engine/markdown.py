"""`plan --format markdown`: the plan summary as GitHub-flavoured Markdown for a pull request comment or
`$GITHUB_STEP_SUMMARY`; with `--diff` the change first: totals, the summary rows that change, and the old -> new
value of every changed input under Pulumi's `+ ~ +- -` marks."""
from __future__ import annotations

import json
from typing import Any

from gpu_platform.engine.diff import ACTIONS, PlanDiff
from gpu_platform.engine.plan import Plan
from gpu_platform.engine.platform_view import platform_view
from gpu_platform.engine.summary import pool_rows

MARKS = {"add": "+", "change": "~", "replace": "+-", "delete": "-"}
POOL_HEADER = ["pool", "instance type", "GPUs per node", "nodes", "capacity", "sharing", "driver", "fabric",
               "unreachable"]
QUOTA_HEADER = ["team", "priority", "queue", "pool", "resource", "counts", "nominal", "may borrow"]
MAX_VALUE = 80  # characters of one input value shown before it is cut


def cell(value: Any) -> str:
    """Text safe inside a Markdown table cell."""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>")


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


def quota_rows(plan: Plan) -> list[list[str]]:
    """One row per team and pool it holds quota on (Volcano: per team, its pools together)."""
    rows = []
    for team in platform_view(plan).teams:
        if not team.quotas:
            rows.append([team.name, team.priority, team.queue or "-", "-", "-", "-", "none", "-"])
        for quota in team.quotas:
            rows.append([team.name, team.priority, team.queue or "-", ", ".join(quota.pools), quota.resource,
                         quota.unit or "-", quota.nominal, quota.borrowing])
    return rows


def _summary_rows(plan: Plan) -> dict[str, dict[str, str]]:
    """Each summary row by what it is about (`pool h100-train`, `team research on h100-train`), column -> value."""
    rows = {f"pool {row[0]}": dict(zip(POOL_HEADER[1:], row[1:])) for row in pool_rows(plan)}
    for row in quota_rows(plan):
        rows[f"team {row[0]} on {row[3]}" + (f" ({row[4]})" if row[4] not in ("nvidia.com/gpu", "-") else "")] = \
            dict(zip(QUOTA_HEADER[1:3] + QUOTA_HEADER[5:], row[1:3] + row[5:]))
    return rows


def render_markdown(plan: Plan) -> str:
    custom = sum(1 for r in plan.resources if r.custom)
    view = platform_view(plan)
    lines = [f"## gpu-platform plan `{plan.stack}`", "",
             f"{len(plan.resources)} resources: {custom} cloud and Kubernetes resources, "
             f"{len(plan.resources) - custom} components; scheduler {view.scheduler or 'none'}", "",
             "### GPU pools", ""]
    pools = pool_rows(plan)
    lines += table(POOL_HEADER, pools) if pools else ["None: an adopted cluster's pools are its own."]
    lines += ["", "### Quotas per pool", ""]
    quotas = quota_rows(plan)
    lines += table(QUOTA_HEADER, quotas) if quotas else ["No teams."]
    return "\n".join(lines)


_UNSET = object()


def _value(value: Any) -> str:
    if value is _UNSET or value is None:
        return "(unset)"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = json.dumps(value, sort_keys=True)
    return f"`{text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 3] + '...'}`"


def _input_rows(diff: PlanDiff, old: Plan) -> list[list[str]]:
    before = {r.urn: r for r in old.resources}
    rows = []
    for change in diff.changes:
        mark, resource = MARKS[change.action], change.resource
        pool = f" (pool {change.pool})" if change.pool else ""
        if change.action in ("add", "delete"):
            rows.append([mark, resource.type, resource.name + pool, "", ""])
            continue
        why = f"replaced: follows {change.because_of}" if change.because_of else \
            ("forces replacement" if change.action == "replace" else "")
        old_inputs = before[resource.urn].inputs if resource.urn in before else {}
        for path in change.paths:
            for leaf, old_value, new_value in _leaves(path, _at(old_inputs, path), _at(resource.inputs, path)):
                rows.append([mark, resource.type, resource.name + pool, f"`{leaf}`" + (f" ({why})" if why else ""),
                             f"{_value(old_value)} → {_value(new_value)}"])
    return rows


def _at(inputs: Any, path: str) -> Any:
    """The value at a diff path, whose keys may hold dots themselves (`spec.hard.requests.nvidia.com/gpu`):
    the longest key that the path continues with wins."""
    if not path:
        return inputs
    if not isinstance(inputs, dict):
        return _UNSET
    keys = [k for k in inputs if path == k or path.startswith(f"{k}.")]
    if not keys:
        return _UNSET
    key = max(keys, key=len)
    return _at(inputs[key], path[len(key) + 1:])


def _leaves(path: str, old: Any, new: Any) -> list[tuple[str, Any, Any]]:
    """A changed value down to what changed in it: the diff compares lists whole, a reviewer wants the item."""
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [leaf for i, (a, b) in enumerate(zip(old, new)) if a != b for leaf in _leaves(f"{path}[{i}]", a, b)]
    if isinstance(old, dict) and isinstance(new, dict):
        return [leaf for key in sorted(set(old) | set(new)) if old.get(key, _UNSET) != new.get(key, _UNSET)
                for leaf in _leaves(f"{path}.{key}", old.get(key, _UNSET), new.get(key, _UNSET))]
    return [(path, old, new)]


def summary_changes(old: Plan, new: Plan) -> list[list[str]]:
    """The summary rows that differ, in a reviewer's words: [`~`, `pool h100-train`, `nodes`, `0-4 → 0-8`]."""
    before, after = _summary_rows(old), _summary_rows(new)
    rows = []
    for key in [*before, *(k for k in after if k not in before)]:
        if key not in after:
            rows.append(["-", key, "", "removed"])
        elif key not in before:
            rows.append(["+", key, "", "added"])
        else:
            rows += [["~", key, column, f"{old_value} → {after[key][column]}"]
                     for column, old_value in before[key].items() if after[key].get(column) != old_value]
    return rows


def render_markdown_diff(old: Plan, new: Plan, diff: PlanDiff, old_name: str) -> str:
    totals = ", ".join(f"{len(diff.of(a))} to {a}" for a in ACTIONS)
    lines = [f"## gpu-platform plan `{new.stack}`: changes from `{old_name}`", "",
             f"**{totals}**" + (" (replaces or deletes: review before `pulumi up`)" if diff.destructive else ""), ""]
    changed = summary_changes(old, new)
    lines += ["### Summary rows that change", ""]
    lines += table(["", "row", "column", "old → new"], changed) if changed else ["None."]
    lines += ["", "### Resources", ""]
    rows = _input_rows(diff, old)
    lines += table(["", "type", "name", "input", "old → new"], rows) if rows else ["No resource changes."]
    warnings = diff.warnings()
    if warnings:
        lines += ["", "### Warnings", "", *(f"- {cell(w)}" for w in warnings)]
    lines += ["", "<details><summary>The platform after this change</summary>", "",
              render_markdown(new), "", "</details>"]
    return "\n".join(lines)
