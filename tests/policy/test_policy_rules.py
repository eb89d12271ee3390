"""Every rule on compliant fixtures, then one changed field per failing case; plus a not-applicable case, an
unknown-at-preview case and an exemption case per rule."""
from __future__ import annotations

from datetime import date

import pytest

from policies.rules import RULES

from policy_fixtures import KNOWN, UNKNOWN, assert_undecided, drop, ids, inputs, load, new_ids, notes, resource, run
from support.policy import (LONG_REASON, POOL, QUEUE, RELEASE, mps_on_shared_pool, operator, public_endpoint,
    second_team_on_time_sliced_pool, two_driver_owners, untaint)

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
QUOTA = "kubernetes:core/v1:ResourceQuota"
PRIORITY = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
RULE_CR = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
VQUEUE = "kubernetes:scheduling.volcano.sh/v1beta1:Queue"
KQUEUE = "kubernetes:scheduling.run.ai/v2:Queue"


def kueue_config(plan, text_edit):
    values = inputs(plan, RELEASE, "kueue-release")["values"]["managerConfig"]
    values["controllerManagerConfigYaml"] = text_edit(values["controllerManagerConfigYaml"])


def untaint_node_group(plan):
    inputs(plan, NODE_GROUP, "ml-prod-h100-train-nodegroup")["taints"] = []


def prefer_no_schedule(plan):
    inputs(plan, NODE_GROUP, "ml-prod-h100-train-nodegroup")["taints"][0]["effect"] = "PREFER_NO_SCHEDULE"


def no_research_quota(plan):
    drop(plan, QUOTA, "research-gpu-quota")


def mixed_mig_unquoted(plan):
    inputs(plan, POOL, "ml-prod-a100-infer")["advertised"] = {"nvidia.com/mig-1g.10gb": 56, "nvidia.com/mig-3g.40gb": 16}


def preempting_default(plan):
    inputs(plan, PRIORITY, "priorities-gpu-default")["preemptionPolicy"] = "PreemptLowerPriority"


def queue_without_preemption(plan):
    del inputs(plan, QUEUE, "kueue-queue-research")["spec"]["preemption"]


def volcano_queue_unreclaimable(plan):
    del inputs(plan, VQUEUE, "volcano-queue-alpha")["spec"]["reclaimable"]


def no_wait_for_pods_ready(plan):
    kueue_config(plan, lambda text: text.split("waitForPodsReady:")[0] + "fairSharing:" + text.split("fairSharing:")[1])


def jobs_bypass_kueue(plan):
    kueue_config(plan, lambda text: text.replace("manageJobsWithoutQueueName: true", "manageJobsWithoutQueueName: false"))


def volcano_without_gang(plan):
    values = inputs(plan, RELEASE, "volcano-release")["values"]["custom"]
    values["scheduler_config_override"] = values["scheduler_config_override"].replace("  - name: gang\n    enablePreemptable: false\n", "")


def dcgm_disabled(plan):
    operator(plan)["dcgmExporter"]["enabled"] = False


def dcgm_unscraped(plan):
    operator(plan)["dcgmExporter"]["serviceMonitor"]["additionalLabels"] = {"release": "other"}


def no_recording_rules(plan):
    drop(plan, RULE_CR, "gpu-monitoring-recording-rules")


def no_driver_owner(plan):
    inputs(plan, NODE_GROUP, "ml-prod-h100-train-nodegroup")["amiType"] = "AL2023_x86_64_STANDARD"


def custom_taint(plan):
    inputs(plan, POOL, "ml-prod-h100-train")["taints"].append({"key": "dedicated", "value": "ml", "effect": "NoSchedule"})


