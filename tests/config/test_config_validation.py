"""Stack config validation: one changed field per case, each asserting the dotted path and the message."""
from __future__ import annotations

import pytest

from components.config import validate
from components.config.capacity import advertised_per_node, mig_strategy, quota_resources
from components.tenancy.compute_quota import compute_hard

from support.validation import problems, reported_at


def test_base_config_is_valid(raw):
    config = validate(raw)
    assert config.cloud == "aws" and config.production
    assert [p.name for p in config.gpu_pools] == ["h100-train", "a100-infer"]
    assert config.gpu_pools[0].driver == "managed"
    assert config.cluster.private_endpoint is True
    assert config.scheduler.kind == "kueue" and config.scheduler.gang.timeout_s == 600


def test_defaults_follow_environment(raw):
    raw["environment"] = "development"
    raw["cluster"]["authorizedNetworks"] = ["203.0.113.0/24"]  # a public endpoint lists who may reach it
    assert validate(raw).cluster.private_endpoint is False
    del raw["environment"]
    assert validate(raw).environment == "development"


@pytest.mark.parametrize("change, path, fragment", [
    (lambda r: r.pop("cloud"), "cloud", "is required"),
    (lambda r: r.update(cloud="ibm"), "cloud", "allowed: aws, azure, gcp, oci"),
    (lambda r: r.update(environment="prod"), "environment", "allowed: production, staging, development"),
    (lambda r: r.update(colour="blue"), "colour", "unknown key"),
    (lambda r: r.pop("cluster"), "cluster", "is required"),
    (lambda r: r["cluster"].update(name="ml.prod"), "cluster.name", "is not a EKS cluster name"),
    (lambda r: r["cluster"].update(name="a" * 101), "cluster.name", "1-100 letters"),
    (lambda r: r["cluster"].pop("region"), "cluster.region", "is required"),
    (lambda r: r["cluster"].update(kubernetesVersion="latest"), "cluster.kubernetesVersion", "Kubernetes version like"),
    (lambda r: r["cluster"].update(kubernetesVersion=1.33), "cluster.kubernetesVersion", "must be a string"),
    (lambda r: r["cluster"].update(azure={"resourceGroup": "rg"}), "cluster.azure", "only `cluster.aws`"),
    (lambda r: r["cluster"].update(aws={"vpcid": "vpc-1"}), "cluster.aws.vpcid", "allowed: vpcId"),
    (lambda r: r["cluster"].update(aws={"subnetIds": "subnet-1"}), "cluster.aws.subnetIds", "must be a list"),
    (lambda r: r["cluster"].update(systemPool={"minNodes": 3, "maxNodes": 2}), "cluster.systemPool.maxNodes", ">= minNodes"),
    (lambda r: r["cluster"].update(systemPool={"minNodes": 0}), "cluster.systemPool.minNodes", ">= 1"),
    (lambda r: r["cluster"].update(existingKubeconfig=["x"]), "cluster.existingKubeconfig", "kubeconfig string"),
    (lambda r: r.update(gpuPools=[]), "gpuPools", "at least one"),
    (lambda r: r.update(gpuPools={"name": "x"}), "gpuPools", "must be a list"),
    (lambda r: r["gpuPools"][0].update(instanceType="p5.48xlarg"), "gpuPools[0].instanceType", "close matches: p5.48xlarge"),
    (lambda r: r["gpuPools"][0].update(instanceType="a3-highgpu-8g"), "gpuPools[0].instanceType",
     "'a3-highgpu-8g' is an instance type of gcp (8x H100-80GB), not of aws; the same GPUs on aws: p5.48xlarge"),
    (lambda r: r["gpuPools"][0].pop("instanceType"), "gpuPools[0].instanceType", "is required"),
    (lambda r: r["gpuPools"][0].pop("maxNodes"), "gpuPools[0].maxNodes", "is required"),
    (lambda r: r["gpuPools"][0].update(minNodes=5), "gpuPools[0].maxNodes", ">= minNodes (5)"),
    (lambda r: r["gpuPools"][0].update(minNodes=-1), "gpuPools[0].minNodes", ">= 0"),
    (lambda r: r["gpuPools"][0].update(maxNodes="four"), "gpuPools[0].maxNodes", "whole number"),
    (lambda r: r["gpuPools"][0].update(maxNodes=True), "gpuPools[0].maxNodes", "whole number"),
    (lambda r: r["gpuPools"][0].update(name="H100"), "gpuPools[0].name", "DNS-1123"),
    (lambda r: r["gpuPools"][1].update(name="h100-train"), "gpuPools[1].name", "duplicate pool name"),
    (lambda r: r["gpuPools"][0].update(capacityType="cheap"), "gpuPools[0].capacityType", "on-demand, spot, reserved"),
    (lambda r: r["gpuPools"][0].update(workload="batch"), "gpuPools[0].workload", "training, inference, interactive"),
    (lambda r: r["gpuPools"][0].update(driver="operator"), "gpuPools[0].driver", "gpu-operator#686"),
    (lambda r: r["gpuPools"][0].update(driver="nvidia"), "gpuPools[0].driver", "allowed: managed, operator"),
    (lambda r: r["gpuPools"][0].update(labels={"bad key!": "x"}), "gpuPools[0].labels.bad key!", "not a valid Kubernetes label"),
    (lambda r: r["gpuPools"][0].update(labels=["a"]), "gpuPools[0].labels", "mapping of strings"),
    (lambda r: r["gpuPools"][0].update(taints=["dedicated"]), "gpuPools[0].taints[0]", "key=value:Effect"),
    (lambda r: r["gpuPools"][0].update(taints=[{"key": "a", "effect": "Never"}]), "gpuPools[0].taints[0].effect",
     "NoSchedule, PreferNoSchedule, NoExecute"),
    (lambda r: r["gpuPools"][0].update(foo=1), "gpuPools[0].foo", "unknown key"),
    (lambda r: r["gpuPools"][0].update(sharing={"mode": "vgpu"}), "gpuPools[0].sharing.mode", "none, mig, mps, time-slicing"),
    (lambda r: r["gpuPools"][0].update(sharing={"mode": "none", "replicas": 4}), "gpuPools[0].sharing.replicas",
     "only applies with mode: mps or time-slicing"),
    (lambda r: r["gpuPools"][0].update(sharing={"mode": "time-slicing"}), "gpuPools[0].sharing.replicas", "is required"),
    (lambda r: r["gpuPools"][0].update(sharing={"mode": "mps", "replicas": 1}), "gpuPools[0].sharing.replicas", ">= 2"),
    (lambda r: r["gpuPools"][0].update(sharing={"mode": "mps", "replicas": 4, "migProfile": "all-1g.10gb"}),
     "gpuPools[0].sharing.migProfile", "MPS does not work on MIG devices"),
    (lambda r: r["gpuPools"][0].update(sharing={"mode": "mig"}), "gpuPools[0].sharing.migProfile", "is required"),
    (lambda r: r["gpuPools"][0].update(sharing={"mode": "mig", "migProfile": "all-1g.5gb"}),
     "gpuPools[0].sharing.migProfile", "not a MIG layout of H100-80GB"),
    (lambda r: r["gpuPools"][0].update(sharing={"mode": "mig", "migProfile": {"3g.40gb": 2, "2g.20gb": 1}}),
     "gpuPools[0].sharing.migProfile", "uses 8 compute slices"),
    (lambda r: r["gpuPools"][0].update(sharing={"mode": "mig", "migProfile": {"1g.10gb": 8}}),
     "gpuPools[0].sharing.migProfile.1g.10gb", "count must be 1..7"),
    (lambda r: r["gpuPools"][0].update(sharing={"mode": "mig", "migProfile": {"9g.1tb": 1}}),
     "gpuPools[0].sharing.migProfile.9g.1tb", "not a MIG profile of H100-80GB"),
    (lambda r: r["gpuPools"][0].update(instanceType="g6.12xlarge", sharing={"mode": "mig", "migProfile": "all-1g.10gb"}),
     "gpuPools[0].sharing.mode", "L4 has no MIG"),
    (lambda r: r.update(teams=[]), "teams", "at least one"),
    (lambda r: r["teams"][0].update(name="kube-system"), "teams[0].name", "reserved namespace"),
    (lambda r: r["teams"][1].update(name="research"), "teams[1].name", "duplicate team name"),
    (lambda r: r["teams"][0].update(quotas={}), "teams[0].quotas", "must map GPU pool names"),
    (lambda r: r["teams"][0].update(quotas={"h200": 8}), "teams[0].quotas.h200", "unknown GPU pool 'h200'"),
    (lambda r: r["teams"][0].update(quotas={"h100-train": 33}), "teams[0].quotas.h100-train", "exceeds what pool"),
    (lambda r: r["teams"][0].update(quotas={"h100-train": -1}), "teams[0].quotas.h100-train", ">= 0"),
    (lambda r: r["teams"][0].update(limits={"cpu": "lots"}), "teams[0].limits.cpu", "not a Kubernetes quantity"),
    (lambda r: r["teams"][0].update(limits={"memory": "0Gi"}), "teams[0].limits.memory", "must be above 0"),
    (lambda r: r["teams"][0].update(limits={"pods": 0}), "teams[0].limits.pods", ">= 1"),
    (lambda r: r["teams"][0].update(limits={"gpus": 8}), "teams[0].limits.gpus", "unknown key"),
    (lambda r: r["teams"][0].update(priority="urgent"), "teams[0].priority", "critical, high, normal, low"),
    (lambda r: r["teams"][0].update(groups="admins"), "teams[0].groups", "list of strings"),
    (lambda r: r.update(scheduler={"kind": "yunikorn"}), "scheduler.kind", "allowed: kueue, volcano"),
    (lambda r: r.update(scheduler={"gang": {"timeout": "ten minutes"}}), "scheduler.gang.timeout", "duration like"),
    (lambda r: r.update(scheduler={"gang": {"enabled": "yes"}}), "scheduler.gang.enabled", "true or false"),
    (lambda r: r.update(observability={"slo": {"minUtilization": 1.5}}), "observability.slo.minUtilization", "from 0.0 to 1.0"),
    (lambda r: r.update(observability={"slo": {"idleMinutes": 0}}), "observability.slo.idleMinutes", ">= 1"),
    (lambda r: r.update(observability={"prometheus": {"namespace": "Mon"}}), "observability.prometheus.namespace", "namespace name"),
])
def test_each_bad_field_is_reported_at_its_path(raw, change, path, fragment):
    change(raw)
    assert fragment in reported_at(raw, path)


