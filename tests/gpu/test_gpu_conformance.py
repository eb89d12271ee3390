"""The GPU layer against the upstream files at the pinned versions (../shared/upstream): chart values keys,
the ClusterPolicy CRD, the device plugin's sharing format, mig-parted layouts and dcgm-exporter metric names."""
from __future__ import annotations

import re

import jsonschema
import pytest

from components import catalog
from components.clouds import profile
from components.config import validate
from components.gpu.dcgm import METRICS
from components.gpu.mig import mig_configs
from components.gpu.operator import CHART_VERSION, operator_values
from components.gpu.sharing import DEFAULT_ENTRY, device_plugin_configs

from support.gpu import (CLOUDS, MATRIX, SHARING, SUBCHARTS, chart_values, cluster_policy_spec_schema,
    cluster_policy_validator, cluster_policy_view, key_paths, load_yaml, raw_config)
from support.paths import upstream

# Chart keys documented only as commented-out examples in values.yaml, yet real: the ClusterPolicy CRD has them
# and the chart copies them into the CR. Each is checked below against both files.
COMMENTED_KEYS = {("dcgmExporter", "config", "name"), ("dcgmExporter", "podLabelAllowlistRegex")}
# Keys of the bundled NFD subchart that gpu-operator's own values.yaml leaves to the subchart's defaults (the
# rendered chart reads them: test_helm_render's system-pool and every-leaf tests).
SUBCHART_KEYS = {("node-feature-discovery", "master", "tolerations"), ("node-feature-discovery", "gc", "tolerations")}
# mig-profiles.yaml names the B200 without its memory size.
MIG_TABLE_NAME = {"B200-180GB": "B200"}


def sample_configs():
    """Every cloud x sharing matrix config, plus mixed layouts, mixed owners and dcgm off."""
    configs = []
    for cloud, mode in MATRIX:
        instance = CLOUDS[cloud][1][0]
        configs.append(validate(raw_config(cloud, [{"name": "p1", "instanceType": instance, "maxNodes": 2,
                                                    "sharing": SHARING[mode]}])))
    configs.append(validate(raw_config("oci", [
        {"name": "bal", "instanceType": "BM.GPU.A100-v2.8", "maxNodes": 1,
         "sharing": {"mode": "mig", "migProfile": "all-balanced"}},
        {"name": "ts", "instanceType": "VM.GPU.A10.2", "maxNodes": 1, "driver": "operator",
         "sharing": {"mode": "time-slicing", "replicas": 3}},
    ])))
    configs.append(validate(raw_config("gcp", [{"name": "h", "instanceType": "a3-highgpu-8g", "maxNodes": 1,
                                                "driver": "operator"}])))
    configs.append(validate(raw_config("aws", [{"name": "h", "instanceType": "p5.48xlarge", "maxNodes": 1}],
                                       observability={"dcgm": False})))
    return configs


SAMPLES = sample_configs()
SAMPLE_IDS = [f"{c.cloud}-{'-'.join(p.sharing.mode for p in c.gpu_pools)}-{i}" for i, c in enumerate(SAMPLES)]


def test_chart_version_matches_upstream_snapshot():
    # The snapshot's Chart.yaml says v1.0.0-devel (the release pipeline rewrites it); the pinned component
    # versions in values.yaml are those of v26.7.0 (SOURCES.md).
    assert CHART_VERSION == "v26.7.0"
    assert chart_values()["migManager"]["version"] == "v0.15.0"
    assert chart_values()["devicePlugin"]["version"] == "v0.20.0"


@pytest.mark.parametrize("config", SAMPLES, ids=SAMPLE_IDS)
def test_every_values_key_exists_in_the_chart(config):
    values = operator_values(config, profile(config.cloud))
    unknown = []
    for path, default in key_paths(values, chart_values()):
        if default is None and path not in COMMENTED_KEYS | SUBCHART_KEYS:
            unknown.append(".".join(path))
        value = values
        for key in path:
            value = value[key]
        if default is not None and default != {}:
            assert type(value) is type(default), f"{'.'.join(path)}: {value!r} vs chart default {default!r}"
    assert not unknown, f"keys the chart does not have (silently ignored): {unknown}"


def test_commented_keys_are_documented_by_the_chart_and_in_the_crd():
    text = upstream("gpu-operator/values.yaml").read_text()
    spec = cluster_policy_spec_schema()
    for path in COMMENTED_KEYS:
        section = re.search(rf"^{path[0]}:\n(.*?)(?=^\S)", text, re.S | re.M).group(1)
        position = 0
        for key in path[1:]:
            found = re.compile(rf"^\s*#\s*{re.escape(key)}:", re.M).search(section, position)
            assert found, f"{'.'.join(path)} not documented in values.yaml's {path[0]} section"
            position = found.end()
        node = spec
        for key in path:
            node = node["properties"][key]


@pytest.mark.parametrize("config", SAMPLES, ids=SAMPLE_IDS)
def test_cluster_policy_view_validates_against_the_crd(config):
    values = operator_values(config, profile(config.cloud))
    view = cluster_policy_view(values)
    assert set(values) - set(view) <= SUBCHARTS
    cluster_policy_validator().validate(view)


