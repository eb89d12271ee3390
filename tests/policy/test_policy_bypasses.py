"""The bypasses a review found (issue 14): each is a compliant fixture plus one changed field that used to pass
the pack, and now fails with its rule id."""
from __future__ import annotations

import base64
import json
from datetime import timedelta

import pytest

from gpu_platform.cli import main
from gpu_platform.engine.plan import Plan
from gpu_platform.policy.runner import evaluate, policy_resources
from policies import context
from policies.endpoints import Endpoint, exposure
from policies.exemptions import Exemption, Policy
from policies.rules import BY_ID

from policy_fixtures import TODAY, UNKNOWN, ids, inputs, load, notes, resource, run
from support.plans import shared_plan
from support.policy import exempted, oci_plan, second_team_on_time_sliced_pool

QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
EKS = "aws:eks/cluster:Cluster"
RELEASE = "kubernetes:helm.sh/v3:Release"
STACK_FACTS = "gpu-platform:policy:StackFacts"


def entry(stack: str, type_: str, name: str, inputs_: dict, depends_on: tuple[str, ...] = ()) -> dict:
    """A plan resource built by hand, as `gpu-platform plan --format json` spells it."""
    return {"custom": True, "inputs": inputs_, "name": name, "type": type_, "parent": "",
            "urn": f"urn:pulumi:{stack}::gpu-platform::{type_}::{name}",
            "options": {"dependsOn": list(depends_on), "ignoreChanges": [], "protect": False}}


def unprotect(plan: dict) -> None:
    for r in plan["resources"]:
        r["options"]["protect"] = False


# GPU011: "open to the internet" is measured ---------------------------------------------------------------


def public_eks(plan: dict, cidrs: list[str]) -> None:
    vpc = inputs(plan, EKS)["vpcConfig"]
    vpc.update(endpointPublicAccess=True, publicAccessCidrs=cidrs)


def test_gpu011_named_networks_pass():
    plan = load("aws-prod")
    public_eks(plan, ["203.0.113.0/24", "198.51.100.17/32"])
    assert ids(run(plan, "GPU011")) == []


@pytest.mark.parametrize("cidrs", [
    ["0.0.0.0/1", "128.0.0.0/1"],  # the review's bypass: the whole IPv4 space in two halves
    ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/3"],
    [f"{i}.0.0.0/8" for i in range(1, 3)],  # two /8s: more than 1/256 of the space
    ["203.0.113.0/24", "::/1", "8000::/1"],  # IPv6 is measured on its own
    ["203.0.113.0/24", "office"],  # not a CIDR
])
def test_gpu011_cidrs_covering_much_of_the_internet_fail(cidrs):
    plan = load("aws-prod")
    public_eks(plan, cidrs)
    report = run(plan, "GPU011")
    assert ids(report) == ["GPU011"]
    assert "exposes its API server to the internet" in report.findings[0].message


def test_gpu011_threshold_is_a_slash_16s_worth_of_public_addresses():
    def endpoint(*cidrs):
        return Endpoint("EKS", False, cidrs, "vpcConfig.publicAccessCidrs", "")

    assert exposure(endpoint("10.0.0.0/8")) is None  # no internet host has these addresses
    assert exposure(endpoint("8.8.0.0/16", "8.8.0.0/17")) is None  # overlaps are merged, not added
    assert "more than a /16's worth" in exposure(endpoint("8.8.0.0/16", "8.9.0.0/32"))
    assert "more than a /32's worth" in exposure(endpoint("::/0"))


# Production comes from the environment, not from `protect` -----------------------------------------------


@pytest.mark.parametrize("rule, change", [
    ("GPU002", second_team_on_time_sliced_pool),
    ("GPU011", lambda plan: public_eks(plan, [])),
])
def test_removing_protect_does_not_switch_production_rules_off(rule, change):
    plan = load("aws-prod")
    change(plan)
    unprotect(plan)  # the bypass: a bare plan without protect flags used to count as development
    assert ids(run(plan, rule, environment=None)) == [rule]