def test_every_problem_is_reported_at_once(raw):
    raw["environment"] = "prod"
    raw["gpuPools"][0]["instanceType"] = "p9.huge"
    raw["gpuPools"][1]["sharing"] = {"mode": "mig", "migProfile": "all-3g.99gb"}
    raw["teams"][0]["priority"] = "urgent"
    found = problems(raw)
    assert {"environment", "gpuPools[0].instanceType", "gpuPools[1].sharing.migProfile", "teams[0].priority"} <= set(found)


def test_quota_on_an_invalid_pool_reports_only_the_pool(raw):
    raw["gpuPools"][0]["instanceType"] = "p9.huge"
    found = problems(raw)
    assert "teams[0].quotas.h100-train" not in found


def test_aks_derived_pool_names_must_not_collide(raw):
    raw.update(cloud="azure", cluster={"name": "aks", "region": "eastus2"})
    raw["gpuPools"] = [{"name": "h100-train", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2},
                       {"name": "h100train", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2}]
    raw["teams"] = [{"name": "research", "quotas": {"h100-train": 8}}]
    found = problems(raw)
    assert "both become AKS pool name 'h100train'" in found["gpuPools[1].name"]


def test_aks_pool_name_must_start_with_a_letter(raw):
    raw.update(cloud="azure", cluster={"name": "aks", "region": "eastus2"})
    raw["gpuPools"] = [{"name": "4090-pool", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2}]
    raw["teams"] = [{"name": "research", "quotas": {"4090-pool": 8}}]
    assert "must match" in problems(raw)["gpuPools[0].name"]


