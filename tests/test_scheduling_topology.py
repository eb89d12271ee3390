"""Kueue topology-aware scheduling: per-cloud block/rack labels, the pools that get TAS by default, the Topology
and ResourceFlavor objects against the v0.19.2 CRDs, and the config rules."""
from __future__ import annotations

import copy

import pytest
import yaml

from components.catalog import instance_types, lookup
from components.clouds.profiles import PROFILES
from components.config import validate
from components.config.parse import parse
from components.config.pools import default_topology
from components.scheduling import kueue, topology
from conftest import upstream
from gpu_platform.engine import plan_stack
from test_scheduling_config import problems
from test_scheduling_stacks import by_name, crd_errors, planned, stack_config

TOPOLOGY_CRD = "kueue/crds/kueue.x-k8s.io_topologies.yaml"
FLAVOR_CRD = "kueue/crds/kueue.x-k8s.io_resourceflavors.yaml"


def with_pools(stack: str, change) -> dict:
    pools = copy.deepcopy(stack_config(stack)["gpu-platform:gpuPools"])
    change(pools)
    return {"gpu-platform:gpuPools": pools}


def topology_cel(obj: dict) -> list[str]:
    """The Topology and TAS ResourceFlavor CEL rules of the CRDs, which a JSON schema cannot express."""
    spec, found = obj["spec"], []
    if obj["kind"] == "Topology":
        labels = [level["nodeLabel"] for level in spec["levels"]]
        if len(set(labels)) != len(labels):
            found.append("levels must be unique")
        if topology.HOSTNAME in labels and labels[-1] != topology.HOSTNAME:
            found.append("kubernetes.io/hostname only at the lowest level")
    if obj["kind"] == "ResourceFlavor" and "topologyName" in spec and not spec.get("nodeLabels"):
        found.append("at least one nodeLabel is required when topology is set")
    return found


def test_the_cel_checks_catch_what_they_describe():
    bad = {"kind": "Topology", "spec": {"levels": [{"nodeLabel": topology.HOSTNAME}, {"nodeLabel": "a"},
                                                   {"nodeLabel": "a"}]}}
    assert len(topology_cel(bad)) == 2
    assert topology_cel({"kind": "ResourceFlavor", "spec": {"topologyName": "t"}})


# --- which pools get TAS ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("cloud, instance, workload, expected", [
    ("aws", "p5.48xlarge", "training", True),
    ("aws", "p5en.48xlarge", "training", True),
    ("aws", "p6-b200.48xlarge", "training", True),
    ("aws", "g6e.12xlarge", "training", True),
    ("aws", "p5.48xlarge", "inference", False),  # one node serves; no gang to keep together
    ("aws", "g6.12xlarge", "training", False),  # no EC2 instance topology: no layer labels
    ("aws", "g5.48xlarge", "training", False),
    ("gcp", "a3-ultragpu-8g", "training", True),
    ("gcp", "a4-highgpu-8g", "training", True),
    ("gcp", "a3-highgpu-8g", "training", False),
    ("azure", "Standard_ND96isr_H100_v5", "training", False),  # AKS has no block labels
    ("oci", "BM.GPU.H100.8", "training", False),  # labels only in compute clusters, which node pools are not
])
def test_training_pools_on_labelled_types_get_tas_by_default(cloud, instance, workload, expected):
    assert default_topology(PROFILES[cloud], lookup(cloud, instance), workload) is expected


def test_every_cloud_states_its_levels_or_none():
    assert PROFILES["azure"].network_topology is None
    for name in ("aws", "gcp", "oci"):
        facts = PROFILES[name].network_topology
        assert len(facts.levels) == 3 and topology.HOSTNAME not in facts.levels
        # every instance pattern matches at least one catalog type of its cloud: no dead pattern
        assert any(facts.labels(t.name) for t in instance_types(name)), name


def test_aws_prod_puts_only_its_training_pool_on_the_network_topology():
    plan = planned("aws-prod", "kueue")
    topologies = by_name(plan, "Topology")
    assert list(topologies) == [topology.NETWORK]
    assert [lv["nodeLabel"] for lv in topologies[topology.NETWORK]["spec"]["levels"]] == [
        "topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"]
    flavors = {name: f["spec"] for name, f in by_name(plan, "ResourceFlavor").items()}
    train = next(p["name"] for p in stack_config("aws-prod")["gpu-platform:gpuPools"] if p["workload"] == "training")
    assert {n for n, f in flavors.items() if "topologyName" in f} == {train}
    assert flavors[train]["topologyName"] == topology.NETWORK


def test_opting_out_drops_the_topology_and_the_flavor_reference():
    plan = plan_stack("aws-prod", config_overrides=with_pools(
        "aws-prod", lambda pools: [p.update(topology=False) for p in pools]))
    assert by_name(plan, "Topology") == {}
    assert not any("topologyName" in f["spec"] for f in by_name(plan, "ResourceFlavor").values())


