"""Configs the clouds or Kubernetes would refuse (or silently mishandle) are refused here, each at its own path."""
from __future__ import annotations

import copy
from datetime import date, timedelta

import pytest

from components.catalog import gpu_model
from components.catalog.placement import placement_problem
from components.config import ConfigError, validate
from components.config.parse import parse

GCP = {
    "cloud": "gcp", "environment": "development",
    "cluster": {"name": "ml", "region": "us-central1", "gcp": {"project": "acme", "zones": ["us-central1-a"]}},
    "gpuPools": [{"name": "l4", "instanceType": "g2-standard-24", "maxNodes": 2}],
    "teams": [{"name": "research", "quotas": {"l4": 2}}],
}
AZURE = {
    "cloud": "azure", "environment": "development", "cluster": {"name": "ml", "region": "eastus2"},
    "gpuPools": [{"name": "a10", "instanceType": "Standard_NV36ads_A10_v5", "maxNodes": 2}],
    "teams": [{"name": "research", "quotas": {"a10": 2}, "groups": ["00000000-0000-0000-0000-0000000000b2"]}],
}


def problems(raw: dict) -> dict[str, str]:
    _, found = parse(raw)
    return {p.path: p.message for p in found.errors}


def warnings(raw: dict) -> dict[str, str]:
    _, found = parse(raw)
    return {p.path: p.message for p in found.warnings}


def test_the_bases_are_valid(raw):
    for base in (raw, GCP, AZURE):
        assert problems(base) == {}


@pytest.mark.parametrize("path, value, fragment", [
    ("gpuPools.0.instanceType", "", "must not be empty"),
    ("gpuPools.0.instanceType", " ", "must not be empty"),
    ("cluster.region", "", "must not be empty"),
    ("cluster.systemPool", {"instanceType": ""}, None),
    ("cluster.name", "", "must not be empty"),
    ("teams.0.groups", [""], None),
])
def test_blank_values_are_errors_not_silently_unset(raw, path, value, fragment):
    _set(raw, path, value)
    found = problems(raw)
    assert found, "a blank value was accepted"
    if fragment:
        assert fragment in found[_dotted(path)]


def test_an_empty_instance_type_no_longer_drops_its_pool_and_quotas(raw):
    raw["gpuPools"][1]["instanceType"] = ""
    with pytest.raises(ConfigError) as err:
        validate(raw)
    assert "gpuPools[1].instanceType: must not be empty" in str(err.value)


def test_blank_gcp_project_is_an_error():
    raw = copy.deepcopy(GCP)
    raw["cluster"]["gcp"]["project"] = " "
    assert "cluster.gcp.project" in problems(raw)


@pytest.mark.parametrize("base, path, value, fragment", [
    ("gcp", "cluster.region", "us-east-1", "is not a GKE region (like us-central1); is it from another cloud?"),
    ("gcp", "cluster.systemPool", {"instanceType": "m6i.2xlarge"}, None),
    ("aws", "cluster.region", "us-central1", "is not a EKS region"),
    ("aws", "cluster.region", "us-ashburn-1", "is not a EKS region"),
    ("azure", "cluster.region", "us-east-1", "is not a AKS region"),
])
def test_region_and_instance_type_belong_to_the_stacks_cloud(raw, base, path, value, fragment):
    config = {"aws": raw, "gcp": copy.deepcopy(GCP), "azure": copy.deepcopy(AZURE)}[base]
    _set(config, path, value)
    found = problems(config)
    assert found
    if fragment:
        assert fragment in found[path]
    else:
        assert "is not a GKE instance type" in found["cluster.systemPool.instanceType"]


def test_a_gpu_type_is_not_a_system_pool(raw):
    raw["cluster"]["systemPool"] = {"instanceType": "p5.48xlarge"}
    assert "is a GPU instance type" in problems(raw)["cluster.systemPool.instanceType"]


@pytest.mark.parametrize("path, value, fragment", [
    ("teams.0.name", "t" * 64, "at most 63 characters"),
    ("gpuPools.0.name", "p" * 64, "at most 63 characters"),
    ("gpuPools.0.labels", {"team": "v" * 64}, "at most 63 characters"),
    ("gpuPools.0.maxNodes", 451, "must be <= 450 (EKS node pool limit)"),
    ("gpuPools.0.maxNodes", 10**30, "must be <= 450 (EKS node pool limit); got about 10^30"),
    ("cluster.systemPool", {"maxNodes": 5000}, None),
    ("scheduler", {"gang": {"timeout": "10000h"}}, None),
    ("scheduler", {"gang": {"timeout": 10**12}}, None),
    ("teams.0.borrowingLimit", 10**9, "must be <= 1000000"),
    ("observability", {"slo": {"idleMinutes": 10**6}}, None),
    ("observability", {"reclaim": {"schedule": "99 99 99 99 99"}}, None),
    ("observability", {"reclaim": {"schedule": "*/10 * * * MON-XYZ"}}, None),
    ("observability", {"reclaim": {"schedule": "TZ=UTC */10 * * * *"}}, None),
    ("observability", {"prometheus": {"install": False, "url": "http://prom:99999"}}, None),
    ("observability", {"prometheus": {"install": False, "url": "http://bad host/"}}, None),
    ("observability", {"prometheus": {"releaseLabel": "x" * 64}}, None),
    ("cluster.aws", {"capacityBlocks": {"h100-train": {"reservationId": "cr-1", "availabilityZone": "eu-west-1a"}}},
     None),
])
def test_limits_the_clouds_and_kubernetes_enforce(raw, path, value, fragment):
    _set(raw, path, value)
    found = problems(raw)
    assert found, f"{path}={value!r:.60} was accepted"
    if fragment:
        assert any(at.startswith(_dotted(path)) and fragment in m for at, m in found.items()), found


