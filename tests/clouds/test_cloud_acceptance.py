"""Setups every cloud accepts are accepted here too: regions, instance types, names, sizes and versions that the
platform once refused although the cloud takes them (issue 25, "Refuse only what the cloud refuses")."""
from __future__ import annotations

import copy

import pytest

from components.config.parse import parse
from gpu_platform.engine import plan_stack

GCP = {
    "cloud": "gcp", "environment": "development",
    "cluster": {"name": "ml", "region": "us-central1", "authorizedNetworks": ["203.0.113.0/24"],
                "gcp": {"project": "acme", "zones": ["us-central1-a"]}},
    "gpuPools": [{"name": "l4", "instanceType": "g2-standard-24", "maxNodes": 2}],
    "teams": [{"name": "research", "quotas": {"l4": 4}}],  # all of the pool: no unreachable-capacity warning
}
AZURE = {
    "cloud": "azure", "environment": "development",
    "cluster": {"name": "ml", "region": "eastus2", "authorizedNetworks": ["203.0.113.0/24"]},
    "gpuPools": [{"name": "a10", "instanceType": "Standard_NV36ads_A10_v5", "maxNodes": 2}],
    "teams": [{"name": "research", "quotas": {"a10": 2}}],
}
OCI = {
    "cloud": "oci", "environment": "development",
    "cluster": {"name": "ml", "region": "us-ashburn-1", "authorizedNetworks": ["203.0.113.0/24"],
                "oci": {"compartmentId": "ocid1.compartment.oc1..a", "gpuImageId": "ocid1.image.oc1..g",
                        "imageId": "ocid1.image.oc1..i"}},
    "gpuPools": [{"name": "a10", "instanceType": "VM.GPU.A10.1", "maxNodes": 2}],
    "teams": [{"name": "research", "quotas": {"a10": 2}}],
}


def base(cloud: str, raw: dict) -> dict:
    return copy.deepcopy({"aws": raw, "gcp": GCP, "azure": AZURE, "oci": OCI}[cloud])


def found(raw: dict) -> tuple[dict[str, str], dict[str, str]]:
    """(errors, warnings) by dotted path."""
    _, problems = parse(raw)
    return ({p.path: p.message for p in problems.errors}, {p.path: p.message for p in problems.warnings})


def accepted_or_refused_at(raw: dict, path: str, fragment: str | None) -> None:
    """No error at all when `fragment` is None, else an error at `path` saying `fragment`."""
    errors = found(raw)[0]
    if fragment is None:
        assert errors == {}
    else:
        assert fragment in errors[path]


def test_the_bases_are_valid(raw):
    for cloud in ("aws", "gcp", "azure", "oci"):
        assert found(base(cloud, raw))[0] == {}, cloud


# T4, V100 and B300 instance types ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cloud, instance_type", [
    ("aws", "g4dn.xlarge"), ("aws", "g4dn.12xlarge"), ("aws", "p3.2xlarge"), ("aws", "p3.16xlarge"),
    ("aws", "p3dn.24xlarge"), ("aws", "p6-b300.48xlarge"),
    ("azure", "Standard_NC4as_T4_v3"), ("azure", "Standard_NC64as_T4_v3"),
    ("oci", "VM.GPU3.1"), ("oci", "BM.GPU3.8"),
    ("gcp", "n1-standard-8+nvidia-tesla-t4x1"), ("gcp", "n1-standard-64+nvidia-tesla-v100x8"),
])
def test_t4_v100_and_b300_pools_validate(raw, cloud, instance_type):
    config = base(cloud, raw)
    pool = config["gpuPools"][0]
    pool.update(instanceType=instance_type, maxNodes=1)
    pool.pop("sharing", None)
    config["teams"][0]["quotas"] = {pool["name"]: 1}
    assert found(config)[0] == {}


