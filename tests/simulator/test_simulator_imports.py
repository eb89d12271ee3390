"""gpu_platform/simulator has no import cycles: the engine depends on the Scheduler protocol (scheduler.py), the
schedulers on the engine, never the other way round. Read from the source with ast, so a function-level import
counts too; only `if TYPE_CHECKING:` imports (never run) are left out."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gpu_platform.simulator

PACKAGE = "gpu_platform.simulator"
ROOT = Path(gpu_platform.simulator.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported(tree: ast.AST, modules: set[str]) -> set[str]:
    """The package's modules this module imports (`from pkg import mod` names the module mod)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found & modules


def graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports. A package's __init__ importing its modules is an edge like any
    other: it closes a cycle only if one of them imports the package back."""
    paths = {module_name(p): p for p in ROOT.rglob("*.py")}
    return {name: imported(ast.parse(path.read_text()), set(paths)) - {name} for name, path in paths.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def walk(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == "open":
                found.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                walk(dep, stack + [dep])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            walk(node, [node])
    return found


def test_the_simulator_has_no_import_cycle():
    assert cycles(graph()) == []


def test_the_engine_imports_no_scheduler():
    edges = graph()
    engine = edges[f"{PACKAGE}.engine"]
    assert f"{PACKAGE}.scheduler" in engine
    assert not any(m.startswith((f"{PACKAGE}.kueue", f"{PACKAGE}.volcano")) for m in engine)
    assert f"{PACKAGE}.engine" in edges[f"{PACKAGE}.kueue.cycle"] and f"{PACKAGE}.scheduler" in edges[f"{PACKAGE}.volcano"]


def test_a_cycle_is_found():
    """The checker itself: the engine importing the Kueue scheduler (as it once did, inside a function) closes a
    cycle, and a TYPE_CHECKING import does not."""
    modules = {f"{PACKAGE}.engine", f"{PACKAGE}.kueue.cycle"}
    inside = ast.parse("def f():\n    from gpu_platform.simulator.kueue.cycle import KueueScheduler\n")
    guarded = ast.parse("if TYPE_CHECKING:\n    from gpu_platform.simulator.kueue.cycle import KueueScheduler\n")
    back = {f"{PACKAGE}.engine"}
    assert cycles({f"{PACKAGE}.engine": imported(inside, modules), f"{PACKAGE}.kueue.cycle": back})
    assert not cycles({f"{PACKAGE}.engine": imported(guarded, modules), f"{PACKAGE}.kueue.cycle": back})


def test_the_registry_names_every_scheduler_and_refuses_others():
    from gpu_platform.simulator.errors import SimulationError
    from gpu_platform.simulator.kueue import KueueScheduler
    from gpu_platform.simulator.scheduler import scheduler_for
    from gpu_platform.simulator.volcano import VolcanoScheduler

    assert scheduler_for("kueue") is KueueScheduler and scheduler_for("volcano") is VolcanoScheduler
    with pytest.raises(SimulationError, match="no simulated scheduler 'yunikorn'; known: kueue, volcano"):
        scheduler_for("yunikorn")
