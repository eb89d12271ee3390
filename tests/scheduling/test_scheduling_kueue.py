"""Kueue: the chart release and its manager config, flavors per pool, queues per team, and conformance with the
v0.19.2 CRDs, chart values and config API in ../shared/upstream."""
from __future__ import annotations

import re
from functools import lru_cache

import pytest
import yaml

from components.catalog import lookup
from components.config.labels import POOL_LABEL
from components.config import validate
from components.scheduling.kueue import component as kueue
from components.config.priority_levels import LEVELS
from gpu_platform.engine import plan_stack

from support.paths import STACKS, upstream
from support.stacks import by_name, crd_errors, objects, ours, planned, stack_config, whole, with_scheduler

CRDS = {
    "ResourceFlavor": "kueue/crds/kueue.x-k8s.io_resourceflavors.yaml",
    "ClusterQueue": "kueue/crds/kueue.x-k8s.io_clusterqueues.yaml",
    "LocalQueue": "kueue/crds/kueue.x-k8s.io_localqueues.yaml",
    "WorkloadPriorityClass": "kueue/crds/kueue.x-k8s.io_workloadpriorityclasses.yaml",
    "Cohort": "kueue/crds/kueue.x-k8s.io_cohorts.yaml",
}
CONFIG_DOC = "kueue/config/kueue-config.v1beta2.md"
ANCHOR = "config-kueue-x-k8s-io-v1beta2-"


@pytest.fixture(scope="module")
def classic():
    """aws-prod with fair sharing off, so borrowWithinCohort is set (classic preemption)."""
    return plan_stack("aws-prod", config_overrides=with_scheduler("aws-prod", "kueue", fairSharing=False))


def kueue_plans(extra=()):
    return [planned(stack, "kueue") for stack in STACKS] + list(extra)


def release(plan) -> dict:
    return next(r.inputs for r in ours(plan) if r.type == "kubernetes:helm.sh/v3:Release")


def manager_conf(plan) -> dict:
    return yaml.safe_load(release(plan)["values"]["managerConfig"]["controllerManagerConfigYaml"])


def flavor(plan, pool: str) -> dict:
    return by_name(plan, "ResourceFlavor")[pool]["spec"]


def flavors(cq: dict) -> dict[str, dict[str, dict]]:
    """pool -> resource -> quota entry."""
    return {f["name"]: {r["name"]: r for r in f["resources"]}
            for group in cq["spec"]["resourceGroups"] for f in group["flavors"]}


# --- the CEL rules of the CRDs, which a JSON schema cannot express --------------------------------------------

def cel_violations(obj: dict) -> list[str]:
    spec, found = obj.get("spec", {}), []
    if obj["kind"] == "ClusterQueue":
        if "cohortName" not in spec:
            found += ["borrowingLimit without cohort" for g in spec["resourceGroups"] for f in g["flavors"]
                      for r in f["resources"] if "borrowingLimit" in r]
        for group in spec["resourceGroups"]:
            found += [f"flavor {f['name']} does not list coveredResources in order" for f in group["flavors"]
                      if [r["name"] for r in f["resources"]] != group["coveredResources"]]
        pre = spec.get("preemption", {})
        if pre.get("reclaimWithinCohort", "Never") == "Never" and pre.get("borrowWithinCohort", {}).get(
                "policy", "Never") != "Never":
            found.append("reclaimWithinCohort=Never with borrowWithinCohort")
    if obj["kind"] == "ResourceFlavor":
        for t in spec.get("tolerations", []):
            operator = t.get("operator", "Equal")
            if operator not in ("Equal", "Exists") or (operator == "Exists" and "value" in t):
                found.append(f"bad toleration {t}")
            if t.get("effect") not in (None, "NoSchedule", "PreferNoSchedule", "NoExecute"):
                found.append(f"bad effect {t}")
    return found