@pytest.mark.parametrize("instance_type", ["g4dn.xlarge", "p3.2xlarge", "VM.GPU3.1"])
def test_t4_and_v100_refuse_mig(raw, instance_type):
    cloud = "oci" if instance_type.startswith("VM.") else "aws"
    config = base(cloud, raw)
    config["gpuPools"][0].update(instanceType=instance_type, sharing={"mode": "mig", "migProfile": "all-1g.10gb"})
    assert "MIG" in found(config)[0]["gpuPools[0].sharing.mode"]


def test_b300_takes_its_mig_layouts(raw):
    raw["gpuPools"][1].update(instanceType="p6-b300.48xlarge", sharing={"mode": "mig", "migProfile": "all-balanced"})
    raw["teams"][1]["quotas"] = {"a100-infer": 16}
    assert found(raw)[0] == {}


def test_p6_b300_efa_skips_its_ena_only_primary_card():
    plan = plan_stack("aws-prod", config_overrides={
        "gpu-platform:gpuPools": [{"name": "b300", "instanceType": "p6-b300.48xlarge", "maxNodes": 2,
                                   "fabric": "efa", "workload": "training"},
                                  {"name": "v100", "instanceType": "p3dn.24xlarge", "maxNodes": 2,
                                   "workload": "training"}],
        "gpu-platform:teams": [{"name": "lab", "quotas": {"b300": 16, "v100": 16}}]})
    templates = {r.name: r.inputs for r in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate")}
    b300 = next(t for name, t in templates.items() if "b300" in name)["networkInterfaces"]
    assert [(i["networkCardIndex"], i.get("interfaceType")) for i in b300] == [
        (0, None), *((card, "efa-only") for card in range(1, 17))]
    # fabric: auto gives p3dn its one EFA interface, as on every P-family type with EFA.
    v100 = next(t for name, t in templates.items() if "v100" in name)["networkInterfaces"]
    assert [(i["networkCardIndex"], i["interfaceType"]) for i in v100] == [(0, "efa")]


def test_gke_n1_pools_attach_their_accelerator():
    plan = plan_stack("gcp-dev", config_overrides={
        "gpu-platform:gpuPools": [{"name": "t4", "instanceType": "n1-standard-16+nvidia-tesla-t4x2", "maxNodes": 2}],
        "gpu-platform:teams": [{"name": "alpha", "quotas": {"t4": 4}}, {"name": "beta", "quotas": {"t4": 4}}]})
    (pool,) = [r.inputs for r in plan.of_type("gcp:container/nodePool:NodePool") if r.inputs["name"] != "system"]
    assert pool["nodeConfig"]["machineType"] == "n1-standard-16"
    (accelerator,) = pool["nodeConfig"]["guestAccelerators"]
    assert (accelerator["type"], accelerator["count"]) == ("nvidia-tesla-t4", 2)


# Regions: EKS in China and GovCloud, OKE in government and dedicated regions ------------------------------------

@pytest.mark.parametrize("cloud, region", [
    ("aws", "cn-north-1"), ("aws", "cn-northwest-1"), ("aws", "us-gov-west-1"), ("aws", "us-gov-east-1"),
    ("oci", "us-langley-1"), ("oci", "us-luke-1"), ("oci", "us-gov-ashburn-1"), ("oci", "us-gov-phoenix-1"),
    ("oci", "uk-gov-london-1"),
])
def test_partition_and_government_regions_are_accepted(raw, cloud, region):
    config = base(cloud, raw)
    config["cluster"]["region"] = region
    errors, warnings = found(config)
    assert errors == {} and "cluster.region" not in warnings


@pytest.mark.parametrize("cloud, region", [
    ("oci", "us-gov-west-1"), ("oci", "us-east-1"), ("oci", "us-central1"), ("aws", "us-gov-ashburn-1"),
    ("aws", "cn-beijing-1"),
])
def test_another_clouds_region_is_still_refused(raw, cloud, region):
    config = base(cloud, raw)
    config["cluster"]["region"] = region
    assert "is it from another cloud?" in found(config)[0]["cluster.region"]


def _iam(plan):
    trust = {r.name: r.inputs["assumeRolePolicy"] for r in plan.of_type("aws:iam/role:Role")}
    policies = {r.inputs["policyArn"] for r in plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")}
    return trust, policies


@pytest.mark.parametrize("region, partition, ec2", [
    ("cn-north-1", "aws-cn", "ec2.amazonaws.com.cn"),
    ("us-gov-west-1", "aws-us-gov", "ec2.amazonaws.com"),
])
def test_arns_follow_the_regions_partition(region, partition, ec2):
    plan = plan_stack("aws-dev", config_overrides={"gpu-platform:cluster": {
        "name": "ml-dev", "region": region, "authorizedNetworks": ["203.0.113.0/24"]}})
    trust, policies = _iam(plan)
    assert policies and all(arn.startswith(f"arn:{partition}:iam::aws:policy/") for arn in policies), policies
    assert f'"Service": "{ec2}"' in trust["ml-dev-node"]
    assert '"Service": "eks.amazonaws.com"' in trust["ml-dev-cluster"]
    assert {r.inputs["region"] for r in plan.of_type("pulumi:providers:aws")} == {region}


# GKE's node limit is per zone ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("zones, max_nodes, error", [
    (["us-central1-a", "us-central1-b", "us-central1-c"], 3000, None),
    (["us-central1-a", "us-central1-b", "us-central1-c"], 3001, "must be <= 3000 (GKE node pool limit, 1000 per zone "
                                                               "in 3 zones)"),
    (["us-central1-a"], 1001, "must be <= 1000 (GKE node pool limit)"),
])
def test_gke_pools_hold_a_thousand_nodes_per_zone(raw, zones, max_nodes, error):
    config = base("gcp", raw)
    config["cluster"]["gcp"]["zones"] = zones
    config["gpuPools"][0]["maxNodes"] = max_nodes
    config["cluster"]["systemPool"] = {"maxNodes": max_nodes}
    errors = found(config)[0]
    if error is None:
        assert errors == {}
    else:
        assert error in errors["gpuPools[0].maxNodes"] and error in errors["cluster.systemPool.maxNodes"]


