"""The import graph of components/ and gpu_platform/: no circles, and nothing imported upward.

Imports are read with `ast` from every module, including the ones inside functions and `if TYPE_CHECKING:`
blocks. The layers, bottom to top; a module imports only from its own layer and the ones below it:

0. Facts, free of Pulumi: the chart pins, the namespaces, the GPU catalog, the registries' row tables (`rows`), the cloud registry
   (`components.clouds`), the shapes of cloud facts (`components.clouds.facts`), and each cloud package's entry
   (`components.clouds.<cloud>`) with its `facts`, `catalog` and `offline` modules; the scheduler registry
   (`components.scheduling.registry`, `kinds`) with each scheduler package's `facts` row, and the job framework table;
   the provisioner registry (`components.provisioning.registry`, `kinds`) with each provisioner package's `facts` row.
1. The stack config (`components.config.*`): the validated model and what follows from it alone (capacity, pool
   labels and taints, what the GPU Operator does on each pool); and each provisioner package's `checks`.
2. Components (`components.<area>.*`, the cloud packages' clusters, node pools and networks among them): may import
   each other, except that the cluster layer (`components.clouds.*`) imports none of the in-cluster areas.
3. The program (`components.program`): the only importer of the layer modules (`components.<area>.layer`).
4. `gpu_platform.engine` (runs the program offline) and `gpu_platform.nccl_manifest` < `gpu_platform.policy` and
   `gpu_platform.simulator` (read a plan; independent of each other) < the command line: `gpu_platform.cli` and its
   `gpu_platform.commands` (which raise the CLI's UsageError; the CLI imports each command on call).

One way down is deliberate and structural, not a list of exceptions: a registered package's entry or row loads its
own package's modules inside a function (a cloud's `cluster_class()`, a fabric record's `installer`, a scheduler row's
`parts`, a provisioner row's `checks` and `installer`), so a stack imports only its own cloud's SDK (test_startup.py) and validation no Pulumi. A cloud package's
`fabric` module is an in-cluster component living with its cloud: the cluster modules import none of it.
The cloud provider SDKs are imported only in their own cloud's package. `policies/` imports neither package
(tests/policy/test_policy_standalone.py).

Circles: module-level imports (not counting `if TYPE_CHECKING:` ones, which never run) form no cycle. An import inside
a function is how a module defers one on purpose (the CLI imports its commands on call); those still obey the layers.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from support.paths import ROOT


PACKAGES = ("components", "gpu_platform")
CLOUD_SDKS = {"aws": "pulumi_aws", "azure": "pulumi_azure_native", "gcp": "pulumi_gcp", "oci": "pulumi_oci"}
# The scheduler and job framework tables, and each scheduler package's row.
SCHEDULER_FACTS = ("components.scheduling.kinds", "components.scheduling.registry",
                   "components.scheduling.framework_catalog",
                   *(f"components.scheduling.{p.parent.name}.facts"
                     for p in sorted((ROOT / "components/scheduling").glob("*/facts.py"))))
# The provisioner table and each provisioner package's row; each package's config checks.
PROVISIONER_FACTS = ("components.provisioning.kinds", "components.provisioning.registry",
                     *(f"components.provisioning.{p.parent.name}.facts"
                       for p in sorted((ROOT / "components/provisioning").glob("*/facts.py"))))
PROVISIONER_CHECKS = tuple(f"components.provisioning.{p.parent.name}.checks"
                           for p in sorted((ROOT / "components/provisioning").glob("*/checks.py")))
IN_CLUSTER_AREAS = ("components.gpu", "components.network", "components.scheduling", "components.tenancy",
                    "components.observability")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}
CLOUD_PACKAGES = sorted(m for m, p in MODULES.items()
                        if m.startswith("components.clouds.") and m.count(".") == 2 and p.name == "__init__.py")
FACT_MODULES = ("components.pins", "components.namespaces", "components.catalog", "components.clouds.facts",
                "components.rows")
# A cloud package's in-cluster fabric installer (`fabric.py`, loaded by its fabric records): an in-cluster component
# that happens to live with its cloud, so the cluster modules may not import it and it may import in-cluster areas.
CLOUD_FABRICS = tuple(f"{package}.fabric" for package in CLOUD_PACKAGES if f"{package}.fabric" in MODULES)


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


def _cloud_facts(module: str) -> bool:
    """The registry, and a cloud package's entry and its Pulumi-free modules."""
    return module == "components.clouds" or module in CLOUD_PACKAGES or any(
        module == f"{package}.{part}" for package in CLOUD_PACKAGES for part in ("facts", "catalog", "offline"))


def _fact(module: str) -> bool:
    return _under(module, *FACT_MODULES) or _cloud_facts(module)


GPU_PLATFORM_LAYERS = (("gpu_platform.engine", "gpu_platform.nccl_manifest"),
                       ("gpu_platform.policy", "gpu_platform.simulator"),
                       ("gpu_platform.commands", "gpu_platform.cli"))


def _layer(module: str) -> int | None:
    if _fact(module) or _under(module, *SCHEDULER_FACTS, *PROVISIONER_FACTS):
        return 0
    if _under(module, "components.config", *PROVISIONER_CHECKS):
        return 1
    if module == "components.program":
        return 3
    if _under(module, "components"):
        return 2
    for rank, layer in enumerate(GPU_PLATFORM_LAYERS, start=4):
        if _under(module, *layer):
            return rank
    return None  # outside both packages, or a package's own __init__ (gpu_platform)