def test_required_cloud_extras(raw):
    raw.update(cloud="gcp", cluster={"name": "gke", "region": "us-central1"})
    raw["gpuPools"] = [{"name": "l4", "instanceType": "g2-standard-24", "maxNodes": 2}]
    raw["teams"] = [{"name": "research", "quotas": {"l4": 4}}]
    assert "is required on gcp" in problems(raw)["cluster.gcp.project"]


def test_taints_accept_string_and_mapping(raw):
    raw["gpuPools"][0]["taints"] = ["dedicated=ml:NoSchedule", {"key": "team", "value": "research", "effect": "NoExecute"}]
    pool = validate(raw).gpu_pools[0]
    assert [str(t) for t in pool.all_taints] == ["nvidia.com/gpu=present:NoSchedule", "dedicated=ml:NoSchedule",
                                                 "team=research:NoExecute"]


def test_spot_pool_with_warm_nodes_in_production_warns(raw):
    raw["gpuPools"][0].update(capacityType="spot", minNodes=1)
    config = validate(raw)
    assert any("gpuPools[0].minNodes" in w and "spot" in w for w in config.warnings)


def test_malformed_exemptions_are_kept_for_the_policy_pack(raw):
    raw["policy"] = {"exemptions": [{"rule": "GPU002", "resource": "a100-*", "reason": "x" * 25, "expires": "2027-03-31"},
                                    {"rule": "GPU002", "expires": "someday"}]}
    policy = validate(raw).policy
    assert [e.rule for e in policy.exemptions] == ["GPU002"]
    assert {p.path for p in policy.malformed} == {"policy.exemptions[1].resource", "policy.exemptions[1].reason",
                                                  "policy.exemptions[1].expires"}