def test_gpu012_without_protect_still_production():
    from support.policy import mps_on_shared_pool

    plan = load("aws-prod")
    mps_on_shared_pool(plan)
    unprotect(plan)
    assert ids(run(plan, "GPU012", environment=None)) == ["GPU012"]


def test_recorded_environment_is_read_from_the_plan_and_strict_when_missing_or_contradicted():
    plan = load("aws-prod")
    second_team_on_time_sliced_pool(plan)
    plan["resources"].append(entry("aws-prod", STACK_FACTS, "ml-prod-stack-facts", {"environment": "development"}))
    assert ids(run(plan, "GPU002", environment=None)) == []  # the program's record of a development stack
    assert ids(run(plan, "GPU002", environment="production")) == ["GPU002"]  # the stack config wins
    plan["resources"].append(entry("aws-prod", STACK_FACTS, "other-facts", {"environment": "production"}))
    assert ids(run(plan, "GPU002", environment=None)) == ["GPU002"]  # records disagree: production
    plan["resources"] = [r for r in plan["resources"] if r["type"] != STACK_FACTS]
    assert ids(run(plan, "GPU002", environment=None)) == ["GPU002"]  # no record: production


def test_the_program_records_its_environment():
    dev = shared_plan("aws-dev")
    (facts,) = dev.of_type(STACK_FACTS)
    assert facts.inputs == {"environment": "development"}
    assert context.recorded_environments(policy_resources(dev.resources)) == {"development"}
    assert not context.production(policy_resources(dev.resources))


# GPU002: tenants are what the queues admit, flavors select by any label --------------------------------------


@pytest.mark.parametrize("selector", [
    {},  # an empty selector admits every namespace
    {"matchExpressions": [{"key": "gpu-platform.io/team", "operator": "In", "values": ["research", "applied"]}]},
    {"matchExpressions": [{"key": "gpu-platform.io/team", "operator": "NotIn", "values": ["serving"]}]},
    {"matchExpressions": [{"key": "gpu-platform.io/team", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["serving"]}]},
    {"matchExpressions": [{"key": "owner", "operator": "DoesNotExist"}]},
])
def test_gpu002_one_queue_admitting_several_teams_is_several_tenants(selector):
    plan = load("aws-prod")
    inputs(plan, QUEUE, "kueue-queue-research")["spec"]["namespaceSelector"] = selector
    report = run(plan, "GPU002")
    assert ids(report) == ["GPU002"]
    # A selector that admits every namespace admits the system ones too: they count as tenants (issue 25).
    tenants = report.findings[0].message.split("teams can use it (", 1)[1].split(")", 1)[0].split(", ")
    assert {"applied", "research"} <= set(tenants)


def test_gpu002_a_selector_matching_one_team_is_one_tenant():
    plan = load("aws-prod")
    inputs(plan, QUEUE, "kueue-queue-research")["spec"]["namespaceSelector"] = {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["research"]}]}
    assert ids(run(plan, "GPU002")) == []


@pytest.mark.parametrize("labels", [
    {"node.kubernetes.io/instance-type": "g6.12xlarge"},  # the review's bypass
    {"eks.amazonaws.com/nodegroup": "gpu-l4-notebooks"},
    {},  # no nodeLabels: admitted pods land on any pool
])
def test_gpu002_flavor_selecting_the_time_sliced_pool_by_another_label(labels):
    plan = load("aws-prod")
    # The applied team's a100 flavor now selects the time-sliced L4 nodes too.
    inputs(plan, FLAVOR, "kueue-flavor-a100-infer")["spec"]["nodeLabels"] = labels
    report = run(plan, "GPU002")
    assert ids(report) == ["GPU002"]
    assert "'l4-notebooks'" in report.findings[0].message


@pytest.mark.parametrize("type_, name", [(NODE_GROUP, "ml-prod-h100-train-nodegroup"),
                                         ("gpu-platform:cluster:GpuNodePool", "ml-prod-h100-train")])