def _violations(rule) -> list[str]:
    return sorted({f"{m} -> {t}" for m, found in IMPORTS.items() for t, _ in found if rule(m, t)})


def _own_package_on_call(module: str, target: str, top: bool) -> bool:
    """A cloud package's entry or facts (a fabric record's installer), or a scheduler or provisioner package's row,
    loading its own package's modules inside a function."""
    package = module.removesuffix(".facts")
    registered = (*CLOUD_PACKAGES, *(f"{p}.facts" for p in CLOUD_PACKAGES), *SCHEDULER_FACTS, *PROVISIONER_FACTS)
    return module in registered and not top and _under(target, package)


def test_the_graph_is_read():
    assert len(MODULES) > 100
    assert CLOUD_PACKAGES == [f"components.clouds.{cloud}" for cloud in sorted(CLOUD_SDKS)]
    assert ("components.clouds.aws.facts", True) in IMPORTS["components.clouds.aws"]
    assert ("components.clouds.aws.cluster", False) in IMPORTS["components.clouds.aws"]  # a function-level import
    assert ("gpu_platform.commands.plan", False) in IMPORTS["gpu_platform.cli"]
    assert ("components.scheduling.kueue.facts", True) in IMPORTS["components.scheduling.kinds"]
    assert ("components.clouds.azure.fabric", False) in IMPORTS["components.clouds.azure.facts"]  # its installer
    assert ("components.provisioning.karpenter.facts", True) in IMPORTS["components.provisioning.kinds"]
    assert ("components.provisioning.karpenter.checks", False) in IMPORTS["components.provisioning.karpenter.facts"]
    assert len(PROVISIONER_FACTS) > 2 and len(PROVISIONER_CHECKS) > 2


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


def test_nothing_is_imported_from_a_higher_layer():
    upward = sorted({f"{m} -> {t}" for m, found in IMPORTS.items() for t, top in found
                     if _layer(m) is not None and _layer(t) is not None and _layer(t) > _layer(m)
                     and not _own_package_on_call(m, t, top)})
    assert upward == []


def test_facts_import_no_pulumi():
    assert _violations(lambda m, t: _fact(m) and _under(t, "pulumi", "pulumi_kubernetes", *CLOUD_SDKS.values())) == []


def test_the_cluster_layer_imports_no_in_cluster_area():
    """The cloud packages' Pulumi modules; their facts are held to the layers (a fabric record loads its installer)."""
    assert _violations(lambda m, t: _under(m, "components.clouds") and not _under(m, *CLOUD_FABRICS) and not _fact(m)
                       and _under(t, *IN_CLUSTER_AREAS, *CLOUD_FABRICS)) == []


def test_only_the_program_imports_layers():
    assert _violations(lambda m, t: t.endswith(".layer") and _under(t, "components")
                       and m != "components.program") == []


def test_each_cloud_sdk_only_in_its_own_cloud_package():
    assert _violations(lambda m, t: any(_under(t, sdk) and not _under(m, f"components.clouds.{cloud}")
                                        for cloud, sdk in CLOUD_SDKS.items())) == []


def test_policy_and_simulator_are_independent():
    assert _violations(lambda m, t: (_under(m, "gpu_platform.policy") and _under(t, "gpu_platform.simulator"))
                       or (_under(m, "gpu_platform.simulator") and _under(t, "gpu_platform.policy"))) == []


def test_the_scheduler_tables_import_only_facts():
    """Beyond their own package's installer and monitoring, loaded on call."""
    assert sorted({f"{m} -> {t}" for m, found in IMPORTS.items() for t, top in found
                   if _under(m, *SCHEDULER_FACTS) and _under(t, "components") and _layer(t) != 0
                   and not _own_package_on_call(m, t, top)}) == []


def test_tenancy_imports_no_scheduling_or_observability():
    """What tenancy needs of them (priority levels, quota shares, fabric NICs, the reclaim label) is config-level."""
    assert _violations(lambda m, t: _under(m, "components.tenancy")
                       and _under(t, "components.scheduling", "components.observability")
                       and not _under(t, *SCHEDULER_FACTS)) == []


def test_the_provisioner_tables_import_only_facts():
    """Beyond their own package's checks and installer, loaded on call."""
    assert sorted({f"{m} -> {t}" for m, found in IMPORTS.items() for t, top in found
                   if _under(m, *PROVISIONER_FACTS) and _under(t, "components") and _layer(t) != 0
                   and not _own_package_on_call(m, t, top)}) == []


def test_provisioner_checks_import_no_pulumi():
    """Config validation loads them: like the config, they import facts and config only."""
    assert _violations(lambda m, t: _under(m, *PROVISIONER_CHECKS)
                       and _under(t, "pulumi", "pulumi_kubernetes", *CLOUD_SDKS.values())) == []


def test_a_provisioner_package_is_named_outside_itself_only_by_the_table_and_the_clouds():
    """What a new provisioner touches outside its package: one import line in `components/provisioning/kinds.py` (and
    its chart pin in `components/pins.py`); parse, the layer and the program reach it through its row. The cloud
    packages build its cloud-specific part (a node class, IAM, a cluster setting), which names the cloud."""
    packages = sorted({m.rsplit(".", 1)[0] for m in PROVISIONER_FACTS if m.endswith(".facts")})
    assert len(packages) >= 4
    importers = {package: sorted({m for m, found in IMPORTS.items() for t, _ in found
                                  if _under(t, package) and not _under(m, package, "components.clouds")})
                 for package in packages}
    assert importers == {package: ["components.provisioning.kinds"] for package in packages}