def test_advertised_units_follow_sharing_mode(raw):
    raw["gpuPools"].append({"name": "l4", "instanceType": "g6.12xlarge", "maxNodes": 2,
                            "sharing": {"mode": "time-slicing", "replicas": 4}})
    config = validate(raw)
    strategy = mig_strategy(config.gpu_pools)
    assert strategy == "single"
    h100, a100, l4 = config.gpu_pools
    assert advertised_per_node(h100.instance, h100.sharing, strategy) == {"nvidia.com/gpu": 8}
    assert advertised_per_node(a100.instance, a100.sharing, strategy) == {"nvidia.com/gpu": 56}
    assert advertised_per_node(l4.instance, l4.sharing, strategy) == {"nvidia.com/gpu": 16}


def test_mixed_mig_layout_counts_quota_in_gpus_worth(raw):
    raw["gpuPools"][1]["sharing"] = {"mode": "mig", "migProfile": "all-balanced"}
    raw["teams"][1]["quotas"] = {"a100-infer": 4}
    config = validate(raw)
    assert mig_strategy(config.gpu_pools) == "mixed"
    pool = config.gpu_pools[1]
    assert advertised_per_node(pool.instance, pool.sharing, "mixed") == {
        "nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8}
    assert quota_resources(pool, 4, "mixed") == {"nvidia.com/mig-1g.10gb": 8, "nvidia.com/mig-2g.20gb": 4,
                                                 "nvidia.com/mig-3g.40gb": 4}


def test_team_limits_set_the_compute_quota_and_default_to_the_teams_pools(raw):
    config = validate(raw)
    team = config.teams[0]
    pools = [p for p in config.gpu_pools if p.name in team.quotas]
    derived = compute_hard(config, team)
    assert derived["requests.cpu"] == str(4 + sum(p.max_nodes * p.instance.vcpus for p in pools))
    raw["teams"][0]["limits"] = {"cpu": "500m", "memory": "8Gi", "pods": 20}
    config = validate(raw)
    assert compute_hard(config, config.teams[0]) == {"requests.cpu": "500m", "requests.memory": "8Gi", "pods": "20"}
