"""Helpers the policy tests share (moved out of the test modules that defined them)."""
from __future__ import annotations

import copy
import dataclasses
import json
from datetime import date, timedelta

import pytest

from components.config.model import Policy
from gpu_platform.engine.plan import Plan
from gpu_platform.policy.runner import evaluate
from policies import context
from policies.exemptions import read_policy
from policies.rules import BY_ID

from policy_fixtures import TODAY, ids, inputs, load, run
from support.plans import shared_plan


def base_plan(stack: str) -> dict:
    return json.loads(json.dumps(shared_plan(stack).to_json()))


def editable(plan: Plan) -> Plan:
    """A copy of a plan whose resource inputs a test may change without touching the module's shared plan."""
    return dataclasses.replace(plan, resources=[dataclasses.replace(r, inputs=copy.deepcopy(r.inputs))
                                                for r in plan.resources])


def rule_findings(plan: Plan, rule: str, environment: str) -> list[tuple[str, str]]:
    """(resource, message) of each finding one rule makes on a plan, under the default policy."""
    report = evaluate(plan, context.build(environment, Policy()), [BY_ID[rule]])
    return [(f.resource, f.message) for f in report.findings]


def only_rule_fails(plan: dict, rule: str, expected: str) -> None:
    """`rule` alone fails the plan, with `expected` in one of its findings."""
    report = run(plan, rule, environment=None)
    assert ids(report) == [rule]
    assert any(expected in f.message for f in report.findings), [f.message for f in report.findings]


LONG_REASON = "capacity reservation migration, owned by the platform team (PLAT-123)"


QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"


def second_team_on_time_sliced_pool(plan):
    flavors = inputs(plan, QUEUE, "kueue-queue-applied")["spec"]["resourceGroups"][0]["flavors"]
    flavors.append({"name": "l4-notebooks", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 4}]})


POOL = "gpu-platform:cluster:GpuNodePool"


def untaint(plan):
    inputs(plan, POOL, "ml-prod-h100-train")["taints"] = []


RELEASE = "kubernetes:helm.sh/v3:Release"


def operator(plan):
    return inputs(plan, RELEASE, "gpu-operator-release")["values"]


def mps_on_shared_pool(plan):
    second_team_on_time_sliced_pool(plan)
    inputs(plan, POOL, "ml-prod-l4-notebooks")["sharing"]["mode"] = "mps"
    data = operator(plan)["devicePlugin"]["config"]["data"]
    data["l4-notebooks"] = data["l4-notebooks"].replace("timeSlicing", "mps")


STACK = "dev"


def entry(type_: str, name: str, inputs: dict) -> dict:
    return {"custom": True, "inputs": inputs, "name": name, "type": type_, "parent": "",
            "urn": f"urn:pulumi:{STACK}::gpu-platform::{type_}::{name}",
            "options": {"dependsOn": [], "ignoreChanges": [], "protect": False}}


def public_endpoint(plan):
    inputs(plan, "aws:eks/cluster:Cluster")["vpcConfig"]["endpointPublicAccess"] = True


def two_driver_owners(plan):
    operator(plan)["driver"]["enabled"] = True


def exempted(reason: str = LONG_REASON, resource_glob: str = "ml-prod-h100-*",
             expires: date = TODAY + timedelta(days=90), max_days: int | None = None):
    plan = load("aws-prod")
    untaint(plan)
    raw = {"exemptions": [{"rule": "GPU001", "resource": resource_glob, "reason": reason, "expires": expires}]}
    if max_days is not None:
        raw["maxExemptionDays"] = max_days
    return evaluate(Plan.from_json(plan), context.build("production", read_policy(raw), TODAY),
                    [BY_ID["GPU000"], BY_ID["GPU001"]])


@pytest.fixture(scope="module")
def oci_plan():
    return shared_plan("oci-prod").to_json()