# Cluster names: each cloud's own rule ------------------------------------------------------------------------------

@pytest.mark.parametrize("cloud, name, fragment", [
    ("aws", "ML_Prod", None), ("aws", "1" + "a" * 99, None), ("aws", "_ml", "EKS cluster names are 1-100"),
    ("aws", "a" * 101, "got 101 characters"),
    ("gcp", "ml-prod", None), ("gcp", "ML_Prod", "GKE cluster names start with a letter"),
    ("gcp", "a" * 41, "1-40 lowercase"), ("gcp", "1ml", "start with a letter"),
    ("azure", "ml-prod", None), ("azure", "ml_prod", "is not a AKS cluster name"),
    ("oci", "ml-prod", None),
])
def test_cluster_names_follow_their_clouds_rule(raw, cloud, name, fragment):
    config = base(cloud, raw)
    config["cluster"]["name"] = name
    accepted_or_refused_at(config, "cluster.name", fragment)


# AKS constrained-vCPU sizes -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("size, fragment", [
    ("Standard_E16-8s_v5", None), ("Standard_DS13-2_v2", None), ("Standard_M128-64ms", None),
    ("Standard_D8s_v5", None), ("Standard_ND96isr_H100_v5", "is a GPU instance type"),
    ("Standard_E16--8s_v5", "is not a AKS instance type"), ("m6i.2xlarge", "is not a AKS instance type"),
])
def test_aks_system_pool_takes_constrained_vcpu_sizes(raw, size, fragment):
    config = base("azure", raw)
    config["cluster"]["systemPool"] = {"instanceType": size}
    accepted_or_refused_at(config, "cluster.systemPool.instanceType", fragment)


# Tables that go stale: regions and Kubernetes versions --------------------------------------------------------------