def test_every_kueue_object_validates_against_the_v1beta2_crds(classic):
    seen = set()
    for plan in kueue_plans([classic]):
        for resource in ours(plan):
            kind = resource.inputs.get("kind")
            if resource.inputs.get("apiVersion") == kueue.API:
                assert crd_errors(CRDS[kind], "v1beta2", resource.inputs) == [], resource.urn
                assert cel_violations(resource.inputs) == [], resource.urn
                seen.add(kind)
    assert seen == set(CRDS)


def test_the_strict_schema_rejects_unknown_and_v1beta1_fields():
    cq = {"apiVersion": kueue.API, "kind": "ClusterQueue", "metadata": {"name": "x"},
          "spec": {"cohort": "old-v1beta1-field", "resourceGroups": []}}
    assert any("cohort" in e for e in crd_errors(CRDS["ClusterQueue"], "v1beta2", cq))
    wpc = {"apiVersion": kueue.API, "kind": "WorkloadPriorityClass", "metadata": {"name": "x"}, "spec": {"value": 1}}
    assert crd_errors(CRDS["WorkloadPriorityClass"], "v1beta2", wpc)  # value belongs beside metadata


def test_the_cel_checks_catch_what_they_describe():
    bad = {"kind": "ClusterQueue", "spec": {
        "preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}},
        "resourceGroups": [{"coveredResources": ["a", "b"], "flavors": [
            {"name": "f", "resources": [{"name": "b", "nominalQuota": 1, "borrowingLimit": 1},
                                        {"name": "a", "nominalQuota": 1}]}]}]}}
    assert len(cel_violations(bad)) == 3


# --- flavors ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stack", STACKS)
def test_one_flavor_per_pool_matching_the_pool_labels_and_every_taint(stack):
    plan = planned(stack, "kueue")
    pools = [r.inputs for r in plan.resources if r.type == "gpu-platform:cluster:GpuNodePool"]
    assert sorted(by_name(plan, "ResourceFlavor")) == sorted(p["poolName"] for p in pools)
    for pool in pools:
        spec = flavor(plan, pool["poolName"])
        assert spec["nodeLabels"] == {POOL_LABEL: pool["poolName"]} == {POOL_LABEL: pool["labels"][POOL_LABEL]}
        tolerated = [(t["key"], t.get("value", ""), t["effect"]) for t in spec["tolerations"]]
        assert tolerated == [(t["key"], t["value"], t["effect"]) for t in pool["taints"]]


def test_spot_and_cloud_taints_are_tolerated_on_their_flavor_only():
    aks = planned("azure-prod", "kueue")
    assert ("sku", "gpu") in {(t["key"], t["value"]) for t in flavor(aks, "h100-train")["tolerations"]}
    spot = {(t["key"], t["value"]) for t in flavor(aks, "a10-spot")["tolerations"]}
    assert {("gpu-platform.io/spot", "true"), ("kubernetes.azure.com/scalesetpriority", "spot")} <= spot
    on_demand = {(t["key"], t["value"]) for t in flavor(aks, "h100-train")["tolerations"]}
    assert ("gpu-platform.io/spot", "true") not in on_demand


# --- cluster queues ---------------------------------------------------------------------------------------------