def test_gpu002_a_hand_set_device_plugin_label_time_slices_a_whole_pool(type_, name):
    """The config refuses nvidia.com/* pool labels; a plan written by hand can still point the shared h100-train
    pool's nodes at the L4 pool's time-slicing entry of the GPU Operator's device plugin config."""
    plan = load("aws-prod")
    inputs(plan, type_, name)["labels"]["nvidia.com/device-plugin.config"] = "l4-notebooks"
    report = run(plan, "GPU002")
    assert ids(report) == ["GPU002"]
    assert "pool 'h100-train' uses time-slicing and 2 teams can use it (applied, research)" in \
        report.findings[0].message


# GPU001: launch templates, cloud-init comments, undecidable pools ----------------------------------------


def with_template_node_group(plan: dict, instance_type: str, by_name: bool = False) -> None:
    """An EKS node group outside the component, its instance type on a launch template (custom AMI)."""
    template = entry("aws-prod", LAUNCH_TEMPLATE, "batch-template", {"name": "batch", "instanceType": instance_type,
                                                                     "imageId": "ami-0123456789abcdef0"})
    link = {"name": "batch", "version": "1"} if by_name else {"id": "lt-0123456789abcdef0", "version": "1"}
    group = entry("aws-prod", NODE_GROUP, "batch-nodegroup", {
        "clusterName": "ml-prod", "nodeGroupName": "batch", "amiType": "CUSTOM", "launchTemplate": link,
        "scalingConfig": {"desiredSize": 0, "maxSize": 4, "minSize": 0}}, depends_on=(() if by_name else
                                                                                   (template["urn"],)))
    plan["resources"] += [template, group]


@pytest.mark.parametrize("by_name", [False, True])
def test_gpu001_launch_template_gpu_instance_is_a_gpu_pool(by_name):
    plan = load("aws-prod")
    with_template_node_group(plan, "m6i.2xlarge", by_name)
    assert ids(run(plan, "GPU001")) == []  # a CPU template: not a GPU pool
    plan = load("aws-prod")
    with_template_node_group(plan, "p5.48xlarge", by_name)
    report = run(plan, "GPU001")
    assert ids(report) == ["GPU001"] and "(p5.48xlarge)" in report.findings[0].message


def test_gpu001_custom_ami_with_gpu_instance_types_is_a_gpu_pool():
    plan = load("aws-prod")
    plan["resources"].append(entry("aws-prod", NODE_GROUP, "side-nodegroup", {
        "amiType": "CUSTOM", "instanceTypes": ["m6i.2xlarge"], "nodeGroupName": "side"}))
    assert ids(run(plan, "GPU001")) == []
    inputs(plan, NODE_GROUP, "side-nodegroup")["instanceTypes"] = ["gr6.4xlarge"]
    assert ids(run(plan, "GPU001")) == ["GPU001"]


def test_gpu001_template_outside_the_stack_is_undecided_and_fails_under_fail_on_unknown():
    plan = load("aws-prod")
    with_template_node_group(plan, "p5.48xlarge")
    plan["resources"] = [r for r in plan["resources"] if r["type"] != LAUNCH_TEMPLATE]
    for r in plan["resources"]:
        r["options"]["dependsOn"] = [d for d in r["options"]["dependsOn"] if LAUNCH_TEMPLATE not in d]
    report = run(plan, "GPU001")
    assert ids(report) == [] and report.exit_code() == 0
    assert notes(report, "GPU001", "unknown") == [
        "batch-nodegroup: launchTemplate names a template that is not in this stack, so its instance type "
        "(GPU or not) cannot be read"]
    assert report.exit_code("unknown") == 1


def oke_user_data(script: str) -> str:
    return base64.b64encode(script.encode()).decode()


