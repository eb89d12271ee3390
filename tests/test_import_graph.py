"""The import graph of components/ and gpu_platform/: no circles, nothing imported upward.

Imports are read with `ast` from every module, including the ones inside functions and `if TYPE_CHECKING:`
blocks. The layering, bottom to top, as the code stands:

1. Fact tables, importing no component: the chart pins (`components.pins`, nothing at all, the bottom), the GPU
   catalog (`components.catalog.*`, nothing outside itself), the cloud table (`components.clouds.profiles`, only
   the pins), the scheduler registry (`components.scheduling.registry`, `components.context` for a type, filled by
   each scheduler package's `facts` row through the one import line per scheduler in `components.scheduling.kinds`) and
   the platform's namespaces (`components.namespaces`, nothing).
2. The stack config (`components.config.*`): reads only the fact tables above plus the few pure helpers it
   validates against (`components.clouds` package lookup, `clouds.labels`, `clouds.zonal`,
   `scheduling.framework_catalog`); never a component module that creates resources.
3. Components (`components.<area>.*`): may import the config, the tables and each other, never `gpu_platform`.
4. The program (`components.program`): the only importer of the layer modules (`components.<area>.layer`).
5. `gpu_platform.engine` (runs the program offline) < `gpu_platform.policy`, `gpu_platform.simulator` (read
   a plan; independent of each other) < `gpu_platform.commands` and `gpu_platform.cli` (the top).
   `components` never imports `gpu_platform`; the cloud provider SDKs are imported only in
   `components.clouds.*` (so a stack loads only its own cloud's, see test_startup.py). `policies/` imports
   neither (tests/test_policy_standalone.py).

Circles: module-level imports (not counting `if TYPE_CHECKING:` ones, which never run) form no cycle. An import inside a function is how a
module defers one on purpose (the CLI imports its commands on call, the commands import its UsageError); those
still obey the layering rules above.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("components", "gpu_platform")
CLOUD_SDKS = ("pulumi_aws", "pulumi_azure_native", "pulumi_gcp", "pulumi_oci")
FACT_TABLES = ("components.pins", "components.catalog", "components.clouds.profiles", "components.scheduling.kinds",
               "components.scheduling.registry", "components.namespaces")
SCHEDULER_FACTS = tuple(f"components.scheduling.{p.parent.name}.facts"
                        for p in sorted((ROOT / "components/scheduling").glob("*/facts.py")))
CONFIG_MAY_IMPORT = (*FACT_TABLES, "components.config", "components.clouds.labels", "components.clouds.zonal",
                     "components.scheduling.framework_catalog")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _type_checking(stmt: ast.If) -> bool:
    return (isinstance(stmt.test, ast.Name) and stmt.test.id == "TYPE_CHECKING") or (
        isinstance(stmt.test, ast.Attribute) and stmt.test.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path) -> list[tuple[str, bool]]:
    """(imported module, at module level) for every import statement; `from a import b` counts `a.b` when b is
    a module, and `a` only when some name it imports is not a module."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    # Conditional module-level imports count; `if TYPE_CHECKING:` ones are annotations only, never run, so they
    # obey the layering rules but cannot close a cycle.
    top |= {id(n) for stmt in tree.body if isinstance(stmt, ast.If) and not _type_checking(stmt) for n in stmt.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            submodules = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in MODULES]
            if len(submodules) < len(node.names):
                found.append((module, id(node) in top))
            found += [(sub, id(node) in top) for sub in submodules]
    return found


IMPORTS = {name: _imports(name, path) for name, path in MODULES.items()}


def _under(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _violations(rule) -> list[str]:
    return sorted({f"{m} -> {t}" for m, found in IMPORTS.items() for t, _ in found if rule(m, t)})


def test_the_graph_is_read():
    assert len(MODULES) > 100
    assert ("components.scheduling.kueue.facts", True) in IMPORTS["components.scheduling.kinds"]
    assert ("gpu_platform.commands.plan", False) in IMPORTS["gpu_platform.cli"]  # a function-level import


def test_module_level_imports_form_no_cycle():
    graph: dict[str, set[str]] = defaultdict(set)
    for name, found in IMPORTS.items():
        graph[name] |= {t for t, top in found if top and t in MODULES and t != name}
    cycles, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for name in sorted(MODULES):
        if name not in state:
            visit(name)
    assert cycles == []


def test_components_never_import_gpu_platform():
    assert _violations(lambda m, t: _under(m, "components") and _under(t, "gpu_platform")) == []


def test_fact_tables_import_no_component():
    allowed = {"components.pins": (), "components.catalog": ("components.catalog",),
               "components.clouds.profiles": ("components.pins",),
               "components.scheduling.kinds": ("components.scheduling.registry", *SCHEDULER_FACTS),
               "components.scheduling.registry": ("components.context",),
               "components.namespaces": ()}
    assert _violations(lambda m, t: _under(t, "components") and any(
        _under(m, table) and not _under(t, *ok) for table, ok in allowed.items())) == []


def test_scheduler_rows_load_their_components_only_on_call():
    """A scheduler package's facts.py is a fact table at module level; its installer and monitoring functions
    import the rest of its own package when called (the row never names a module path)."""
    for facts in SCHEDULER_FACTS:
        package = facts.removesuffix(".facts")
        for target, top in IMPORTS[facts]:
            if _under(target, "components"):
                facts_only = ("components.pins", "components.context", "components.scheduling.registry")
                ok = facts_only if top else (*facts_only, package)  # `if TYPE_CHECKING:` ones count as not top
                assert _under(target, *ok), f"{facts} -> {target}"


def test_config_imports_only_the_tables_and_pure_helpers():
    assert _violations(lambda m, t: _under(m, "components.config") and _under(t, "components")
                       and t not in ("components", "components.clouds") and not _under(t, *CONFIG_MAY_IMPORT)) == []


def test_only_the_program_imports_layers():
    assert _violations(lambda m, t: t.endswith(".layer") and _under(t, "components")
                       and m != "components.program") == []
    assert _violations(lambda m, t: t == "components.program") == []


def test_cloud_sdks_only_in_cloud_modules():
    assert _violations(lambda m, t: _under(t, *CLOUD_SDKS) and not _under(m, "components.clouds")) == []


def test_gpu_platform_layers():
    below_commands = ("gpu_platform.engine", "gpu_platform.policy", "gpu_platform.simulator")
    assert _violations(lambda m, t: _under(m, *below_commands)
                       and _under(t, "gpu_platform.commands", "gpu_platform.cli")) == []
    assert _violations(lambda m, t: _under(m, "gpu_platform.engine")
                       and _under(t, "gpu_platform.policy", "gpu_platform.simulator")) == []
    assert _violations(lambda m, t: (_under(m, "gpu_platform.policy") and _under(t, "gpu_platform.simulator"))
                       or (_under(m, "gpu_platform.simulator") and _under(t, "gpu_platform.policy"))) == []