def test_aws_prod_queues_count_each_pool_in_its_own_units():
    cqs = by_name(planned("aws-prod", "kueue"), "ClusterQueue")
    # Single-strategy MIG and time-slicing both advertise nvidia.com/gpu: one resource group, three flavors.
    assert flavors(cqs["research"]) == {
        "h100-train": {"nvidia.com/gpu": {"name": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": 8}},
        "l4-notebooks": {"nvidia.com/gpu": {"name": "nvidia.com/gpu", "nominalQuota": 32, "borrowingLimit": 8}},
    }
    assert whole(flavors(cqs["applied"])["a100-infer"]["nvidia.com/gpu"]) == {
        "name": "nvidia.com/gpu", "nominalQuota": 56, "borrowingLimit": 8}
    # No borrowingLimit in the stack means no borrowing, not Kueue's unlimited default.
    assert whole(flavors(cqs["serving"])["a100-infer"]["nvidia.com/gpu"])["borrowingLimit"] == 0
    for name, cq in cqs.items():
        spec = cq["spec"]
        assert spec["cohortName"] == "gpu-platform" and spec["queueingStrategy"] == "BestEffortFIFO"
        assert spec["namespaceSelector"] == {"matchLabels": {"gpu-platform.io/team": name}}
    # Weight = nominal quota in whole GPUs: 7 one-slice MIG instances are 1 A100, 4 time-sliced replicas are 1 L4.
    assert {n: whole(cq["spec"]["fairSharing"]["weight"]) for n, cq in cqs.items()} == {
        "research": 24, "applied": 16, "serving": 8}


def test_mixed_mig_gets_its_own_resource_group_in_slices():
    cq = by_name(planned("oci-prod", "kueue"), "ClusterQueue")["genai"]
    groups = {tuple(g["coveredResources"]): [f["name"] for f in g["flavors"]] for g in cq["spec"]["resourceGroups"]}
    layout = dict(lookup("oci", "BM.GPU.A100-v2.8").gpu.mig_balanced)
    mig = tuple(sorted(f"nvidia.com/mig-{p}" for p in layout))
    assert groups == {("nvidia.com/gpu",): ["h100-train", "a10-spot"], mig: ["a100-infer"]}
    slices = flavors(cq)["a100-infer"]
    assert {n: whole(q["nominalQuota"]) for n, q in slices.items()} == {
        f"nvidia.com/mig-{p}": 8 * count for p, count in layout.items()}  # 8 GPUs' worth of the balanced layout
    assert {n: whole(q["borrowingLimit"]) for n, q in slices.items()} == {
        f"nvidia.com/mig-{p}": 8 * count for p, count in layout.items()}


def test_pools_sharing_a_slice_name_share_one_group_and_list_every_slice(raw):
    raw["gpuPools"][1]["sharing"] = {"mode": "mig", "migProfile": "all-balanced"}
    raw["gpuPools"].append({"name": "a100-small", "instanceType": "p4de.24xlarge", "maxNodes": 1,
                            "sharing": {"mode": "mig", "migProfile": "all-1g.10gb"}})
    raw["teams"][1]["quotas"] = {"a100-infer": 8, "a100-small": 28}
    config = validate(raw)
    groups = kueue.cluster_queue_spec(config, config.teams[1])["resourceGroups"]
    assert len(groups) == 1
    covered = groups[0]["coveredResources"]
    assert "nvidia.com/mig-1g.10gb" in covered and len(covered) > 1
    small = next(f for f in groups[0]["flavors"] if f["name"] == "a100-small")
    assert [r["name"] for r in small["resources"]] == covered
    assert {r["name"]: r["nominalQuota"] for r in small["resources"] if r["nominalQuota"]} == {
        "nvidia.com/mig-1g.10gb": 28}  # a one-profile pool counts slices; the profiles it lacks are listed at 0


def test_lending_limit_becomes_a_per_flavor_lending_limit(raw):
    raw["teams"][0]["lendingLimit"] = 4
    config = validate(raw)
    entry = kueue.cluster_queue_spec(config, config.teams[0])["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert entry == {"name": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": 8, "lendingLimit": 4}


def test_a_single_team_has_no_cohort_borrowing_or_reclaim():
    plan = planned("aws-dev", "kueue")
    (cq,) = objects(plan, "ClusterQueue")
    assert "cohortName" not in cq["spec"] and "fairSharing" not in cq["spec"]
    assert cq["spec"]["preemption"] == {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Never"}
    assert all("borrowingLimit" not in q and "lendingLimit" not in q for f in flavors(cq).values() for q in f.values())
    assert objects(plan, "Cohort") == []


def test_preemption_follows_team_priority_with_classic_preemption(classic):
    cqs = {n: cq["spec"]["preemption"] for n, cq in by_name(classic, "ClusterQueue").items()}
    assert whole(cqs) == {
        "serving": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                    "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": LEVELS["normal"].value}},
        "research": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                     "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": LEVELS["low"].value}},
        "applied": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                    "borrowWithinCohort": {"policy": "Never"}},
    }
    assert all("fairSharing" not in cq["spec"] for cq in objects(classic, "ClusterQueue"))
    assert "fairSharing" not in manager_conf(classic)