def spot_untainted(plan):
    inputs(plan, POOL, "ml-prod-l4-notebooks")["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


def unauthorized_dev_endpoint(plan):
    del inputs(plan, "gcp:container/cluster:Cluster")["masterAuthorizedNetworksConfig"]


def idle_alert_removed(plan):
    groups = inputs(plan, RULE_CR, "gpu-monitoring-alerts")["spec"]["groups"]
    inputs(plan, RULE_CR, "gpu-monitoring-alerts")["spec"]["groups"] = [g for g in groups if g["name"] != "gpu-platform.hoarding"]


def serving_a100_quota(amount):
    def change(plan):
        flavors = inputs(plan, QUEUE, "kueue-queue-serving")["spec"]["resourceGroups"][0]["flavors"]
        next(f for f in flavors if f["name"] == "a100-infer")["resources"][0]["nominalQuota"] = amount
    change.__name__ = f"serving_a100_quota_{amount}"
    return change


def volcano_capability_lowered(plan):
    inputs(plan, VQUEUE, "volcano-queue-alpha")["spec"]["capability"]["nvidia.com/gpu"] = 1


def kai_values(plan):
    return inputs(plan, RELEASE, "kai-release")["values"]


def kai_without_podgrouper(plan):
    kai_values(plan)["podgrouper"] = {"enabled": False}


def kai_without_reclaim(plan):
    kai_values(plan)["scheduler"] = {"actions": {"reclaim": {"enabled": False}}}


def kai_limit_lowered(plan):
    inputs(plan, KQUEUE, "kai-queue-alpha")["spec"]["resources"]["gpu"]["limit"] = 1


# rule, fixture, change, what the message says, resource an exemption names (glob)
FAILING = [
    ("GPU001", "aws-prod", untaint, "has no nvidia.com/gpu taint", "ml-prod-h100-*"),
    ("GPU001", "aws-prod", untaint_node_group, "Add {key: nvidia.com/gpu, value: present, effect: NO_SCHEDULE}", "ml-prod-h100-*"),
    ("GPU001", "aws-prod", prefer_no_schedule, "effect PreferNoSchedule", "ml-prod-h100-train-nodegroup"),
    ("GPU002", "aws-prod", second_team_on_time_sliced_pool, "2 teams can use it (applied, research)", "ml-prod-l4-notebooks"),
    ("GPU003", "aws-prod", no_research_quota, "'research' has no ResourceQuota capping requests.nvidia.com/gpu", "research-*"),
    # The queues still count nvidia.com/gpu on a pool now advertising MIG resources: none of it is reachable.
    ("GPU003", "aws-prod", mixed_mig_unquoted, "requests.nvidia.com/mig-1g.10gb, requests.nvidia.com/mig-3g.40gb", "*-namespace",
     {"GPU019"}),
    ("GPU004", "aws-prod", preempting_default, "'gpu-default' has preemptionPolicy PreemptLowerPriority", "priorities-*"),
    ("GPU004", "aws-prod", queue_without_preemption, "'research' sets no preemption.withinClusterQueue", "kueue-queue-research"),
    ("GPU004", "gcp-dev", volcano_queue_unreclaimable, "'alpha' does not set reclaimable", "volcano-queue-alpha"),
    ("GPU005", "aws-prod", no_wait_for_pods_ready, "waitForPodsReady is off", "kueue-release"),
    ("GPU005", "aws-prod", jobs_bypass_kueue, "manageJobsWithoutQueueName is not true", "kueue-release"),
    ("GPU005", "gcp-dev", volcano_without_gang, "has no gang plugin", "volcano-release"),
    ("GPU005", "gcp-dev-kai", kai_without_podgrouper, "values.podgrouper.enabled is not true", "kai-release"),
    ("GPU004", "gcp-dev-kai", kai_without_reclaim, "KAI Queue 'alpha': the scheduler's reclaim action is turned off",
     "kai-queue-*"),
    ("GPU006", "aws-prod", dcgm_disabled, "disables dcgmExporter", "gpu-operator-release"),
    ("GPU006", "aws-prod", dcgm_unscraped, "does not scrape the DCGM exporter", "prometheus-release"),
    ("GPU006", "aws-prod", no_recording_rules, "loads no recording rule over DCGM_FI_PROF_GR_ENGINE_ACTIVE", "prometheus-*",
     {"GPU009"}),
    ("GPU007", "aws-prod", two_driver_owners, "both the EKS image and the GPU Operator install", None),
    ("GPU007", "aws-prod", no_driver_owner, "nobody installs the NVIDIA driver", None),
    ("GPU008", "aws-prod", custom_taint, "do not tolerate dedicated=ml:NoSchedule", "ml-prod-h100-train"),
    ("GPU009", "aws-prod", idle_alert_removed, "loads no alert on allocated-but-idle GPUs", "prometheus-release"),
    ("GPU010", "aws-prod", spot_untainted, "has no spot taint", "ml-prod-l4-notebooks"),
    ("GPU011", "aws-prod", public_endpoint, "exposes its API server to the internet", "ml-prod-eks"),
    ("GPU012", "aws-prod", mps_on_shared_pool, "uses mps and 2 teams can use it", "ml-prod-l4-*"),
    ("GPU013", "gcp-dev", unauthorized_dev_endpoint, "has a public API endpoint without authorized networks",
     "ml-dev-gke-*"),
    ("GPU019", "aws-prod", serving_a100_quota(50),
     "pool 'a100-infer' offers 112 MIG slices at maxNodes but the Kueue ClusterQueues can use at most 106: 6 MIG "
     "slices are unreachable", "ml-prod-a100-infer"),
    ("GPU019", "aws-prod", serving_a100_quota(64),
     "pool 'a100-infer' offers 112 MIG slices at maxNodes but the ClusterQueues' nominal quotas on it add up to "
     "120: 8 MIG slices of nominal quota can never be honoured", "ml-prod-a100-infer"),
    ("GPU019", "gcp-dev", volcano_capability_lowered,
     "pool 'l4-train' offers 8 GPUs at maxNodes but the Volcano Queues can use at most 7: 1 GPUs are unreachable",
     "ml-dev-gke-l4-train"),
    ("GPU019", "gcp-dev-kai", kai_limit_lowered,
     "pool 'l4-train' offers 8 GPUs at maxNodes but the KAI Queues can use at most", "ml-dev-gke-l4-train"),
]


def _case_id(case) -> str:
    return f"{case[0]}-{case[2].__name__}"


@pytest.mark.parametrize("fixture", ["aws-prod", "gcp-dev", "gcp-dev-kai"])
def test_fixtures_are_compliant(fixture):
    report = run(load(fixture), *(r.id for r in RULES))
    assert ids(report) == KNOWN[fixture] and report.exit_code() == 0
    assert [n for n in report.notes if n.kind == "unknown"] == []


@pytest.mark.parametrize("case", FAILING, ids=_case_id)
def test_one_changed_field_fails_exactly_that_rule(case):
    rule, fixture, change, expected, _, *also = case
    plan = load(fixture)
    change(plan)
    report = run(plan, *(r.id for r in RULES))
    # Removing the recording rules also breaks the idle alert built on them.
    assert set(new_ids(report, fixture)) == {rule, *(also[0] if also else ())}
    assert any(expected in f.message for f in report.findings), [f.message for f in report.findings]
    advisory = rule in ("GPU009", "GPU012", "GPU019")
    assert report.exit_code() == (0 if advisory else 1)


@pytest.mark.parametrize("case", [c for c in FAILING if c[4]], ids=_case_id)
def test_exemption_waives_the_finding_and_is_listed(case):
    rule, fixture, change, _, glob, *_also = case
    plan = load(fixture)
    change(plan)
    report = run(plan, rule, exemptions=((rule, glob, LONG_REASON, date(2026, 9, 30)),))
    assert new_ids(report, fixture) == []
    assert report.waived and all(f.waived_by == "policy.exemptions[0]" for f in report.waived)
    assert {u.rule for u in report.exemptions.used} == {rule}
    assert report.exit_code() == 0


def test_critical_rule_cannot_be_exempted():
    plan = load("aws-prod")
    two_driver_owners(plan)
    report = run(plan, "GPU007", exemptions=(("GPU007", "ml-prod-*", LONG_REASON, date(2026, 9, 30)),))
    assert ids(report) == ["GPU000"] + ["GPU007"] * 3
    assert "GPU007 cannot be exempted" in next(f.message for f in report.findings if f.rule == "GPU000")
    assert report.exemptions.used == []


def test_an_expired_exemption_is_a_finding_and_waives_nothing():
    plan = load("aws-prod")
    untaint(plan)
    report = run(plan, "GPU001", exemptions=(("GPU001", "ml-prod-*", LONG_REASON, date(2026, 5, 31)),))
    assert ids(report) == ["GPU000", "GPU001"]
    assert "policy.exemptions[0].expires: expired on 2026-05-31" in report.findings[0].message \
        or any("expired on 2026-05-31" in f.message for f in report.findings)


# rule, fixture, change making it not applicable, reason
NOT_APPLICABLE = [
    ("GPU000", "aws-prod", lambda plan: None, "no exemptions declared"),
    ("GPU001", "aws-prod", lambda plan: [drop(plan, t) for t in (POOL, NODE_GROUP)], "no GPU node pools"),
    ("GPU002", "aws-prod", "development", "not a production stack"),
    ("GPU003", "aws-prod", lambda plan: [drop(plan, t) for t in ("kubernetes:core/v1:Namespace",
                                                                 "gpu-platform:tenancy:Team")],
     "no team namespaces (Namespaces labelled gpu-platform.io/team)"),
    ("GPU004", "aws-prod", lambda plan: [drop(plan, t) for t in (POOL, NODE_GROUP)], "no GPU pools"),
    ("GPU005", "aws-prod", lambda plan: [inputs(plan, POOL, n).update(workload="inference")
                                         for n in ("ml-prod-h100-train",)], "no training pool"),
    ("GPU006", "aws-prod", lambda plan: [drop(plan, t) for t in (POOL, NODE_GROUP)], "no GPU pools"),
    ("GPU007", "aws-prod", lambda plan: [drop(plan, t) for t in (POOL, NODE_GROUP)], "no GPU pools"),
    ("GPU008", "aws-prod", lambda plan: drop(plan, RELEASE, "gpu-operator-release"), "no GPU Operator release"),
    ("GPU009", "aws-prod", lambda plan: [drop(plan, t) for t in (POOL, NODE_GROUP)], "no GPU pools"),
    ("GPU010", "aws-prod", lambda plan: None, "not a spot pool"),
    ("GPU011", "aws-prod", "development", "not a production stack"),
    ("GPU012", "aws-prod", lambda plan: None, "no pool uses mps"),
    ("GPU013", "aws-prod", lambda plan: None, "a production stack: GPU011 holds its endpoint"),
    ("GPU019", "aws-prod", lambda plan: [drop(plan, t) for t in (POOL, NODE_GROUP)], "no GPU pools"),
]


@pytest.mark.parametrize("case", NOT_APPLICABLE, ids=lambda c: c[0])
def test_not_applicable(case):
    rule, fixture, change, reason = case
    plan = load(fixture)
    environment = ""
    if change == "development":
        environment = "development"
    else:
        change(plan)
    report = run(plan, rule, environment=environment)
    assert reason in notes(report, rule, "not-applicable")
    assert [f for f in report.findings if f.rule == rule] == []


def _unknown(type_, name, *path):
    def change(plan):
        node = inputs(plan, type_, name)
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = UNKNOWN
    change.__name__ = ".".join(path)
    return change


# rule, fixture, the value only known after deployment
UNKNOWN_AT_PREVIEW = [
    ("GPU001", "aws-prod", _unknown(POOL, "ml-prod-h100-train", "taints")),
    ("GPU002", "aws-prod", _unknown(QUEUE, "kueue-queue-research", "spec", "resourceGroups")),
    ("GPU003", "aws-prod", _unknown(QUOTA, "research-gpu-quota", "spec", "hard")),
    ("GPU004", "aws-prod", _unknown(QUEUE, "kueue-queue-research", "spec", "preemption")),
    ("GPU005", "aws-prod", _unknown(POOL, "ml-prod-h100-train", "workload")),
    ("GPU006", "aws-prod", _unknown(RELEASE, "gpu-operator-release", "values", "dcgmExporter")),
    ("GPU007", "aws-prod", _unknown(NODE_GROUP, "ml-prod-h100-train-nodegroup", "amiType")),
    ("GPU008", "aws-prod", _unknown(POOL, "ml-prod-h100-train", "taints")),
    ("GPU009", "aws-prod", _unknown(RULE_CR, "gpu-monitoring-alerts", "spec", "groups")),
    ("GPU010", "aws-prod", _unknown(NODE_GROUP, "ml-prod-l4-notebooks-nodegroup", "capacityType")),
    ("GPU011", "aws-prod", _unknown("aws:eks/cluster:Cluster", None, "vpcConfig")),
    ("GPU012", "aws-prod", _unknown(QUEUE, "kueue-queue-research", "spec", "resourceGroups")),
    ("GPU013", "gcp-dev", _unknown("gcp:container/cluster:Cluster", None, "masterAuthorizedNetworksConfig")),
    ("GPU019", "aws-prod", _unknown(QUEUE, "kueue-queue-research", "spec", "resourceGroups")),
]


@pytest.mark.parametrize("case", UNKNOWN_AT_PREVIEW, ids=lambda c: c[0])
def test_unknown_at_preview_is_skipped_with_reason(case):
    rule, fixture, change = case
    plan = load(fixture)
    if rule == "GPU012":
        mps_on_shared_pool(plan)
    change(plan)
    report = run(plan, rule)
    assert_undecided(report, rule)


def test_unknown_pool_does_not_hide_other_pools():
    plan = load("aws-prod")
    custom_taint(plan)
    inputs(plan, POOL, "ml-prod-a100-infer")["taints"] = UNKNOWN
    report = run(plan, "GPU008")
    assert {f.subject for f in report.findings} == {"pool:h100-train"}
    assert notes(report, "GPU008", "unknown") == ["string value at .taints can't be known during preview"]


def test_secret_values_offline_are_skipped_not_misread():
    plan = load("aws-prod")
    inputs(plan, POOL, "ml-prod-h100-train")["taints"] = "[secret]"
    report = run(plan, "GPU001")
    assert notes(report, "GPU001", "unknown") == ["secret value at .taints is not readable offline"]
    assert ids(report) == []


def test_gpu_node_pool_outside_the_component_is_still_a_pool():
    plan = load("aws-prod")
    stray = resource(plan, NODE_GROUP, "ml-prod-h100-train-nodegroup")
    stray = {**stray, "name": "stray-gpu", "parent": resource(plan, "aws:eks/cluster:Cluster")["parent"],
             "urn": stray["urn"].replace("gpu-platform:cluster:GpuNodePool$", "").replace("ml-prod-h100-train-nodegroup", "stray-gpu"),
             "inputs": {**stray["inputs"], "taints": []}}
    plan["resources"].append(stray)
    report = run(plan, "GPU001", "GPU007")
    assert [(f.rule, f.resource) for f in report.findings] == [("GPU001", "stray-gpu")]


def test_pool_capacity_of_a_pool_outside_the_component_is_undecided_and_other_pools_still_checked():
    plan = load("aws-prod")
    drop(plan, POOL, "ml-prod-h100-train")
    report = run(plan, "GPU019")
    assert notes(report, "GPU019", "unknown") == [
        "ml-prod-h100-train-nodegroup: a GPU node pool outside the GpuNodePool component, whose maxNodes and "
        "advertised GPU resources the plan does not state"]
    assert [f.subject for f in report.findings] == ["pool:l4-notebooks"]


def test_pool_capacity_through_a_flavor_selecting_an_undeclared_label_is_undecided():
    plan = load("aws-prod")
    inputs(plan, "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor", "kueue-flavor-h100-train")["spec"][
        "nodeLabels"] = {"eks.amazonaws.com/nodegroup": "ml-prod-h100-train"}
    report = run(plan, "GPU019")
    assert "ResourceFlavor h100-train selects nodes by eks.amazonaws.com/nodegroup" in \
        notes(report, "GPU019", "unknown")[0]
    assert ids(report) == []
