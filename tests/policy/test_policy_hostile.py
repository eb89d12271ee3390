"""Issue 25: rewrites that keep a value's meaning but change its spelling. Each case is a compliant fixture plus one
changed field that used to pass the pack and now fails with its rule id, next to a compliant control."""
from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest
import yaml

from gpu_platform.engine.plan import Plan
from gpu_platform.policy.runner import evaluate
from policies import context
from policies.exemptions import Policy
from policies.quantity import QuantityError, parse
from policies.rules import BY_ID

from policy_fixtures import TODAY, ids, inputs, load, run
from support.policy import exempted, oci_plan  # noqa: F401  (oci_plan is a fixture)

QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
RELEASE = "kubernetes:helm.sh/v3:Release"


# Quantities: one parser, every suffix ------------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [
    ("32Ki", 32 * 1024), ("1Mi", 2 ** 20), ("2Gi", 2 * 2 ** 30), ("1Ti", 2 ** 40), ("1Pi", 2 ** 50),
    ("1Ei", 2 ** 60), ("2k", 2000), ("3M", 3 * 10 ** 6), ("1G", 10 ** 9), ("1T", 10 ** 12), ("1P", 10 ** 15),
    ("1E", 10 ** 18), ("500m", Decimal("0.5")), ("1e3", 1000), ("1E3", 1000), ("2e-1", Decimal("0.2")),
    ("+8", 8), ("-1", -1), (".5", Decimal("0.5")), ("5.", 5), (8, 8), (8.0, 8), (" 4 ", 4),
])
def test_quantity_parser_reads_every_kubernetes_suffix(text, value):
    assert parse(text) == Decimal(value)


@pytest.mark.parametrize("text", ["", "Ki", "1KI", "1 Ki", "1kb", "1e", "0x10", "1e99999", "nan", "inf", True, None,
                                  float("nan"), "1,000"])
def test_quantity_parser_refuses_what_kubernetes_refuses(text):
    with pytest.raises(QuantityError, match="quantit|exponent"):
        parse(text)


def test_a_binary_suffix_in_a_plan_quota_is_read_not_a_traceback():
    plan = load("aws-prod")
    for quota in (r for r in plan["resources"] if r["type"] == "kubernetes:core/v1:ResourceQuota"):
        quota["inputs"]["spec"]["hard"] = {k: "32Ki" for k in quota["inputs"]["spec"]["hard"]}
    flavor = inputs(plan, QUEUE, "kueue-queue-applied")["spec"]["resourceGroups"][0]["flavors"][1]
    flavor["name"] = "l4-notebooks"  # the applied team on the time-sliced pool, with a quota in Ki
    flavor["resources"][0].update(nominalQuota="1Ki", borrowingLimit="0Mi")
    assert ids(run(plan, "GPU002", "GPU003", "GPU012")) == ["GPU002"]
    flavor["resources"][0]["nominalQuota"] = "0Gi"
    assert ids(run(plan, "GPU002", "GPU003", "GPU012")) == []


# GPU017: a Replace transformation whose output counts GPUs as zero -------------------------------------------


def transform(plan, outputs):
    values = inputs(plan, RELEASE, "kueue-release")["values"]["managerConfig"]
    config = yaml.safe_load(values["controllerManagerConfigYaml"])
    config.setdefault("resources", {})["transformations"] = [
        {"input": "nvidia.com/gpu", "strategy": "Replace", "outputs": outputs}]
    values["controllerManagerConfigYaml"] = yaml.safe_dump(config)


def test_gpu017_replace_with_a_counted_gpu_output_passes():
    plan = load("aws-prod")
    transform(plan, {"nvidia.com/gpu-credits": "1", "example.com/cost": "3"})
    assert ids(run(plan, "GPU017")) == []


@pytest.mark.parametrize("amount", ["0", 0, "0m", "0Ki", "0e3", "-1", "two"])
def test_gpu017_replace_counting_gpus_as_zero_fails(amount):
    plan = load("aws-prod")
    transform(plan, {"nvidia.com/gpu-credits": amount})
    report = run(plan, "GPU017")
    assert ids(report) == ["GPU017"] and "no GPU resource counted above zero" in report.findings[0].message


# GPU004: a preemption policy spelled Never is no policy ------------------------------------------------------


