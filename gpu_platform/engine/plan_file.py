"""Reading a saved plan (`gpu-platform plan --format json`): every way the file departs from the stable shape, at once.

`check --plan` and `simulate --plan` read files a user (or another tool) wrote; a field of the wrong type must be an
error naming where it is, not a TypeError deep in a policy rule.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.config.reader import ReadError, decode

_RESOURCE_STRINGS = ("urn", "type", "name", "parent")
_OPTION_LISTS = ("ignoreChanges", "dependsOn")


class PlanFileError(ValueError):
    """A plan file that cannot be used, with every problem found."""

    def __init__(self, source: str, problems: list[str]):
        self.problems = problems
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        super().__init__(f"{source} is not a plan (`gpu-platform plan --format json`):\n"
                         + "\n".join(f"  - {p}" for p in shown))


def read_plan_json(path: str | Path) -> dict[str, Any]:
    """The plan document of a file, checked; PlanFileError (or OSError) otherwise."""
    path = Path(path)
    data = path.read_bytes()
    try:
        text = decode(data)
        document = json.loads(text)
    except ReadError as exc:
        raise PlanFileError(str(path), [f"the file {exc}"]) from None
    except json.JSONDecodeError as exc:
        raise PlanFileError(str(path), [f"line {exc.lineno}: not JSON ({exc.msg})"]) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise PlanFileError(str(path), [f"not usable JSON ({exc})"]) from None
    except RecursionError:
        raise PlanFileError(str(path), ["nested too deeply to be a plan"]) from None
    check_plan_json(document, str(path))
    return document


def check_plan_json(document: Any, source: str = "plan") -> None:
    """Raise PlanFileError listing every problem of a plan document's shape."""
    problems = list(_shape_problems(document))
    if problems:
        raise PlanFileError(source, problems)


def _shape_problems(doc: Any):
    if not isinstance(doc, dict):
        yield f"the document must be a JSON object with project, stack, resources and outputs; got {type(doc).__name__}"
        return
    for key in ("project", "stack"):
        if not isinstance(doc.get(key), str):
            yield f"{key}: must be a string; got {doc.get(key)!r:.60}"
    if not isinstance(doc.get("outputs", {}), dict):
        yield f"outputs: must be an object; got {type(doc['outputs']).__name__}"
    resources = doc.get("resources")
    if not isinstance(resources, list):
        yield f"resources: must be a list of resources; got {type(resources).__name__}"
        return
    if not resources:
        yield "resources: is empty; a plan of this program always has resources (nothing to check is not a pass)"
    for i, res in enumerate(resources):
        at = f"resources[{i}]"
        if not isinstance(res, dict):
            yield f"{at}: must be an object; got {type(res).__name__}"
            continue
        unknown = sorted(set(res) - {*_RESOURCE_STRINGS, "custom", "inputs", "options"}, key=str)
        if unknown:
            yield (f"{at}: unknown key(s) {', '.join(map(str, unknown))}; allowed: urn, type, name, parent, custom, "
                   "inputs, options")
        for key in _RESOURCE_STRINGS:
            if not isinstance(res.get(key), str):
                yield f"{at}.{key}: must be a string; got {res.get(key)!r:.60}"
        if not isinstance(res.get("custom"), bool):
            yield f"{at}.custom: must be true or false; got {res.get('custom')!r:.60}"
        if not isinstance(res.get("inputs"), dict):
            yield f"{at}.inputs: must be an object; got {type(res.get('inputs')).__name__}"
        options = res.get("options")
        if not isinstance(options, dict):
            yield f"{at}.options: must be an object {{protect, ignoreChanges, dependsOn}}; got {type(options).__name__}"
            continue
        if not isinstance(options.get("protect", False), bool):
            yield f"{at}.options.protect: must be true or false; got {options['protect']!r:.60}"
        for key in _OPTION_LISTS:
            value = options.get(key) or []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                yield f"{at}.options.{key}: must be a list of strings; got {value!r:.60}"