@pytest.mark.parametrize("script", [
    # The review's bypass: the flag only in a comment.
    "#!/bin/bash\n# bash /var/run/oke-init.sh --kubelet-extra-args \"--register-with-taints=nvidia.com/gpu=present:"
    "NoSchedule\"\nbash /var/run/oke-init.sh\n",
    "#!/bin/bash\nbash /var/run/oke-init.sh  # --register-with-taints=nvidia.com/gpu=present:NoSchedule\n",
    "#!/bin/bash\necho '--register-with-taints=nvidia.com/gpu=present:NoSchedule'\nbash /var/run/oke-init.sh\n",
    "#!/bin/bash\nlogger bash /var/run/oke-init.sh --register-with-taints=nvidia.com/gpu=present:NoSchedule\n"
    "bash /var/run/oke-init.sh\n",
])
def test_gpu001_oke_taint_only_counts_on_executed_lines(oci_plan, script):
    plan = json.loads(json.dumps(oci_plan))
    pool = next(r for r in plan["resources"]
                if r["type"] == "oci:ContainerEngine/nodePool:NodePool" and "h100-train" in r["name"])
    rules = [BY_ID["GPU001"]]
    ctx = context.build("production", Policy(), TODAY)
    assert evaluate(Plan.from_json(plan), ctx, rules).findings == []  # the program's own cloud-init
    pool["inputs"]["nodeMetadata"]["user_data"] = oke_user_data(script)
    findings = evaluate(Plan.from_json(plan), ctx, rules).findings
    assert [f.resource for f in findings] == [pool["name"]]


def test_gpu001_oke_cloud_config_runcmd_counts(oci_plan):
    plan = json.loads(json.dumps(oci_plan))
    pool = next(r for r in plan["resources"]
                if r["type"] == "oci:ContainerEngine/nodePool:NodePool" and "h100-train" in r["name"])
    pool["inputs"]["nodeMetadata"]["user_data"] = oke_user_data(
        "#cloud-config\nruncmd:\n  - [bash, /var/run/oke-init.sh, --kubelet-extra-args, "
        "\"--register-with-taints=nvidia.com/gpu=present:NoSchedule\"]\n")
    ctx = context.build("production", Policy(), TODAY)
    assert evaluate(Plan.from_json(plan), ctx, [BY_ID["GPU001"]]).findings == []


def test_unknown_taints_warn_and_fail_only_under_fail_on_unknown(tmp_path, capsys):
    plan = load("aws-prod")
    inputs(plan, NODE_GROUP, "ml-prod-h100-train-nodegroup")["taints"] = UNKNOWN
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    assert main(["check", "--plan", str(path)]) == 0
    text = capsys.readouterr().out
    assert "WARN GPU001 cannot decide (mandatory)" in text and "can't be known during preview" in text
    assert main(["check", "--plan", str(path), "--fail-on", "unknown"]) == 1
    assert "FAIL GPU001 cannot decide" in capsys.readouterr().out
    advisory_only = load("aws-prod")
    resource(advisory_only, RELEASE, "prometheus-release")["inputs"]["values"] = UNKNOWN  # GPU009 (advisory) only
    path.write_text(json.dumps(advisory_only))
    out = tmp_path / "r.json"
    main(["check", "--plan", str(path), "--fail-on", "unknown", "--format", "json", "--out", str(out)])
    report = json.loads(out.read_text())
    undecided = [n for n in report["notes"] if n["kind"] == "unknown"]
    assert undecided and all(not n["failing"] or BY_ID[n["rule"]].enforcement.value == "mandatory" for n in undecided)


# GPU005: Kueue must manage the teams and their jobs -------------------------------------------------------


def kueue_config(plan, old: str, new: str) -> None:
    values = inputs(plan, RELEASE, "kueue-release")["values"]["managerConfig"]
    assert old in values["controllerManagerConfigYaml"]
    values["controllerManagerConfigYaml"] = values["controllerManagerConfigYaml"].replace(old, new)