@pytest.mark.parametrize("field", ["withinClusterQueue", "reclaimWithinCohort"])
def test_gpu004_preemption_set_to_never_fails(field):
    plan = load("aws-prod")
    assert ids(run(plan, "GPU004")) == []
    inputs(plan, QUEUE, "kueue-queue-research")["spec"]["preemption"][field] = "Never"
    report = run(plan, "GPU004")
    assert ids(report) == ["GPU004"] and f"{field} (or Never)" in report.findings[0].message


# GPU000: globs that match every resource whatever their spelling ----------------------------------------------


@pytest.mark.parametrize("glob", ["[a-z]*", "urn:*", "*-*", "ml-*", "[!_]*", "?l-p*", "urn:pulumi:aws-prod::*",
                                  "urn:pulumi:aws-prod::gpu-platform::*::ml-prod-h100-train"])
def test_gpu000_glob_that_can_match_every_resource_is_refused(glob):
    report = exempted(resource_glob=glob)
    assert ids(report) == ["GPU000", "GPU001"]
    assert "can match every resource" in next(f.message for f in report.findings if f.rule == "GPU000")


@pytest.mark.parametrize("glob", [
    "ml-prod-h100-*", "ml-prod-h100-train", "ml-prod-h100-tr?in", "ml-prod-[gh]100-*",
    "*-h100-train", "urn:pulumi:aws-prod::gpu-platform::gpu-platform:aws:EksCluster$gpu-platform:cluster:GpuNodePool::"
    "ml-prod-h100-train"])
def test_gpu000_glob_naming_resources_waives(glob):
    assert ids(exempted(resource_glob=glob)) == []


# GPU011: open is measured in public addresses, over every way in ----------------------------------------------

EKS = "aws:eks/cluster:Cluster"


def public_eks(plan, cidrs):
    inputs(plan, EKS)["vpcConfig"].update(endpointPublicAccess=True, publicAccessCidrs=cidrs)


@pytest.mark.parametrize("cidrs", [["203.0.113.0/24", "198.51.100.17/32"], ["8.8.0.0/16"], ["10.0.0.0/8"],
                                   ["2001:db8:1234::/48", "2a00:1450::/32"]])
def test_gpu011_named_networks_pass(cidrs):
    plan = load("aws-prod")
    public_eks(plan, cidrs)
    assert ids(run(plan, "GPU011")) == []


@pytest.mark.parametrize("cidrs", [
    ["3.0.0.0/8"],  # one cloud provider's /8: every tenant of that cloud
    ["52.0.0.0/9", "52.128.0.0/9"],  # two /9s: a /8's worth
    ["8.8.0.0/16", "8.9.0.0/24"],  # just over a /16's worth
    [f"{hex(0x2000 + i * 0x10)[2:]}::/12" for i in range(5)],  # a handful of IPv6 /12s
])
def test_gpu011_wide_public_ranges_fail(cidrs):
    plan = load("aws-prod")
    public_eks(plan, cidrs)
    report = run(plan, "GPU011")
    assert ids(report) == ["GPU011"] and "public IPv" in report.findings[0].message


# GPU015: selectors by what they can match, ipBlocks by the cluster addresses they cover ----------------------

NETPOL = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def scrape_from(plan, selector):
    inputs(plan, NETPOL, "research-allow-prometheus-scrape")["spec"]["ingress"][0]["from"][0][
        "namespaceSelector"] = selector


def internet_to(plan, *blocks):
    inputs(plan, NETPOL, "research-allow-internet-egress")["spec"]["egress"][0]["to"] = [
        {"ipBlock": b} for b in blocks]


NAME = "kubernetes.io/metadata.name"


