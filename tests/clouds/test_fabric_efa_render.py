"""The pinned EFA device-plugin chart, rendered by a real Helm with the planned values: its DaemonSet lands on every
node of every pool that can take EFA, judged as the scheduler judges its node affinity and node selector."""
from __future__ import annotations

import pytest

from components.clouds.aws.catalog import INSTANCE_TYPES as AWS_TYPES
from gpu_platform.engine import plan_stack

from support.helm import Helm, chart_package, extract_helm

RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
EFA_TYPES = sorted(name for name, t in AWS_TYPES.items() if t.interconnect == "efa")


def matches(expression: dict, labels: dict[str, str]) -> bool:
    """One NodeSelectorRequirement (k8s.io/component-helpers nodeaffinity): NotIn and DoesNotExist hold on a node
    without the label; Gt and Lt compare integers."""
    key, op, values = expression["key"], expression["operator"], expression.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and labels[key].lstrip("-").isdigit():
        return int(labels[key]) > int(values[0]) if op == "Gt" else int(labels[key]) < int(values[0])
    return False


def schedulable(pod_spec: dict, labels: dict[str, str]) -> bool:
    """nodeSelector, then required node affinity: any term whose every expression holds (an empty term matches
    nothing)."""
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = (pod_spec.get("affinity", {}).get("nodeAffinity", {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not required:
        return True
    return any(term.get("matchExpressions") and all(matches(e, labels) for e in term["matchExpressions"])
               for term in required["nodeSelectorTerms"])


def test_the_affinity_check_reads_terms_as_the_scheduler_does():
    term = {"matchExpressions": [{"key": INSTANCE_TYPE, "operator": "In", "values": ["p5.48xlarge"]},
                                 {"key": "compute", "operator": "NotIn", "values": ["auto"]}]}
    spec = {"nodeSelector": {"fabric": "efa"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term]}}}}
    assert schedulable(spec, {"fabric": "efa", INSTANCE_TYPE: "p5.48xlarge"})
    assert not schedulable(spec, {"fabric": "efa", INSTANCE_TYPE: "p5.48xlarge", "compute": "auto"})
    assert not schedulable(spec, {"fabric": "efa", INSTANCE_TYPE: "p6-b200.48xlarge"})
    assert not schedulable(spec, {INSTANCE_TYPE: "p5.48xlarge"})


@pytest.fixture(scope="module")
def efa_everywhere():
    """aws-prod with one EFA pool per instance type the catalog can give EFA."""
    pools = [{"name": f"efa-{i}", "instanceType": name, "maxNodes": 1, "fabric": "efa", "workload": "training"}
             for i, name in enumerate(EFA_TYPES)]
    return plan_stack("aws-prod", config_overrides={
        "gpu-platform:gpuPools": pools, "gpu-platform:teams": [{"name": "lab", "quotas": {"efa-0": 1}}]})


def test_every_efa_pool_gets_the_device_plugin(efa_everywhere, tmp_path):
    [release] = [r for r in efa_everywhere.of_type(RELEASE) if r.inputs["chart"] == "aws-efa-k8s-device-plugin"]
    inputs = release.inputs
    package = chart_package(inputs["chart"], inputs["version"])
    assert package.exists(), f"no package of {inputs['chart']} {inputs['version']} in {package.parent}"
    [daemonset] = [d for d in Helm(extract_helm(tmp_path), tmp_path).template(
        package, inputs["name"], inputs["namespace"], inputs["values"]) if d["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    groups = [g.inputs for g in efa_everywhere.of_type(NODE_GROUP) if g.inputs["nodeGroupName"] != "system"]
    assert sorted(g["instanceTypes"][0] for g in groups) == EFA_TYPES
    unscheduled = [g["instanceTypes"][0] for g in groups
                   if not schedulable(pod, {**g["labels"], INSTANCE_TYPE: g["instanceTypes"][0]})]
    assert unscheduled == []
