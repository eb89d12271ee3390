"""Kueue topology-aware scheduling: per-cloud block/rack labels, which Topology an opted-in pool gets, the Topology
and ResourceFlavor objects against the v0.19.2 CRDs and their CEL rules, and the config rules."""
from __future__ import annotations

import copy

import pytest
import yaml

from components.catalog import instance_types, lookup
from components.clouds import PROFILES
from components.config import validate
from components.config.errors import ConfigError
from components.config.parse import parse
from components.scheduling import topology
from components.scheduling.kueue import component as kueue
from gpu_platform.engine import plan_stack

from support.paths import upstream
from support.validation import problems
from support.stacks import by_name, crd_errors, planned, stack_config

TOPOLOGY_CRD = "kueue/crds/kueue.x-k8s.io_topologies.yaml"
FLAVOR_CRD = "kueue/crds/kueue.x-k8s.io_resourceflavors.yaml"
BASE = {
    "cloud": "aws", "environment": "development", "cluster": {"name": "ml", "region": "us-east-1"},
    "gpuPools": [{"name": "h100-train", "instanceType": "p5.48xlarge", "maxNodes": 4}],
    "teams": [{"name": "research", "quotas": {"h100-train": 16}}],
}


def with_pools(stack: str, change) -> dict:
    pools = copy.deepcopy(stack_config(stack)["gpu-platform:gpuPools"])
    change(pools)
    return {"gpu-platform:gpuPools": pools}


def opted_in(stack: str, *indices: int) -> dict:
    return with_pools(stack, lambda pools: [pools[i].update(topology=True) for i in indices])


def level_labels(plan, name: str) -> list[str]:
    return [lv["nodeLabel"] for lv in by_name(plan, "Topology")[name]["spec"]["levels"]]


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


# --- per-cloud facts and which Topology a pool gets ----------------------------------------------------------------

@pytest.mark.parametrize("cloud, instance, labelled", [
    ("aws", "p5.48xlarge", True),
    ("aws", "p5en.48xlarge", True),
    ("aws", "p6-b200.48xlarge", True),
    ("aws", "g6e.12xlarge", True),
    ("aws", "g6.12xlarge", False),  # no EC2 instance topology: no layer labels
    ("aws", "g5.48xlarge", False),
    ("gcp", "a3-ultragpu-8g", True),
    ("gcp", "a4-highgpu-8g", True),
    ("gcp", "a3-highgpu-8g", False),
    ("oci", "BM.GPU.H100.8", True),
    ("oci", "VM.GPU.A10.2", False),
])
def test_the_cloud_labels_exactly_the_documented_instance_types(cloud, instance, labelled):
    lookup(cloud, instance)  # a catalog type
    assert PROFILES[cloud].network_topology.labels(instance) is labelled


def test_every_cloud_states_its_levels_or_none():
    assert PROFILES["azure"].network_topology is None
    for name in ("aws", "gcp", "oci"):
        facts = PROFILES[name].network_topology
        assert len(facts.levels) == 3 and topology.HOSTNAME not in facts.levels
        assert any(facts.labels(t.name) for t in instance_types(name)), name  # no dead pattern


def test_topology_is_opt_in():
    """Off by default: in a ClusterQueue mixing TAS and other flavors, Kueue sends jobs without a topology annotation
    only to the others, so turning it on silently would move existing jobs off the pool."""
    for stack in ("aws-prod", "gcp-prod", "oci-prod", "azure-prod"):
        plan = planned(stack, "kueue")
        assert by_name(plan, "Topology") == {}
        assert not any("topologyName" in f["spec"] for f in by_name(plan, "ResourceFlavor").values())
    assert validate(copy.deepcopy(BASE)).gpu_pools[0].topology is False


def test_an_opted_in_labelled_pool_gets_the_network_topology():
    plan = plan_stack("aws-prod", config_overrides=opted_in("aws-prod", 0))
    assert list(by_name(plan, "Topology")) == [topology.NETWORK]
    assert level_labels(plan, topology.NETWORK) == [
        "topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"]
    flavors = {name: f["spec"] for name, f in by_name(plan, "ResourceFlavor").items()}
    assert {n for n, f in flavors.items() if "topologyName" in f} == {"h100-train"}
    assert flavors["h100-train"]["topologyName"] == topology.NETWORK


def p6_beside_p5() -> dict:
    """aws-prod with its first pool on p6-b200 and the second, on p4de, opted in too."""
    return with_pools("aws-prod", lambda pools: [pools[0].update(instanceType="p6-b200.48xlarge", topology=True),
                                                 pools[1].update(topology=True)])


def test_p6_b200_pools_get_their_fourth_network_layer():
    """EKS labels p6-b200 nodes with network-node-layer-4 too (their EC2 topology has four layers): Kueue can keep
    a job under one layer-4 node, while the three-layer types keep their own Topology, whose labels they all carry."""
    plan = plan_stack("aws-prod", config_overrides=p6_beside_p5())
    assert level_labels(plan, "gpu-network-4") == [
        "topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3", "topology.k8s.aws/network-node-layer-4", "kubernetes.io/hostname"]
    assert level_labels(plan, topology.NETWORK)[-2:] == ["topology.k8s.aws/network-node-layer-3",
                                                         "kubernetes.io/hostname"]
    flavors = {name: f["spec"] for name, f in by_name(plan, "ResourceFlavor").items()}
    assert {n: f.get("topologyName") for n, f in flavors.items() if "topologyName" in f} == {
        "h100-train": "gpu-network-4", "a100-infer": topology.NETWORK}