@pytest.mark.parametrize("change", [
    lambda p: scrape_from(p, {"matchExpressions": [{"key": NAME, "operator": "Exists"}]}),
    lambda p: scrape_from(p, {"matchExpressions": [{"key": NAME, "operator": "NotIn", "values": ["kube-system"]}]}),
    lambda p: scrape_from(p, {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}),
    lambda p: scrape_from(p, {"matchExpressions": [{"key": "gpu-platform.io/team", "operator": "Exists"}]}),
    lambda p: scrape_from(p, {"matchLabels": {"gpu-platform.io/team": "serving"}}),
    lambda p: scrape_from(p, {"matchExpressions": [{"key": NAME, "operator": "exists"}]}),  # unreadable
    lambda p: internet_to(p, {"cidr": "0.0.0.0/1"}, {"cidr": "128.0.0.0/1"}),  # split CIDRs
    lambda p: internet_to(p, {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/32"]}),  # a token except
    lambda p: internet_to(p, {"cidr": "10.0.0.0/16"}),  # the VPC CIDR
    lambda p: internet_to(p, {"cidr": "10.0.0.0/17"}, {"cidr": "10.0.128.0/17"}),
    lambda p: internet_to(p, {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/9"]}),
    lambda p: internet_to(p, {"cidr": "fd00::/64"}),
    lambda p: internet_to(p, {"cidr": "office"}),
], ids=["name-exists", "name-notin", "doesnotexist", "any-team", "other-team", "bad-operator", "split", "token-except",
        "vpc", "vpc-halves", "except-half", "ula", "not-a-cidr"])
def test_gpu015_allowances_reaching_every_namespace_or_address_fail(change):
    plan = load("aws-prod")
    change(plan)
    report = run(plan, "GPU015")
    assert ids(report) == ["GPU015"]
    assert "research/allow-" in report.findings[0].message


def test_gpu015_cluster_addresses_add_up_across_policies():
    plan = load("aws-prod")
    internet_to(plan, {"cidr": "10.0.0.0/25"})
    assert ids(run(plan, "GPU015")) == []  # a few internal addresses (a database subnet) are fine
    extra = inputs(plan, NETPOL, "research-allow-dns")["spec"]["egress"][0]["to"]
    extra.append({"ipBlock": {"cidr": "10.0.0.128/25"}})
    extra.append({"ipBlock": {"cidr": "10.0.1.0/25"}})
    report = run(plan, "GPU015")
    assert ids(report) == ["GPU015"] and "384 cluster-internal addresses" in report.findings[0].message


@pytest.mark.parametrize("change", [
    lambda p: scrape_from(p, {"matchExpressions": [{"key": NAME, "operator": "In", "values": ["monitoring"]}]}),
    lambda p: scrape_from(p, {"matchLabels": {"gpu-platform.io/team": "research"}}),  # its own namespace
    lambda p: internet_to(p, {"cidr": "0.0.0.0/0", "except": ["0.0.0.0/1", "128.0.0.0/1"]}),
    lambda p: internet_to(p, {"cidr": "8.8.8.8/32"}, {"cidr": "2001:4860::/32"}),
    lambda p: internet_to(p, {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                               "100.64.0.0/10", "169.254.0.0/16"]}),
])
def test_gpu015_narrow_allowances_pass(change):
    plan = load("aws-prod")
    change(plan)
    assert ids(run(plan, "GPU015")) == []


# GPU003/GPU014/GPU015: a namespace a ClusterQueue admits is a tenant's, labelled or not ------------------------


def test_a_namespace_the_queues_admit_without_the_team_label_is_a_team_namespace():
    plan = load("aws-prod")
    assert ids(run(plan, "GPU003", "GPU014", "GPU015")) == []  # gpu-operator: a system namespace no queue admits
    inputs(plan, QUEUE, "kueue-queue-research")["spec"]["namespaceSelector"] = {
        "matchLabels": {"kubernetes.io/metadata.name": "gpu-operator"}}
    report = run(plan, "GPU003", "GPU014", "GPU015")
    # GPU014 twice: privileged, and privileged on h100-train, which applied can also use.
    assert ids(report) == ["GPU003", "GPU014", "GPU014", "GPU015"]
    assert all("'gpu-operator'" in f.message for f in report.findings)


# GPU002: a flavor selecting the time-sliced pool by a label GPU feature discovery adds -----------------------

FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"


@pytest.mark.parametrize("labels", [
    {"nvidia.com/gpu.product": "NVIDIA-L4"},
    {"nvidia.com/gpu.sharing-strategy": "time-slicing"},
    {"nvidia.com/gpu.present": "true"},
    {"feature.node.kubernetes.io/pci-10de.present": "true"},
])
def test_gpu002_flavor_selecting_by_a_discovered_gpu_label_fails(labels):
    plan = load("aws-prod")
    inputs(plan, FLAVOR, "kueue-flavor-a100-infer")["spec"]["nodeLabels"] = labels
    report = run(plan, "GPU002")
    assert ids(report) == ["GPU002"] and "'l4-notebooks'" in report.findings[0].message


def test_gpu002_flavor_with_a_discovered_label_and_the_pool_label_passes():
    plan = load("aws-prod")
    labels = inputs(plan, FLAVOR, "kueue-flavor-a100-infer")["spec"]["nodeLabels"]
    labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB"  # narrowed further by the pool's own label
    assert ids(run(plan, "GPU002")) == []


# GPU005: Kueue must manage plain Jobs and bare pods, whatever else it manages ---------------------------------


def kueue_config(plan, edit):
    values = inputs(plan, RELEASE, "kueue-release")["values"]["managerConfig"]
    config = yaml.safe_load(values["controllerManagerConfigYaml"])
    edit(config)
    values["controllerManagerConfigYaml"] = yaml.safe_dump(config)


def without(*frameworks):
    def edit(config):
        config["integrations"]["frameworks"] = [f for f in config["integrations"]["frameworks"] if f not in frameworks]
    return edit


@pytest.mark.parametrize("edit, left", [
    (without("batch/job"), "batch/job"), (without("pod"), "pod"), (without("batch/job", "pod"), "batch/job, pod"),
    (lambda c: c.pop("integrations"), "pod"),  # Kueue's default: batch/job only
])
def test_gpu005_frameworks_leaving_jobs_or_pods_unmanaged_fail(edit, left):
    plan = load("aws-prod")
    kueue_config(plan, edit)
    report = run(plan, "GPU005")
    assert ids(report) == ["GPU005"] and f"leaves {left} unmanaged" in report.findings[0].message


def test_gpu005_pod_options_must_select_every_team_namespace():
    plan = load("aws-prod")
    kueue_config(plan, without("deployment", "statefulset"))  # other integrations may go
    assert ids(run(plan, "GPU005")) == []
    kueue_config(plan, lambda c: c["integrations"].update(podOptions={"namespaceSelector": {
        "matchLabels": {"kubernetes.io/metadata.name": "research"}}}))
    report = run(plan, "GPU005")
    assert ids(report) == ["GPU005"] and "podOptions.namespaceSelector does not select team namespace(s) applied, " \
                                          "serving" in report.findings[0].message


# GPU006: metric names are read from PromQL tokens, not from comments or strings -------------------------------

PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
DCGM = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")


def rewrite_dcgm(plan, rewrite):
    """Every expression reading a DCGM_FI_PROF metric rewritten, so none reads one any more (or all still do)."""
    for group in inputs(plan, PROMETHEUS_RULE, "gpu-monitoring-recording-rules")["spec"]["groups"]:
        for rule in group["rules"]:
            if any(m in rule["expr"] for m in DCGM):
                rule["expr"] = rewrite(rule["expr"])


@pytest.mark.parametrize("rewrite", [
    lambda e: "vector(0) # " + e.replace("\n", " "),  # the metric only in a comment
    lambda e: "vector(0)\n# DCGM_FI_PROF_GR_ENGINE_ACTIVE DCGM_FI_PROF_SM_ACTIVE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    lambda e: 'label_replace(vector(0), "m", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "", "")',  # only in a string
    lambda e: 'up{job="DCGM_FI_PROF_SM_ACTIVE"}',  # a label value
    lambda e: "sum by (DCGM_FI_PROF_SM_ACTIVE) (up)",  # a label name
    lambda e: e + ' + on(x) "unterminated',  # text PromQL refuses: read as selecting nothing
], ids=["comment", "comment-line", "string", "label-value", "label-name", "unparseable"])
def test_gpu006_dcgm_metric_outside_a_selector_fails(rewrite):
    plan = load("aws-prod")
    rewrite_dcgm(plan, rewrite)
    report = run(plan, "GPU006")
    assert ids(report) == ["GPU006"] and "loads no recording rule over" in report.findings[0].message


@pytest.mark.parametrize("rewrite", [
    lambda e: e + "  # reads DCGM engine activity",
    lambda e: "sum by (pod) (max without (gpu) (DCGM_FI_PROF_GR_ENGINE_ACTIVE))",
    lambda e: 'max({__name__="DCGM_FI_PROF_GR_ENGINE_ACTIVE"}) > bool 0.5',
], ids=["trailing-comment", "aggregation", "name-matcher"])
def test_gpu006_dcgm_metric_in_a_selector_passes(rewrite):
    plan = load("aws-prod")
    rewrite_dcgm(plan, rewrite)
    assert ids(run(plan, "GPU006")) == []


# GPU001 (OKE): only a taint every run of the init script passes, on a run that surely happens, counts ----------

INIT = "bash /var/run/oke-init.sh"
TAINT = "--register-with-taints=nvidia.com/gpu=present:NoSchedule"


def oke_gpu001(oci_plan, script):
    plan = json.loads(json.dumps(oci_plan))
    pool = next(r for r in plan["resources"]
                if r["type"] == "oci:ContainerEngine/nodePool:NodePool" and "h100-train" in r["name"])
    pool["inputs"]["nodeMetadata"]["user_data"] = base64.b64encode(script.encode()).decode()
    report = evaluate(Plan.from_json(plan), context.build("production", Policy(), TODAY), [BY_ID["GPU001"]])
    return [f.resource for f in report.findings]


@pytest.mark.parametrize("script", [
    f"#!/bin/bash\nexit 0\n{INIT} {TAINT}\n",  # after exit
    f"#!/bin/bash\n{INIT}\nexit 0\n{INIT} {TAINT}\n",
    f"#!/bin/bash\nexec /usr/bin/true\n{INIT} {TAINT}\n",
    f"#!/bin/bash\ncat <<EOF >/etc/motd\n{INIT} {TAINT}\nEOF\n{INIT}\n",  # in a here-document
    f"#!/bin/bash\nbash <<'EOF'\n{INIT} {TAINT}\nEOF\n",
    f"#!/bin/bash\nif false; then\n  {INIT} {TAINT}\nfi\n",  # under if false
    f"#!/bin/bash\nif false; then {INIT} {TAINT}; fi\n{INIT}\n",
    f"#!/bin/bash\nfalse && {INIT} {TAINT}\n",
    f"#!/bin/bash\nwhile false; do {INIT} {TAINT}; done\n",
    f"#!/bin/bash\nrun() {{ {INIT}; }}\n{INIT} {TAINT}\n",  # an untainted run that may happen
    f"#!/bin/bash\nINIT=/var/run/oke-init.sh\nbash $INIT\n{INIT} {TAINT}\n",
    f"#!/bin/bash\ncase x in x) {INIT} {TAINT} ;; esac\n",
    f"#!/bin/bash\n{INIT} {TAINT}\nfi\n",  # shell the reader does not follow proves nothing
], ids=["after-exit", "exit-between", "after-exec", "heredoc", "heredoc-to-bash", "if-false", "if-false-then-plain",
        "and", "loop", "function", "variable", "case", "stray-fi"])
def test_gpu001_oke_taint_on_a_line_that_never_surely_runs_fails(oci_plan, script):
    assert len(oke_gpu001(oci_plan, script)) == 1


@pytest.mark.parametrize("script", [
    f"#!/bin/bash\nset -euo pipefail\n{INIT} {TAINT}\n",
    f"#!/bin/bash\n[ -x /bin/x ] || exit 1\nx=$(date)\nLOG=1 {INIT} {TAINT} 2>&1 | tee /var/log/init\n",
    f"#!/bin/bash\ncat <<EOF >/etc/motd\nhello\nEOF\n{INIT} {TAINT}\n",
    f"#!/bin/bash\nif command -v oke; then\n  oke bootstrap --kubelet-extra-args \"{TAINT}\"\nelse\n  {INIT} {TAINT}\nfi\n",
    f"#!/bin/bash\nif [ -f /x ]; then exit 1; else {INIT} {TAINT}; fi\n",
], ids=["plain", "guards", "heredoc-before", "if-else", "else-exits"])
def test_gpu001_oke_taint_on_every_run_that_surely_happens_passes(oci_plan, script):
    assert oke_gpu001(oci_plan, script) == []


def test_gpu015_the_stacks_own_vpc_counts_as_cluster_addresses_whatever_its_range():
    plan = load("aws-prod")
    internet_to(plan, {"cidr": "52.10.0.0/16"})  # public space: fine while no cluster lives there
    assert ids(run(plan, "GPU015")) == []
    plan["resources"].append({
        "custom": True, "inputs": {"cidrBlock": "52.10.0.0/16"}, "name": "ml-prod-vpc", "type": "aws:ec2/vpc:Vpc",
        "parent": "", "urn": "urn:pulumi:aws-prod::gpu-platform::aws:ec2/vpc:Vpc::ml-prod-vpc",
        "options": {"dependsOn": [], "ignoreChanges": [], "protect": False}})
    report = run(plan, "GPU015")
    # Every team's internet egress now reaches the VPC too: it excepts only the private ranges.
    assert set(ids(report)) == {"GPU015"}
    assert any("research/allow-internet-egress" in f.message and "65,536 cluster-internal addresses" in f.message
               for f in report.findings)
