"""Each cloud's spelling of taints, spot and driver ownership, read from the real plans of the example stacks."""
from __future__ import annotations

import base64

import pytest

from gpu_platform.policy.runner import evaluate
from policies import context
from components.config.model import Policy
from policies.rules import BY_ID
from policies.taints import Taint, kubelet_taints, taint_from_string, tolerates

from support.plans import shared_plan

NODE_POOLS = {"azure-prod": "azure-native:containerservice:AgentPool", "gcp-prod": "gcp:container/nodePool:NodePool",
              "oci-prod": "oci:ContainerEngine/nodePool:NodePool"}


@pytest.fixture(scope="module")
def plans():
    return {stack: shared_plan(stack) for stack in NODE_POOLS}


def gpu_node_pool(plan, stack):
    return next(r for r in plan.resources if r.type == NODE_POOLS[stack] and "h100-train" in r.name)


def gpu001(plan):
    report = evaluate(plan, context.build("production", Policy()), [BY_ID["GPU001"]])
    return [(f.resource, f.message) for f in report.findings]


def test_example_pools_are_tainted_on_every_cloud(plans):
    assert all(gpu001(plan) == [] for plan in plans.values())


@pytest.mark.parametrize("stack, field, untainted, spelling", [
    ("azure-prod", "nodeTaints", ["sku=gpu:NoSchedule"], '"nvidia.com/gpu=present:NoSchedule" to nodeTaints'),
    ("gcp-prod", "nodeConfig.taints", [], "{key: nvidia.com/gpu, value: present, effect: NO_SCHEDULE} to nodeConfig.taints"),
    ("oci-prod", "nodeMetadata.user_data", base64.b64encode(b"#!/bin/bash\nbash /var/run/oke-init.sh\n").decode(),
     "--register-with-taints=nvidia.com/gpu=present:NoSchedule to nodeMetadata.user_data"),
])
def test_untainted_cloud_pool_is_named_in_its_own_spelling(plans, stack, field, untainted, spelling):
    plan = plans[stack]
    target = gpu_node_pool(plan, stack)
    original = target.inputs
    holder = target.inputs = {**original}
    *parents, last = field.split(".")
    for step in parents:
        holder[step] = {**holder[step]}
        holder = holder[step]
    holder[last] = untainted
    try:
        ((resource, message),) = gpu001(plan)
    finally:
        target.inputs = original
    assert resource == target.name and spelling in message


def test_kubelet_flag_parsing():
    script = base64.b64encode(b'bash oke-init.sh --kubelet-extra-args "--register-with-taints=a=b:NoSchedule,c:NoExecute"').decode()
    assert kubelet_taints(script) == [Taint("a", "b", "NoSchedule"), Taint("c", "", "NoExecute")]
    assert kubelet_taints("not base64!") is None


@pytest.mark.parametrize("toleration, tolerated", [
    ({"key": "sku", "operator": "Exists", "effect": "NoSchedule"}, True),
    ({"key": "sku", "operator": "Equal", "value": "gpu"}, True),
    ({"key": "sku", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"}, False),
    ({"operator": "Exists"}, True),
    ({"key": "sku", "operator": "Exists", "effect": "NoExecute"}, False),
])
def test_toleration_matching(toleration, tolerated):
    assert tolerates(toleration, taint_from_string("sku=gpu:NoSchedule")) is tolerated