@pytest.mark.parametrize("old, new, message", [
    ("managedJobsNamespaceSelector:\n  matchExpressions:\n  - key: gpu-platform.io/team\n    operator: Exists\n",
     "managedJobsNamespaceSelector:\n  matchLabels:\n    gpu-platform.io/team: nobody\n",
     "does not select team namespace(s) applied, research, serving"),
    ("    operator: Exists\n", "    operator: DoesNotExist\n", "does not select team namespace(s)"),
    ("integrations:\n  frameworks:\n", "integrations:\n  frameworks: []\n  unused:\n", "manages no job framework"),
    ("  - batch/job\n  - jobset.x-k8s.io/jobset\n  - kubeflow.org/mpijob\n  - kubeflow.org/pytorchjob\n"
     "  - trainer.kubeflow.org/trainjob\n  - ray.io/rayjob\n  - ray.io/raycluster\n  - ray.io/rayservice\n", "",
     "manages no job framework"),
])
def test_gpu005_kueue_that_manages_no_team_or_no_job_framework_fails(old, new, message):
    plan = load("aws-prod")
    kueue_config(plan, old, new)
    report = run(plan, "GPU005")
    assert ids(report) == ["GPU005"] and message in report.findings[0].message


# Exemptions: words, lifetime, no bare wildcard ------------------------------------------------------------


def test_a_well_formed_exemption_waives():
    assert ids(exempted()) == []


@pytest.mark.parametrize("reason", [
    "." * 40,  # the review's bypass: length without words
    "\u200b" * 30 + "ok",  # zero-width spaces
    "x\u200bx\u200bx\u200bx\u200bx\u200bx\u200bx\u200bx\u200bx\u200bx\u200bx\u200b",
    "waiver " * 6,  # one word repeated
    "1234567890 1234567890 1234567890",
])
def test_exemption_reason_needs_words(reason):
    report = exempted(reason=reason)
    assert ids(report) == ["GPU000", "GPU001"]
    assert "different words" in next(f.message for f in report.findings if f.rule == "GPU000")


@pytest.mark.parametrize("glob", ["*", "**", "?*", " * "])
def test_exemption_for_every_resource_is_refused(glob):
    report = exempted(resource_glob=glob)
    assert ids(report) == ["GPU000", "GPU001"]
    assert "matches every resource" in next(f.message for f in report.findings if f.rule == "GPU000")


def test_exemption_lifetime_is_limited_and_configurable():
    assert ids(exempted(expires=TODAY + timedelta(days=180))) == []
    report = exempted(expires=TODAY + timedelta(days=181))
    assert ids(report) == ["GPU000", "GPU001"]
    assert "more than 180 days away" in next(f.message for f in report.findings if f.rule == "GPU000")
    assert ids(exempted(expires=TODAY + timedelta(days=300), max_days=365)) == []
    assert ids(exempted(expires=TODAY + timedelta(days=40), max_days=30)) == ["GPU000", "GPU001"]
    report = exempted(expires=TODAY + timedelta(days=300), max_days=100000)  # cannot turn the limit off
    messages = [f.message for f in report.findings if f.rule == "GPU000"]
    assert any(m.startswith("policy.maxExemptionDays: must be a whole number of days from 1 to 365") for m in messages)
    assert ids(report) == ["GPU000", "GPU000", "GPU001"]


def test_stack_file_accepts_max_exemption_days(raw):
    from components.config import validate

    raw["policy"] = {"maxExemptionDays": 90, "exemptions": []}
    assert validate(raw).policy.max_days == 90


def test_exemption_dataclass_is_the_packs():
    from components.config.model import Exemption as ConfigExemption

    assert ConfigExemption is Exemption


def test_stack_file_refuses_a_bad_max_exemption_days(raw):
    from components.config import ConfigError, validate

    raw["policy"] = {"maxExemptionDays": 0}
    with pytest.raises(ConfigError, match=r"policy.maxExemptionDays: must be a whole number of days from 1 to 365; "
                                          r"got 0$"):
        validate(raw)