def test_strict_crd_schema_rejects_a_typo():
    validator = cluster_policy_validator()
    with pytest.raises(jsonschema.ValidationError, match="migManger"):
        validator.validate({"migManger": {"enabled": True}})
    with pytest.raises(jsonschema.ValidationError, match="stratgy"):
        validator.validate({"mig": {"stratgy": "single"}})
    with pytest.raises(jsonschema.ValidationError, match="'many' is not one of"):
        validator.validate({"mig": {"strategy": "many"}})


def structure(value):
    """The shape of a YAML value: key trees, list item shapes, scalar types."""
    if isinstance(value, dict):
        return {k: structure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [structure(value[0])] if value else []
    return type(value).__name__


@pytest.mark.parametrize("config", SAMPLES, ids=SAMPLE_IDS)
def test_sharing_configs_have_the_device_plugins_format(config):
    examples = {"timeSlicing": load_yaml("k8s-device-plugin/sharing-examples/time-slicing.yaml"),
                "mps": load_yaml("k8s-device-plugin/sharing-examples/mps.yaml")}
    file_example = load_yaml("k8s-device-plugin/sharing-examples/config-file-example.yaml")
    for name, entry in device_plugin_configs(config).items():
        if name == DEFAULT_ENTRY:
            assert entry == {"version": file_example["version"]}
            continue
        (kind,) = entry["sharing"]
        assert structure(entry) == structure(examples[kind])
        assert entry["sharing"][kind]["resources"][0]["name"] == examples[kind]["sharing"][kind]["resources"][0]["name"]


def mig_layout_configs():
    """An operator-partitioned pool for every MIG layout of every MIG GPU the operator clouds offer."""
    cases = []
    for cloud in ("aws", "oci"):
        seen = set()
        for instance in catalog.instance_types(cloud):
            gpu = instance.gpu
            if not gpu.supports_mig or gpu.name in seen:
                continue
            seen.add(gpu.name)
            for layout in [f"all-{p.name}" for p in gpu.mig_profiles] + ["all-balanced"]:
                config = validate(raw_config(cloud, [{"name": "p1", "instanceType": instance.name, "maxNodes": 1,
                                                      "sharing": {"mode": "mig", "migProfile": layout}}]))
                cases.append(pytest.param(config, id=f"{cloud}-{gpu.name}-{layout}"))
    return cases


@pytest.mark.parametrize("config", mig_layout_configs())
def test_mig_layouts_use_valid_profiles_in_mig_parted_style(config):
    table = load_yaml("mig-profiles.yaml")["gpus"]
    defaults = load_yaml("mig-parted/config-default.yaml")["mig-configs"]
    pool = config.gpu_pools[0]
    gpu = pool.instance.gpu
    table_name = MIG_TABLE_NAME.get(gpu.name, gpu.name)
    # A GPU mig-profiles.yaml does not list yet (B300) is held to mig-parted's own layouts below, and to the
    # catalog's counts, which test_catalog checks against those layouts.
    limits = ({p["name"]: p["max_instances"] for p in table[table_name]["profiles"]} if table_name in table
              else {p.name: p.max_per_gpu for p in gpu.mig_profiles})
    configs = mig_configs(config)
    assert configs["all-disabled"] == defaults["all-disabled"]
    name = pool.sharing.mig_config_name
    assert set(configs) == {"all-disabled", name}
    (entry,) = configs[name]
    assert set(entry) == {"devices", "mig-enabled", "mig-devices"} and entry["devices"] == "all"
    assert entry["mig-enabled"] is True
    for profile_name, count in entry["mig-devices"].items():
        assert 1 <= count <= limits[profile_name], (profile_name, count)
    # Same name, same layout as mig-parted's own entry for this GPU (its entries differ per device-filter).
    assert name in defaults, f"{name} is not a mig-parted config name"
    upstream_layouts = [{k: v for k, v in block.items() if k != "device-filter"} for block in defaults[name]]
    assert entry in upstream_layouts


def test_dcgm_metrics_exist_upstream_with_the_same_type():
    known = {}
    for csv in ("default-counters.csv", "dcp-metrics-included.csv"):
        for line in upstream(f"dcgm-exporter/etc/{csv}").read_text().splitlines():
            match = re.match(r"#?\s*(DCGM_\w+)\s*,\s*(\w+)\s*,", line)
            if match:
                known[match.group(1)] = match.group(2)
    for name, kind, _ in METRICS:
        assert known.get(name) == kind, f"{name} ({kind}) not in dcgm-exporter etc/*.csv as {known.get(name)}"


def test_key_walk_flags_typos_and_treats_free_form_maps_as_leaves():
    defaults = chart_values()
    found = dict(key_paths({"migManager": {"enabld": True, "env": [{"name": "X"}]},
                            "devicePlugin": {"config": {"data": {"any-entry": "version: v1"}}},
                            "dcgmExporter": {"serviceMonitor": {"additionalLabels": {"release": "x"}}}}, defaults))
    assert found[("migManager", "enabld")] is None
    assert found[("migManager", "env")] == []
    assert found[("devicePlugin", "config", "data")] == {}
    assert found[("dcgmExporter", "serviceMonitor", "additionalLabels")] == {}
