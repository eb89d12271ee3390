"""Helpers the gpu tests share (moved out of the test modules that defined them)."""
from __future__ import annotations

import copy
from functools import lru_cache

import jsonschema
import yaml

from components.clouds import profile

from support.paths import strict_schema, upstream


@lru_cache
def _parsed(relative: str):
    return yaml.safe_load(upstream(relative).read_text())


def load_yaml(relative: str):
    """An upstream YAML file, parsed once per session; callers get their own copy."""
    return copy.deepcopy(_parsed(relative))


def chart_values() -> dict:
    return load_yaml("gpu-operator/values.yaml")


def cluster_policy_spec_schema() -> dict:
    crd = load_yaml("gpu-operator/crds/nvidia.com_clusterpolicies.yaml")
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"]


@lru_cache
def cluster_policy_validator() -> jsonschema.Draft7Validator:
    """Strict spec schema; `required` dropped because the chart fills every required section from its defaults."""
    schema = strict_schema(cluster_policy_spec_schema())
    schema.pop("required", None)
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


# Keys the chart consumes itself (it renders the ConfigMap from them) instead of copying them into the CR.
# Values the chart reads itself, not ClusterPolicy fields: operator.tolerations is the operator Deployment's.
CHART_ONLY = {("devicePlugin", "config", "create"), ("devicePlugin", "config", "data"),
              ("migManager", "config", "create"), ("operator", "tolerations")}
SUBCHARTS = {"node-feature-discovery"}


def cluster_policy_view(values: dict) -> dict:
    """The ClusterPolicy spec the chart renders from our values, where the mapping is a copy."""
    spec = copy.deepcopy({k: v for k, v in values.items() if k not in SUBCHARTS})
    for path in CHART_ONLY:
        parent = spec
        for key in path[:-1]:
            parent = parent.get(key, {})
        parent.pop(path[-1], None)
    return spec


def key_paths(values: dict, defaults, prefix=()):
    """(path, default or None when the chart has no such key) for every leaf we set.

    A dict we set is walked into where the chart has a non-empty dict; lists and free-form maps (`{}` in the
    chart, e.g. labels, data) are leaves.
    """
    for key, value in values.items():
        path = (*prefix, key)
        if isinstance(defaults, dict) and key in defaults:
            default = defaults[key]
            if isinstance(value, dict) and isinstance(default, dict) and default:
                yield from key_paths(value, default, path)
            else:
                yield path, default
        elif isinstance(value, dict) and value:
            yield from key_paths(value, None, path)
        else:
            yield path, None


# Per cloud: required extras, a MIG-capable A100-80GB type and its GPUs, a non-MIG type and its GPUs.
CLOUDS = {
    "aws": ({}, ("p4de.24xlarge", 8), ("g6.12xlarge", 4)),
    "azure": ({}, ("Standard_NC96ads_A100_v4", 4), ("Standard_NV36ads_A10_v5", 1)),
    "gcp": ({"project": "p", "zones": ["us-central1-a"]}, ("a2-ultragpu-8g", 8), ("g2-standard-24", 2)),
    "oci": ({"compartmentId": "ocid1.compartment.oc1..x", "gpuImageId": "ocid1.image.oc1..g",
             "imageId": "ocid1.image.oc1..s"}, ("BM.GPU.A100-v2.8", 8),
            ("VM.GPU.A10.2", 2)),
}


def raw_config(cloud: str, pools: list[dict], **top) -> dict:
    extras = CLOUDS[cloud][0]
    profile_extras = set(profile(cloud).extras)
    cluster = {"name": "c1", "region": profile(cloud).region_example, "authorizedNetworks": ["203.0.113.0/24"],
               cloud: {k: v for k, v in extras.items() if k in profile_extras}}
    return {"cloud": cloud, "cluster": cluster, "gpuPools": pools,
            "teams": [{"name": "t1", "quotas": {pools[0]["name"]: 1}}], **top}


SHARING = {
    "none": {"mode": "none"},
    "mig": {"mode": "mig", "migProfile": "all-1g.10gb"},
    "mps": {"mode": "mps", "replicas": 4},
    "time-slicing": {"mode": "time-slicing", "replicas": 4},
}

MATRIX = [(cloud, mode) for cloud in CLOUDS for mode in SHARING]