@pytest.mark.parametrize("cloud, region", [
    ("aws", "ap-southeast-9"), ("gcp", "europe-west99"), ("azure", "atlantiscentral"), ("oci", "eu-dcc-milan-1"),
])
def test_an_unknown_well_formed_region_is_a_warning_naming_the_table(raw, cloud, region):
    config = base(cloud, raw)
    config["cluster"]["region"] = region
    if cloud == "gcp":
        config["cluster"]["gcp"]["zones"] = [f"{region}-a"]
    errors, warnings = found(config)
    assert errors == {}
    assert "region table (CloudProfile.regions, as of 2026-12-03)" in warnings["cluster.region"]


@pytest.mark.parametrize("cloud, version", [("aws", "1.37"), ("gcp", "1.37"), ("azure", "1.38.1"), ("oci", "1.37.1")])
def test_a_newer_kubernetes_version_is_a_warning_naming_the_table(raw, cloud, version):
    config = base(cloud, raw)
    config["cluster"]["kubernetesVersion"] = version
    errors, warnings = found(config)
    assert errors == {}
    assert "version table" in warnings["cluster.kubernetesVersion"]
    assert "(CloudProfile.kubernetes_versions, as of 2026-12-03)" in warnings["cluster.kubernetesVersion"]


@pytest.mark.parametrize("cloud, version, fragment", [
    ("aws", "1.35.2", "it takes a minor version like \"1.35\""),
    ("aws", "1.3", "like \"1.35\" or \"1.35.2\""),
    ("gcp", "v1.35", "like \"1.35\" or \"1.35.2\""),
    ("gcp", "1.30", "is not a version GKE offers here"),
    ("oci", "1.37", "give the full version, e.g. \"1.37.1\""),
])
def test_malformed_or_ended_versions_are_still_refused(raw, cloud, version, fragment):
    config = base(cloud, raw)
    config["cluster"]["kubernetesVersion"] = version
    assert fragment in found(config)[0]["cluster.kubernetesVersion"]


@pytest.mark.parametrize("cloud, version", [("gcp", "1.35.2"), ("azure", "1.36.3"), ("oci", "1.35.4")])
def test_patch_versions_where_the_api_takes_them(raw, cloud, version):
    config = base(cloud, raw)
    config["cluster"]["kubernetesVersion"] = version
    assert found(config) == ({}, {})


def test_a_patch_version_reaches_the_api_and_minor_keyed_settings_use_its_minor():
    plan = plan_stack("gcp-dev", config_overrides={"gpu-platform:cluster": {
        "name": "ml-dev-gke", "region": "europe-west4", "kubernetesVersion": "1.36.2",
        "authorizedNetworks": ["203.0.113.0/24"], "gcp": {"project": "acme-ml-dev", "zones": ["europe-west4-a"]}}})
    (cluster,) = plan.of_type("gcp:container/cluster:Cluster")
    assert cluster.inputs["minMasterVersion"] == "1.36.2"
    labels = [r.inputs["metadata"].get("labels", {}) for r in plan.of_type("kubernetes:core/v1:Namespace")]
    versions = {v for ls in labels for k, v in ls.items() if k.endswith("-version")}
    assert versions == {"v1.36"}


def test_oke_gets_the_full_version_and_a_newer_minor_keeps_a_pinned_autoscaler():
    plan = plan_stack("oci-prod", config_overrides={"gpu-platform:cluster": {
        **_stack_cluster("oci-prod"), "kubernetesVersion": "1.37.2"}})
    (cluster,) = plan.of_type("oci:ContainerEngine/cluster:Cluster")
    assert cluster.inputs["kubernetesVersion"] == "v1.37.2"
    (release,) = [r for r in plan.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "cluster-autoscaler"]
    assert release.inputs["values"]["image"]["tag"] == "v1.36.1"


def _stack_cluster(stack: str) -> dict:
    import yaml

    from gpu_platform.engine.plan import PROJECT_ROOT
    return yaml.safe_load((PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]["gpu-platform:cluster"]
