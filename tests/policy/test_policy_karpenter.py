"""GPU001 and GPU008 on Karpenter NodePools: a NodePool that selects GPU instances is a GPU pool, whose
`spec.template.spec.taints` must keep other pods off and be tolerated by the GPU Operator."""
from __future__ import annotations

import copy
import dataclasses

import pytest

from policies.shapes import KARPENTER

from support.clouds import karpenter_cluster
from support.plans import plan_fixture
from support.policy import editable, rule_findings

NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"

compliant = plan_fixture("aws-dev", karpenter_cluster())


@pytest.fixture
def plan(compliant):
    """A copy of the compliant plan to change one field in."""
    return editable(compliant)


def findings(plan, rule):
    return rule_findings(plan, rule, "development")


def node_pool(plan, pool="l4-dev"):
    return next(r for r in plan.of_type(NODE_POOL) if r.inputs["metadata"]["name"] == f"gpu-{pool}")


@pytest.mark.parametrize("rule", ["GPU001", "GPU008", "GPU010"])
def test_compliant_karpenter_stack_passes(compliant, rule):
    assert findings(compliant, rule) == []


def test_gpu001_names_a_node_pool_without_the_gpu_taint(plan):
    target = node_pool(plan)
    spec = target.inputs["spec"]["template"]["spec"]
    spec["taints"] = [t for t in spec["taints"] if t["key"] != "nvidia.com/gpu"]
    ((resource, message),) = findings(plan, "GPU001")
    assert resource == target.name
    assert "Karpenter GPU pool (g6.xlarge)" in message
    assert "{key: nvidia.com/gpu, value: present, effect: NoSchedule} to spec.template.spec.taints" in message


def test_gpu001_refuses_prefer_no_schedule_on_a_node_pool(plan):
    target = node_pool(plan, "a10g-train")
    target.inputs["spec"]["template"]["spec"]["taints"][0]["effect"] = "PreferNoSchedule"
    ((resource, message),) = findings(plan, "GPU001")
    assert resource == target.name and "PreferNoSchedule" in message


def test_gpu001_checks_a_gpu_node_pool_outside_the_pool_component(plan):
    """A NodePool someone adds next to ours, selecting GPU families and untainted, is a GPU pool too."""
    template = node_pool(plan)
    stray = dataclasses.replace(template, urn=template.urn.replace("karpenter-l4-dev-node-pool", "stray"),
                                name="stray", parent=plan.resources[0].parent, inputs=copy.deepcopy(template.inputs))
    stray.inputs["metadata"]["name"] = "stray"
    stray.inputs["spec"]["template"]["spec"]["requirements"] = [
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["p5", "g6e"]}]
    stray.inputs["spec"]["template"]["spec"]["taints"] = []
    plan.resources.append(stray)
    ((resource, message),) = findings(plan, "GPU001")
    assert resource == "stray" and "it has no nvidia.com/gpu taint" in message


@pytest.mark.parametrize("requirement, gpu", [
    ({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]}, True),
    ({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.2xlarge"]}, False),
    ({"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "g"]}, True),
    ({"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]}, False),
    ({"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["p4de"]}, True),
    ({"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]}, True),
    ({"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["0"]}, False),
    ({"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "Exists"}, True),
    ({"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "DoesNotExist"}, False),
])
def test_which_node_pools_are_gpu_pools(requirement, gpu):
    props = {"spec": {"template": {"spec": {"requirements": [requirement]}}}}
    assert KARPENTER.gpu(props) is gpu


def test_gpu008_includes_node_pool_taints(plan):
    """A taint set on the NodePool only (not in gpuPools[].taints) is one the operator was never told about."""
    target = node_pool(plan, "a10g-train")
    target.inputs["spec"]["template"]["spec"]["taints"].append(
        {"key": "dedicated", "value": "ml", "effect": "NoSchedule"})
    found = findings(plan, "GPU008")
    assert found and all("'a10g-train'" in message and "dedicated=ml:NoSchedule" in message for _, message in found)