def test_fair_sharing_leaves_borrow_preemption_to_kueue():
    for cq in objects(planned("aws-prod", "kueue"), "ClusterQueue"):
        assert "borrowWithinCohort" not in cq["spec"]["preemption"]
        assert cq["spec"]["preemption"]["reclaimWithinCohort"] == "Any"


@pytest.mark.parametrize("stack", STACKS)
def test_each_team_gets_a_default_local_queue_and_priority_classes(stack):
    plan = planned(stack, "kueue")
    teams = [t["name"] for t in stack_config(stack)["gpu-platform:teams"]]
    assert {k: v["spec"] for k, v in by_name(plan, "LocalQueue").items()} == {
        f"{t}/default": {"clusterQueue": t} for t in teams}
    assert {k: whole(v["value"]) for k, v in by_name(plan, "WorkloadPriorityClass").items()} == {
        lv.name: lv.value for lv in LEVELS.values()}
    users = {k: v for k, v in by_name(plan, "RoleBinding").items() if k.endswith("/kueue-batch-user")}
    assert all(v["roleRef"]["name"] == kueue.USER_ROLE for v in users.values())


# --- release and manager config ---------------------------------------------------------------------------------

def test_release_is_pinned_and_sets_real_chart_keys():
    values = yaml.safe_load(upstream("kueue/values.yaml").read_text())
    chart = yaml.safe_load(upstream("kueue/Chart.yaml").read_text())
    for plan in kueue_plans():
        rel = release(plan)
        assert (rel["chart"], rel["version"], rel["namespace"], rel["name"]) == (
            "oci://registry.k8s.io/kueue/charts/kueue", chart["version"], "kueue-system", "kueue")
        assert set(rel["values"]) <= set(values)
        assert "controllerManagerConfigYaml" in values["managerConfig"]
        image = rel["values"]["controllerManager"]["manager"]["image"]
        assert set(image) <= set(values["controllerManager"]["manager"]["image"])
        assert image["tag"] == chart["appVersion"]


@lru_cache
def config_api() -> dict[str, dict[str, str | None]]:
    """Kueue config v1beta2 types from the generated reference: type -> field -> linked local type (or None)."""
    text = upstream(CONFIG_DOC).read_text()
    types = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        name = re.match(r"`(\w+)`", section)
        if not name:
            continue
        fields = {}
        for row in section.split("<tr><td><code>")[1:]:
            field, _, rest = row.partition("</code>")
            cell = rest.split("</td>")[0]
            link = re.search(rf'href="#{ANCHOR}(\w+)"', cell)
            fields[field] = link.group(1) if link else None
        types[name.group(1)] = fields
    configuration = types["Configuration"]
    configuration.update(types[configuration.pop("ControllerManager")])  # embedded members
    return types


def unknown_keys(value: dict, type_name: str, path: str = "") -> list[str]:
    api = config_api()
    found = []
    for key, sub in value.items():
        fields = api[type_name]
        if key not in fields:
            found.append(f"{path}{key}")
        elif isinstance(sub, dict) and fields[key] in api:
            found += unknown_keys(sub, fields[key], f"{path}{key}.")
    return found