def test_opting_in_where_the_cloud_sets_no_labels_places_by_host_and_warns():
    overrides = with_pools("azure-prod", lambda pools: pools[0].update(topology=True))
    plan = plan_stack("azure-prod", config_overrides=overrides)
    topologies = by_name(plan, "Topology")
    assert list(topologies) == [topology.HOSTS]
    assert topologies[topology.HOSTS]["spec"]["levels"] == [{"nodeLabel": "kubernetes.io/hostname"}]
    pool = overrides["gpu-platform:gpuPools"][0]["name"]
    assert by_name(plan, "ResourceFlavor")[pool]["spec"]["topologyName"] == topology.HOSTS
    assert any("gpuPools[0].topology" in w and "by host" in w for w in plan.warnings)


def test_both_topologies_when_labelled_and_unlabelled_pools_opt_in():
    def change(pools):
        pools[2]["topology"] = True  # the g6 pool: no layer labels
    plan = plan_stack("aws-prod", config_overrides=with_pools("aws-prod", change))
    assert sorted(by_name(plan, "Topology")) == [topology.HOSTS, topology.NETWORK]


# --- CRD conformance --------------------------------------------------------------------------------------------

def tas_plans():
    return [planned("aws-prod", "kueue"),
            plan_stack("azure-prod", config_overrides=with_pools("azure-prod", lambda p: p[0].update(topology=True))),
            plan_stack("gcp-prod", config_overrides=with_pools("gcp-prod", lambda p: p[0].update(
                instanceType="a3-ultragpu-8g"))),
            plan_stack("oci-prod", config_overrides=with_pools("oci-prod", lambda p: p[0].update(topology=True)))]


def test_topologies_and_tas_flavors_validate_against_the_v0_19_2_crds():
    upstream(TOPOLOGY_CRD)
    seen = set()
    for plan in tas_plans():
        for name, obj in by_name(plan, "Topology").items():
            assert obj["apiVersion"] == kueue.API
            assert crd_errors(TOPOLOGY_CRD, "v1beta2", obj) == [], name
            assert topology_cel(obj) == [], name
            seen.add(tuple(lv["nodeLabel"] for lv in obj["spec"]["levels"]))
        for name, obj in by_name(plan, "ResourceFlavor").items():
            assert crd_errors(FLAVOR_CRD, "v1beta2", obj) == [], name
            assert topology_cel(obj) == [], name
    assert len(seen) == 4  # AWS, GKE and OKE levels, and host-only (AKS)


def test_the_strict_schema_rejects_a_misspelt_level():
    upstream(TOPOLOGY_CRD)
    bad = {"apiVersion": kueue.API, "kind": "Topology", "metadata": {"name": "x"},
           "spec": {"levels": [{"label": "kubernetes.io/hostname"}]}}
    assert crd_errors(TOPOLOGY_CRD, "v1beta2", bad)


def test_pinned_kueue_needs_no_feature_gate_for_tas():
    """TopologyAwareScheduling is beta and on by default since Kueue v0.14, so the pinned 0.19.2 needs no gate: the
    chart's featureGates stay empty and the manager config names none that could turn it off."""
    values = yaml.safe_load(upstream("kueue/values.yaml").read_text())
    assert values["controllerManager"]["featureGates"] == []
    assert tuple(int(x) for x in kueue.VERSION.split(".")[:2]) >= (0, 14)
    conf = kueue.manager_config(validate({**copy.deepcopy(BASE), "scheduler": {}}))
    assert "featureGates" not in conf


# --- config rules ----------------------------------------------------------------------------------------------

BASE = {
    "cloud": "aws", "environment": "development", "cluster": {"name": "ml", "region": "us-east-1"},
    "gpuPools": [{"name": "h100-train", "instanceType": "p5.48xlarge", "maxNodes": 4}],
    "teams": [{"name": "research", "quotas": {"h100-train": 16}}],
}


def test_topology_must_be_a_boolean():
    raw = copy.deepcopy(BASE)
    raw["gpuPools"][0]["topology"] = "yes"
    assert "true or false" in problems(raw)["gpuPools[0].topology"]


def test_explicit_topology_under_volcano_is_an_error_and_the_default_is_not():
    raw = copy.deepcopy(BASE)
    raw["scheduler"] = {"kind": "volcano"}
    assert validate(raw).gpu_pools[0].topology is True  # default on, unused by Volcano
    raw["gpuPools"][0]["topology"] = True
    message = problems(raw)["gpuPools[0].topology"]
    assert "Kueue feature" in message and "allowed: false, or scheduler.kind: kueue" in message


def test_unlabelled_opt_in_is_a_warning_not_an_error():
    raw = copy.deepcopy(BASE)
    raw["gpuPools"][0].update(instanceType="g6.12xlarge", topology=True)
    config, found = parse(raw)
    assert config is not None and config.gpu_pools[0].topology is True
    assert "by host" in {p.path: p.message for p in found.warnings}["gpuPools[0].topology"]


def test_opting_in_on_oke_warns_that_nodes_need_the_rdma_labels():
    plan = plan_stack("oci-prod", config_overrides=with_pools("oci-prod", lambda p: p[0].update(topology=True)))
    assert any("gpuPools[0].topology" in w and "compute cluster" in w and "admits no job" in w
               for w in plan.warnings)
