"""Every single-node mutation of every example stack (delete it, or make it null, a list, a map, a string, an empty
string, 7 or -1) is refused with problems or accepted: never a traceback. Exhaustive and deterministic, next to the
random mutations of test_hardening_fuzz.py; it found two tracebacks the random run had missed."""
from __future__ import annotations

import copy
from typing import Any, Iterator

import pytest

from components.config import ConfigError, load
from gpu_platform.engine.plan import read_stack_config

from support.paths import ROOT, STACKS

MUTATIONS = {
    "null": None, "list": [1], "map": {"a": 1}, "string": "x", "empty": "", "int": 7, "negative": -1,
}


def _paths(node: Any, prefix: tuple = ()) -> Iterator[tuple]:
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from _paths(value, prefix + (key,))


def _config(stack: str) -> dict[str, Any]:
    raw = read_stack_config(ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    return {k.removeprefix("gpu-platform:"): v for k, v in raw.items() if k.startswith("gpu-platform:")}


@pytest.mark.parametrize("stack", STACKS)
def test_every_single_node_mutation_is_refused_or_accepted(stack):
    base = _config(stack)
    tried, tracebacks = 0, []
    for path in _paths(base):
        for mutation in ("delete", *MUTATIONS):
            raw = copy.deepcopy(base)
            parent = raw
            for key in path[:-1]:
                parent = parent[key]
            if mutation == "delete":
                del parent[path[-1]]
            else:
                parent[path[-1]] = copy.deepcopy(MUTATIONS[mutation])
            tried += 1
            try:
                load(raw, [], "mutated stack")
            except ConfigError:
                pass
            except Exception as exc:  # noqa: BLE001  (any other exception is the bug this test looks for)
                tracebacks.append(f"{'.'.join(map(str, path))} -> {mutation}: {type(exc).__name__}: {exc}")
    assert tried > 100
    assert tracebacks == []