def test_valid_cron_schedules_still_pass(raw):
    for schedule in ("*/10 * * * *", "0 3 * * MON-FRI", "15,45 0-6/2 1 JAN,JUL 0", "@hourly"):
        raw["observability"] = {"reclaim": {"schedule": schedule}}
        assert problems(raw) == {}, schedule


def test_gke_cluster_names_start_with_a_letter_and_zones_lie_in_the_region():
    raw = copy.deepcopy(GCP)
    raw["cluster"]["name"] = "1ml"
    raw["cluster"]["gcp"]["zones"] = ["us-central1-a", "europe-west4-b", "us-central1-a"]
    found = problems(raw)
    assert "GKE cluster names start with a letter" in found["cluster.name"]
    assert "distinct zones" in found["cluster.gcp.zones"]
    raw["cluster"]["gcp"]["zones"] = ["us-central1-a", "europe-west4-b"]
    assert "is not a zone of cluster.region us-central1" in problems(raw)["cluster.gcp.zones[1]"]


def test_gke_replicas_and_mps_clients_are_bounded():
    raw = copy.deepcopy(GCP)
    raw["gpuPools"][0]["sharing"] = {"mode": "mps", "replicas": 49}
    assert "must be <= 48 (clients per GPU with mps)" in problems(raw)["gpuPools[0].sharing.replicas"]


def test_azure_groups_are_entra_object_ids():
    raw = copy.deepcopy(AZURE)
    raw["teams"][0]["groups"] = ["research-admins"]
    raw["cluster"]["azure"] = {"adminGroupObjectIds": ["admins"]}
    found = problems(raw)
    assert "is not an Entra ID group object id (GUID)" in found["teams[0].groups[0]"]
    assert "GUIDs" in found["cluster.azure.adminGroupObjectIds"]


def test_mig_layouts_are_checked_for_memory_slices(raw):
    raw["gpuPools"][1]["sharing"] = {"mode": "mig", "migProfile": {"1g.20gb": 4, "1g.10gb": 1}}
    assert "uses 9 memory slices but a A100-80GB has 8" in problems(raw)["gpuPools[1].sharing.migProfile"]
    raw["gpuPools"][1]["sharing"] = {"mode": "mig", "migProfile": {"3g.40gb": 1, "2g.20gb": 2}}
    raw["teams"][1]["quotas"] = {"a100-infer": 8}
    assert problems(raw) == {}


def test_every_mig_parted_layout_fits(upstream_mig_configs):
    for gpu, layout in upstream_mig_configs:
        assert placement_problem(gpu, layout) is None, (gpu.name, layout)


@pytest.fixture
def upstream_mig_configs():
    """mig-parted's own layouts for the catalogued GPUs (entries without a device filter apply to all)."""
    import yaml

    from support.paths import upstream

    document = yaml.safe_load(upstream("mig-parted/config-default.yaml").read_text())
    out = []
    for entries in document["mig-configs"].values():
        for entry in entries:
            layout = entry.get("mig-devices") or {}
            if not layout or "device-filter" in entry:
                continue
            for name in ("A100-80GB", "H100-80GB", "H200-141GB", "B200-180GB", "A30-24GB", "A100-40GB"):
                gpu = gpu_model(name)
                if set(layout) <= {p.name for p in gpu.mig_profiles}:
                    out.append((gpu, layout))
    assert out
    return out


@pytest.mark.parametrize("where, item", [
    ("labels", {"gpu-platform.io/pool": "other"}),
    ("labels", {"x.gpu-platform.io/a": "b"}),
    ("taints", ["gpu-platform.io/spot=true:NoSchedule"]),
])
def test_user_labels_and_taints_cannot_override_the_platforms(raw, where, item):
    raw["gpuPools"][0][where] = item
    found = problems(raw)
    assert any("gpu-platform.io/* " in m and "platform's own" in m for m in found.values()), found


def test_prometheus_namespace_is_not_a_team_or_platform_namespace(raw):
    raw["observability"] = {"prometheus": {"namespace": "research"}}
    assert "a platform namespace holding the Grafana admin Secret" in problems(raw)["teams[0].name"]
    raw["observability"] = {"prometheus": {"namespace": "kueue-system"}}
    assert "is a platform namespace" in problems(raw)["observability.prometheus.namespace"]
    for name in ("gpu-operator", "kube-team"):
        raw["teams"][0]["name"] = name
        assert "reserved namespace" in problems(raw)["teams[0].name"]


