"""components/pins.py: each pin against the rule it names and the chart package it names, in
../shared/upstream/charts (Helm packages at their release tags) and ../shared/upstream/kueue/go.mod."""
from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest
import yaml

from components.provisioning.cluster_autoscaler.values import IMAGE_TAGS
from components.catalog import instance_types
from components.clouds.azure.fabric import SRIOV_DEVICE_PLUGIN
from components.pins import KUEUE_GO_MOD, NEWEST_STABLE, PINS, SAME_AS_CONTROLLER

from support.paths import upstream

SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?")


def package_of(pin) -> Path:
    """The pinned package; a pin with none fails (only a missing ../shared/upstream skips)."""
    package = upstream("charts") / f"{pin.chart}-{pin.version}.tgz"
    assert package.exists(), f"{pin.chart} {pin.version}: no {package.name} in {package.parent}"
    return package


def chart_file(package: Path, name: str) -> dict:
    """A top-level file of a chart package (not a subchart's), parsed."""
    with tarfile.open(package) as tar:
        (member,) = [m for m in tar.getmembers() if re.fullmatch(rf"[^/]+/{re.escape(name)}", m.name)]
        return yaml.safe_load(tar.extractfile(member).read())


def packaged_versions(chart: str) -> dict[str, tuple[int, ...] | None]:
    """version string -> (major, minor, patch), None for a pre-release, of every package of `chart` in the folder."""
    found = {}
    for path in upstream("charts").glob(f"{chart}-*.tgz"):
        match = SEMVER.fullmatch(path.name.removeprefix(f"{chart}-").removesuffix(".tgz"))
        if match:  # karpenter-crd-1.14.1 is not a karpenter version
            found[match.group(0)] = None if match.group(4) else tuple(map(int, match.groups()[:3]))
    return found


def go_requirements() -> dict[str, str]:
    """module -> version of every requirement in Kueue's go.mod (v0.19.2, ../shared/upstream/SOURCES.md)."""
    text = upstream("kueue/go.mod").read_text()
    return dict(re.findall(r"^\s*(?:require\s+)?(\S+)\s+(v\S+)(?:\s+//.*)?$", text, re.MULTILINE))


@pytest.mark.parametrize("pin", PINS.values(), ids=list(PINS))
def test_pin_equals_the_version_in_its_packages_chart_yaml(pin):
    """Helm matches an OCI tag or a repository index entry literally, so `v25.10.0` would miss chart 25.10.0."""
    chart = chart_file(package_of(pin), "Chart.yaml")
    assert (chart["name"], chart["version"]) == (pin.chart, pin.version)


@pytest.mark.parametrize("pin", [p for p in PINS.values() if p.rule == NEWEST_STABLE], ids=lambda p: p.chart)
def test_newest_stable_pins_are_the_newest_stable_package(pin):
    versions = packaged_versions(pin.chart)
    stable = {v: key for v, key in versions.items() if key}
    assert pin.version in stable, (pin.chart, sorted(versions))
    assert max(stable, key=stable.get) == pin.version, (pin.chart, sorted(stable))


def test_framework_pins_are_what_kueues_go_mod_requires():
    required = go_requirements()
    pins = [p for p in PINS.values() if p.rule == KUEUE_GO_MOD]
    assert {p.chart for p in pins} == {"jobset", "lws", "kuberay-operator", "kubeflow-trainer"}
    for pin in pins:
        assert required[pin.go_module] == f"v{pin.version.removeprefix('v')}", pin.chart


def test_go_mod_is_read():
    required = go_requirements()
    assert required["sigs.k8s.io/jobset"] == "v0.12.0" and required["sigs.k8s.io/lws"] == "v0.9.0"
    assert len(required) > 40


def test_crd_charts_follow_their_controller():
    pins = [p for p in PINS.values() if p.rule == SAME_AS_CONTROLLER]
    assert pins
    for pin in pins:
        assert pin.version == PINS[pin.controller].version, pin.chart


def test_every_pin_names_a_rule_it_is_tested_against():
    assert {p.rule for p in PINS.values()} == {NEWEST_STABLE, KUEUE_GO_MOD, SAME_AS_CONTROLLER}
    assert all(bool(p.go_module) is (p.rule == KUEUE_GO_MOD) for p in PINS.values())
    assert all(bool(p.controller) is (p.rule == SAME_AS_CONTROLLER) for p in PINS.values())


def test_efa_plugin_chart_schedules_on_every_efa_instance_type():
    """The chart's DaemonSet selects nodes by an instance-type list; a type missing from it gets no EFA plugin."""
    pin = PINS["aws-efa-k8s-device-plugin"]
    values = chart_file(package_of(pin), "values.yaml")
    listed = set(values["supportedInstanceLabels"]["values"])
    efa = {t.name for t in instance_types("aws") if t.interconnect == "efa"}
    assert efa and efa <= listed, sorted(efa - listed)


def test_network_operator_components_run_the_charts_release():
    """The NicClusterPolicy's SR-IOV device plugin is the image the chart's own release tags."""
    pin = PINS["network-operator"]
    values = chart_file(package_of(pin), "values.yaml")
    image, tag = SRIOV_DEVICE_PLUGIN
    assert values["sriov-network-operator"]["images"]["sriovDevicePlugin"] == f"nvcr.io/nvidia/mellanox/{image}:{tag}"


def test_autoscaler_image_of_the_charts_minor_is_at_least_its_app_version():
    pin = PINS["cluster-autoscaler"]
    app = chart_file(package_of(pin), "Chart.yaml")["appVersion"]
    major, minor, patch = map(int, app.split("."))
    ours = tuple(map(int, IMAGE_TAGS[f"{major}.{minor}"].removeprefix("v").split(".")))
    assert ours >= (major, minor, patch)