def test_a_team_mixing_tas_and_other_pools_is_warned_and_all_tas_is_not():
    plan = plan_stack("aws-prod", config_overrides=opted_in("aws-prod", 0))
    quotas = {t["name"]: t["quotas"] for t in stack_config("aws-prod")["gpu-platform:teams"]}
    mixed = [w for w in plan.warnings if ".quotas" in w and "mixes topology-aware pools" in w]
    assert mixed and len(mixed) == sum(1 for q in quotas.values() if "h100-train" in q and len(q) > 1)
    assert all("never run on the former" in w for w in mixed)
    everything = plan_stack("aws-prod", config_overrides=opted_in("aws-prod", 0, 1, 2))
    assert not any("mixes topology-aware pools" in w for w in everything.warnings)
    assert sorted(by_name(everything, "Topology")) == [topology.HOSTS, topology.NETWORK]


def test_opting_in_where_the_cloud_sets_no_labels_places_by_host_and_warns():
    overrides = opted_in("azure-prod", 0)
    plan = plan_stack("azure-prod", config_overrides=overrides)
    assert list(by_name(plan, "Topology")) == [topology.HOSTS]
    assert level_labels(plan, topology.HOSTS) == ["kubernetes.io/hostname"]
    pool = overrides["gpu-platform:gpuPools"][0]["name"]
    assert by_name(plan, "ResourceFlavor")[pool]["spec"]["topologyName"] == topology.HOSTS
    assert any("gpuPools[0].topology" in w and "by host" in w for w in plan.warnings)


def test_opting_in_a_bare_metal_oke_pool_is_refused_at_its_field():
    with pytest.raises(ConfigError, match=r"gpuPools\[0\]\.topology.*oci-hpc-oke node labeler.*allowed: false"):
        plan_stack("oci-prod", config_overrides=opted_in("oci-prod", 0))


def test_opting_in_an_oke_vm_pool_still_places_by_host():
    plan = plan_stack("oci-prod", config_overrides=opted_in("oci-prod", 2))
    assert list(by_name(plan, "Topology")) == [topology.HOSTS]
    assert any("gpuPools[2].topology" in w and "by host" in w for w in plan.warnings)


def test_oke_levels_are_exactly_the_labels_oracles_labeler_writes():
    """The refusal names the labels a user's own labeler install must write: the rdma.* levels oci-hpc-oke-utils 0.2.1
    writes, in the order of the Kueue Topology oci-hpc-oke ships."""
    written = yaml.safe_load(upstream("oci-hpc-oke/oci-hpc-oke-utils-labels.yaml").read_text())
    labels = {entry["label"] for entry in written["labeler_daemonset"]["labels"]}
    shipped = yaml.safe_load(upstream("oci-hpc-oke/kueue-topology.yaml").read_text())
    levels = [lv["nodeLabel"] for lv in shipped["spec"]["levels"] if lv["nodeLabel"] != topology.HOSTNAME]
    ours = PROFILES["oci"].network_topology.levels
    assert list(ours) == levels and set(ours) <= labels
    assert PROFILES["oci"].network_topology.writer


# --- CRD conformance --------------------------------------------------------------------------------------------

def tas_plans():
    return [plan_stack("aws-prod", config_overrides=opted_in("aws-prod", 0, 1, 2)),
            plan_stack("aws-prod", config_overrides=p6_beside_p5()),
            plan_stack("azure-prod", config_overrides=opted_in("azure-prod", 0)),
            # A3 Ultra has no GPUDirect sidecar to except: its team goes back to baseline.
            plan_stack("gcp-prod", config_overrides={**with_pools("gcp-prod", lambda p: p[0].update(
                instanceType="a3-ultragpu-8g", topology=True)), "gpu-platform:teams": [
                {k: v for k, v in t.items() if k != "podSecurity"} for t in stack_config("gcp-prod")["gpu-platform:teams"]]})]


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
    # EKS (three layers, and p6-b200's four), GKE levels, and host-only (AKS, and aws-prod's unlabelled pools)
    assert len(seen) == 4


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
    raw = copy.deepcopy(BASE)
    raw["gpuPools"][0]["topology"] = True
    assert "featureGates" not in kueue.manager_config(validate(raw))


# --- config rules ----------------------------------------------------------------------------------------------

def test_topology_must_be_a_boolean():
    raw = copy.deepcopy(BASE)
    raw["gpuPools"][0]["topology"] = "yes"
    assert "true or false" in problems(raw)["gpuPools[0].topology"]


def test_topology_under_volcano_is_an_error():
    raw = copy.deepcopy(BASE)
    raw["scheduler"] = {"kind": "volcano"}
    assert validate(raw).gpu_pools[0].topology is False
    raw["gpuPools"][0]["topology"] = True
    message = problems(raw)["gpuPools[0].topology"]
    assert "Kueue feature" in message and "allowed: false, or scheduler.kind: kueue" in message


def test_unlabelled_opt_in_is_a_warning_not_an_error():
    raw = copy.deepcopy(BASE)
    raw["gpuPools"][0].update(instanceType="g6.12xlarge", topology=True)
    config, found = parse(raw)
    assert config is not None and config.gpu_pools[0].topology is True
    assert "by host" in {p.path: p.message for p in found.warnings}["gpuPools[0].topology"]