def test_adopted_cluster_keys_that_do_nothing_are_warned(raw):
    raw["cluster"].update(existingKubeconfig="[secret]", privateEndpoint=True, systemPool={"minNodes": 3},
                          aws={"vpcCidr": "10.0.0.0/16"})
    found = warnings(raw)
    for key in ("privateEndpoint", "systemPool", "aws"):
        assert "has no effect with cluster.existingKubeconfig" in found[f"cluster.{key}"]


def test_a_plaintext_kubeconfig_in_the_stack_file_is_warned(tmp_path):
    from support.fuzzing import run_cli

    text = tmp_path / "Pulumi.adopt.yaml"
    text.write_text("config:\n  gpu-platform:cloud: aws\n  gpu-platform:cluster:\n    name: c1\n    region: us-east-1\n"
                    "    existingKubeconfig: 'apiVersion: v1'\n  gpu-platform:gpuPools:\n"
                    "    - {name: h100, instanceType: p5.48xlarge, maxNodes: 2}\n  gpu-platform:teams:\n"
                    "    - {name: research, quotas: {h100: 8}}\n")
    outcome, _, out, err = run_cli(["validate", "--file", str(text)])
    assert outcome == "accepted", err
    assert "warning: cluster.existingKubeconfig: is plain text" in err
    secret = text.read_text().replace("'apiVersion: v1'", "{secure: v1:abc}")
    text.write_text(secret)
    assert "pulumi config set --secret" not in run_cli(["validate", "--file", str(text)])[3]


def test_a_wrong_cloud_still_reports_the_other_problems(raw):
    raw["cloud"] = "aws2"
    raw["teams"][0]["priority"] = "urgent"
    raw["gpuPools"][0]["workload"] = "batch"
    raw["scheduler"] = {"kind": 3}
    found = problems(raw)
    assert "allowed: aws, azure, gcp, oci" in found["cloud"]
    assert "must be a string; allowed: kueue, volcano, kai; got 3" in found["scheduler.kind"]
    assert "allowed: critical, high, normal, low" in found["teams[0].priority"]
    assert "allowed: training, inference, interactive" in found["gpuPools[0].workload"]


def test_secret_values_are_never_echoed(monkeypatch):
    from components.config import load

    secret = "-----BEGIN PRIVATE KEY----- hunter2"
    raw = {"cloud": "aws", "cluster": {"name": secret, "region": "us-east-1", "existingKubeconfig": secret},
           "gpuPools": [], "teams": []}
    with pytest.raises(ConfigError) as err:
        load(raw, [], "stack config", secrets=[raw["cluster"]])
    assert "hunter2" not in str(err.value) and "cluster.name: '[secret]' is not" in str(err.value)


@pytest.mark.parametrize("expires, fine", [((date.today() + timedelta(days=30)).isoformat(), True),
                                           ("2020-01-01", False), ("soon", False)])
def test_exemptions_are_reviewed_by_validate_and_plan(tmp_path, expires, fine):
    from support.paths import ROOT
    from support.fuzzing import run_cli

    text = (ROOT / "stacks" / "Pulumi.aws-dev.yaml").read_text() + (
        "  gpu-platform:policy:\n    exemptions:\n      - {rule: GPU003, resource: 'ml-dev-*', expires: " + expires
        + ", reason: the sandbox pool is a deliberate exception for demos}\n")
    path = tmp_path / "Pulumi.aws-dev.yaml"
    path.write_text(text)
    outcome, code, _, err = run_cli(["validate", "--file", str(path)])
    assert (code == 0) == fine, err
    if not fine:
        assert "policy.exemptions[0].expires" in err
        plan_err = run_cli(["plan", "--file", str(path)])[3]
        assert "warning: policy.exemptions[0].expires" in plan_err


def test_yaml_timestamps_as_exemption_expiry_do_not_crash():
    from datetime import date, datetime

    from components.config.errors import Problems
    from components.config.parse import read_policy

    item = {"rule": "GPU003", "resource": "ml-dev-*", "reason": "x" * 30}
    policy = read_policy({"exemptions": [{**item, "expires": datetime(2099, 1, 1, 12)}]}, Problems())
    assert policy.exemptions[0].expires == date(2099, 1, 1)


def _dotted(path: str) -> str:
    out = ""
    for part in path.split("."):
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


def _set(raw: dict, path: str, value):
    node = raw
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    last = parts[-1]
    if last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value


@pytest.mark.parametrize("cloud, pool, group", [
    ("gcp", {"name": "l4", "instanceType": "g2-standard-24", "maxNodes": 2}, "ml@example.com"),
    ("azure", {"name": "a100", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2},
     "00000000-0000-0000-0000-0000000000a1"),
])
def test_a_missing_cluster_with_team_groups_is_an_error_not_a_traceback(cloud, pool, group):
    # Found after merging: the team-group rules read the cluster block, which may be absent.
    raw = {"cloud": cloud, "gpuPools": [pool], "teams": [{"name": "a", "quotas": {pool["name"]: 2}, "groups": [group]}]}
    assert problems(raw)["cluster"] == "is required"