def test_manager_config_keys_exist_in_the_kueue_config_api(classic):
    api = config_api()
    assert "enable" not in api["WaitForPodsReady"] and "enable" not in api["FairSharing"]  # removed in v1beta2
    for plan in kueue_plans([classic]):
        conf = manager_conf(plan)
        assert conf["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and conf["kind"] == "Configuration"
        assert unknown_keys(conf, "Configuration") == []
    assert unknown_keys({"waitForPodsReady": {"enable": True}}, "Configuration") == ["waitForPodsReady.enable"]


def test_manager_config_values_are_ones_the_api_documents():
    text = upstream(CONFIG_DOC).read_text()
    frameworks = set(re.findall(r"<li>&quot;([\w./-]+)&quot;</li>", text))
    conf = manager_conf(planned("aws-prod", "kueue"))
    assert set(conf["integrations"]["frameworks"]) <= frameworks
    # no scheduler.frameworks: only the integrations that need no operator
    # (tests/scheduling/test_scheduling_frameworks.py)
    assert conf["integrations"]["frameworks"] == ["batch/job", "pod", "deployment", "statefulset"]
    strategies = re.search(r"preemptionStrategies.*?</td>\s*</tr>", text, re.S).group(0)
    assert all(s in strategies for s in conf["fairSharing"]["preemptionStrategies"])
    assert f"<code>{conf['waitForPodsReady']['requeuingStrategy']['timestamp']}</code>" in text


def test_manager_config_keeps_the_chart_defaults():
    default = yaml.safe_load(upstream("kueue/config/controller_manager_config.yaml").read_text())
    conf = manager_conf(planned("aws-prod", "kueue"))
    for key in ("apiVersion", "kind", "health", "webhook", "leaderElection", "controller", "clientConnection"):
        assert conf[key] == default[key], key
    # The chart's commented-out option, turned on for the observability layer's per-ClusterQueue quota rules.
    assert conf["metrics"] == {**default["metrics"], "enableClusterQueueResources": True}
    # The chart enables operator integrations too; without scheduler.frameworks only its operator-free ones remain.
    assert set(conf["integrations"]["frameworks"]) == set(default["integrations"]["frameworks"]) & {
        "batch/job", "pod", "deployment", "statefulset"} == {"batch/job", "pod", "deployment", "statefulset"}


def test_gang_admission_follows_the_stack_timeouts():
    assert manager_conf(planned("aws-prod", "kueue"))["waitForPodsReady"] == {
        "timeout": "600s", "recoveryTimeout": "600s", "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffLimitCount": 5, "backoffBaseSeconds": 60,
                              "backoffMaxSeconds": 3600}}
    assert manager_conf(planned("azure-prod", "kueue"))["waitForPodsReady"]["timeout"] == "900s"


def test_gang_off_drops_wait_for_pods_ready_and_recovery_has_its_own_timeout(raw):
    raw["scheduler"] = {"gang": {"enabled": False}}
    assert "waitForPodsReady" not in kueue.manager_config(validate(raw))
    raw["scheduler"] = {"gang": {"timeout": "20m", "recoveryTimeout": "5m"}}
    wait = kueue.manager_config(validate(raw))["waitForPodsReady"]
    assert (wait["timeout"], wait["recoveryTimeout"]) == ("1200s", "300s")


@pytest.mark.parametrize("stack", STACKS)
def test_no_excluded_resource_prefix_hides_a_gpu_from_quota(stack):
    # Kueue skips every resource a prefix matches: an empty one (GKE GPUDirect has no NIC resource) matched them all.
    prefixes = manager_conf(planned(stack, "kueue"))["resources"]["excludeResourcePrefixes"]
    assert all(prefixes) and not any(p.startswith("nvidia.com") or "nvidia.com/gpu".startswith(p) for p in prefixes)


def test_queue_management_is_confined_to_team_namespaces():
    conf = manager_conf(planned("aws-prod", "kueue"))
    assert conf["manageJobsWithoutQueueName"] is True
    assert conf["managedJobsNamespaceSelector"] == {
        "matchExpressions": [{"key": "gpu-platform.io/team", "operator": "Exists"}]}
    # aws-prod's h100-train has EFA: its interfaces are left to the kubelet, quota counts GPUs.
    assert conf["resources"] == {"excludeResourcePrefixes": ["cpu", "memory", "ephemeral-storage", "hugepages-",
                                                             "vpc.amazonaws.com/efa"]}
