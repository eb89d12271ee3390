"""Nothing outside a cloud's package names that cloud in code: one package per cloud (components/clouds/<cloud>/),
and the cross-cutting code (every other module of components/ and gpu_platform/) reads the cloud's facts through the
registry instead.

What is checked, read with `ast` from every module: the identifiers the code defines or uses (names, attributes,
functions, classes, arguments, keywords) and every module path it imports, each split into words (`_`, `.` and
camelCase: `GKENetworkParamSet` is gke, network, param, set; two neighbours joined are a word too, so `GpuDirect` is
gpudirect as well as gpu and direct). A word may not be a cloud's word, derived from the
registry so a fifth cloud is covered by itself: each cloud's package name (aws, gcp), its service (EKS, GKE), and
the words of its fabric names (efa, tcpx, tcpxo), except words naming a technology that no one cloud owns.

What is not: comments, docstrings and string literals. The style asks for a "why" naming the cloud on each
cloud-specific override, and a string is data the cloud's facts hand through (a resource type, an error naming
`gpudirect-tcpx`); an identifier is code that would branch on or reach into one cloud. The registry
(components/clouds/__init__.py) imports every cloud package by name; that is its job. The policy pack keeps its own
per-cloud copies by design (docs/architecture.md) and is not scanned.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from components.clouds import PACKAGES as CLOUDS, PROFILES
from support.paths import ROOT

# Fabric-name words that name an open or vendor technology several clouds sell, not a cloud: RDMA and InfiniBand.
# A cloud's own product words stay checked: efa, tcpx, tcpxo, and gpudirect, which names GKE's fabrics here (what
# cloud-neutral code needs of them is the Fabric record's pod_sidecar and placement_max_nodes).
TECHNOLOGIES = {"rdma", "infiniband"}
REGISTRY = ROOT / "components/clouds/__init__.py"


def words(identifier: str) -> set[str]:
    """`GKENetworkParamSet` -> {gke, network, param, set, gkenetwork, ...}; `components.clouds.gcp.facts` -> its four
    parts and their neighbour pairs. The pairs catch a cloud word spelled in two (`GpuDirect`, `TcpXo`)."""
    parts = [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", identifier)]
    return {*parts, *(a + b for a, b in zip(parts, parts[1:]))}


def cloud_words() -> dict[str, str]:
    """Each cloud's words, with the cloud they name."""
    named: dict[str, str] = {}
    for cloud, prof in PROFILES.items():
        for word in {cloud, *words(prof.service)} | {w for f in prof.fabrics for w in words(f)} - TECHNOLOGIES:
            named[word] = cloud
    return named


def identifiers(tree: ast.AST):
    """(line, identifier) for every name the code defines, uses or imports."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name
        elif isinstance(node, ast.arg):
            yield node.lineno, node.arg
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.lineno, node.arg
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module
        elif isinstance(node, ast.alias):
            yield node.lineno, node.name
            if node.asname:
                yield node.lineno, node.asname


def findings(source: str, named: dict[str, str]) -> list[str]:
    return [f"line {line}: {ident!r} names {named[w]} ({w})"
            for line, ident in identifiers(ast.parse(source)) for w in sorted(words(ident) & named.keys())]


def cross_cutting() -> list[Path]:
    """Every module of components/ and gpu_platform/ but the cloud packages and their registry."""
    own = [ROOT / "components/clouds" / cloud for cloud in CLOUDS]
    return [p for package in ("components", "gpu_platform") for p in sorted((ROOT / package).rglob("*.py"))
            if p != REGISTRY and not any(p.is_relative_to(d) for d in own)]


def test_the_words_come_from_every_cloud():
    named = cloud_words()
    assert {"aws", "eks", "efa", "azure", "aks", "gcp", "gke", "tcpx", "tcpxo", "oci", "oke"} <= named.keys()
    assert set(named.values()) == set(CLOUDS)


def test_cross_cutting_code_names_no_cloud():
    named = cloud_words()
    modules = cross_cutting()
    assert len(modules) > 100 and ROOT / "components/gpu/fabric.py" in modules
    found = {str(p.relative_to(ROOT)): f for p in modules if (f := findings(p.read_text(), named))}
    assert not found, "move it into the cloud's package and reach it through its facts:\n" + "\n".join(
        f"{path}: {line}" for path, lines in found.items() for line in lines)


def test_what_the_check_catches():
    """The shapes it must catch, and the ones it leaves alone, on small sources."""
    named = cloud_words()
    assert findings("from components.clouds.gcp.facts import short\n", named) == [
        "line 1: 'components.clouds.gcp.facts' names gcp (gcp)"]
    assert findings("import components.clouds.oci\n", named) == ["line 1: 'components.clouds.oci' names oci (oci)"]
    assert [f.split(" names ")[1] for f in findings(
        "class GKENetworks:\n  def tcpxo_installer(self, eks_role):\n    return self.aksNap(efa=1)\n", named)] == [
        "gcp (gke)", "gcp (tcpxo)", "aws (eks)", "azure (aks)", "aws (efa)"]
    # A cloud's fabric record reached into, or its type named, from outside its package (GKE's GPUDirect rows).
    assert [f.split(" names ")[1] for f in findings(
        "from components.clouds.facts import GpuDirect\nn = fabric.gpudirect.placement_max_nodes\n", named)] == [
        "gcp (gpudirect)", "gcp (gpudirect)"]
    # Comments, docstrings and strings say why and carry data; generic technology words are no cloud's.
    assert findings('"""GKE GPUDirect."""\n# EKS\nx = "gpudirect-tcpx"\nrdma = fabric.infiniband_rdma\n',
                    named) == []


def test_a_cloud_package_is_seen_naming_itself():
    """The real code the check would refuse: the GKE fabric installer, before it moved into its package."""
    source = (ROOT / "components/clouds/gcp/fabric.py").read_text()
    assert any("names gcp" in f for f in findings(source, cloud_words()))
