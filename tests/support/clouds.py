"""Helpers the clouds tests share (moved out of the test modules that defined them)."""
from __future__ import annotations

from gpu_platform.engine.plan import read_stack_config

from support.paths import ROOT


# The parts of the Karpenter v1 CRDs these objects use, with their required fields, enums and patterns, as read from
# aws/karpenter-provider-aws pkg/apis/crds/karpenter.sh_nodepools.yaml (commit 004b39bd) and
# karpenter.k8s.aws_ec2nodeclasses.yaml (commit 0276ddd6), unchanged for these fields at v1.14.1 (which
# test_objects_match_the_pinned_release_crds checks against its full CRDs). Closed objects (additionalProperties false)
# where we model every field we set, so a misspelt field fails; the CEL rules are checked by the tests below instead.
_LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
_DURATION = r"^(([0-9]+(s|m|h))+)|(Never)$"
_TAINT = {"type": "object", "required": ["effect", "key"], "additionalProperties": False, "properties": {
    "effect": {"enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
    "key": {"type": "string", "minLength": 1}, "value": {"type": "string"}}}
NODE_POOL_SPEC = {"type": "object", "required": ["template"], "additionalProperties": False, "properties": {
    "disruption": {"type": "object", "required": ["consolidateAfter"], "additionalProperties": False, "properties": {
        "budgets": {"type": "array", "maxItems": 50, "items": {
            "type": "object", "required": ["nodes"], "properties": {
                "nodes": {"type": "string", "pattern": r"^((100|[0-9]{1,2})%|[0-9]+)$"}}}},
        "consolidateAfter": {"type": "string", "pattern": _DURATION},
        "consolidationPolicy": {"enum": ["WhenEmpty", "WhenEmptyOrUnderutilized"]}}},
    "limits": {"type": "object", "additionalProperties": {"type": ["string", "integer"]}},
    "weight": {"type": "integer", "minimum": 1, "maximum": 100},
    "template": {"type": "object", "required": ["spec"], "additionalProperties": False, "properties": {
        "metadata": {"type": "object", "properties": {"labels": {
            "type": "object", "maxProperties": 100,
            "additionalProperties": {"type": "string", "maxLength": 63, "pattern": _LABEL_VALUE}}}},
        "spec": {"type": "object", "required": ["nodeClassRef", "requirements"], "additionalProperties": False,
                 "properties": {
                     "expireAfter": {"type": "string", "pattern": _DURATION},
                     "nodeClassRef": {"type": "object", "required": ["group", "kind", "name"],
                                      "additionalProperties": False, "properties": {
                                          "group": {"type": "string", "minLength": 1, "pattern": r"^[^/]*$"},
                                          "kind": {"type": "string", "minLength": 1},
                                          "name": {"type": "string", "minLength": 1}}},
                     "requirements": {"type": "array", "maxItems": 100, "items": {
                         "type": "object", "required": ["key", "operator"], "additionalProperties": False,
                         "properties": {"key": {"type": "string", "maxLength": 316},
                                        "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]},
                                        "values": {"type": "array", "items": {
                                            "type": "string", "maxLength": 63, "pattern": _LABEL_VALUE}}}}},
                     "taints": {"type": "array", "items": _TAINT},
                     "startupTaints": {"type": "array", "items": _TAINT}}}}}}}


def integral(value):
    """The plan's JSON numbers are floats; the CRD's integers are whole numbers."""
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return int(value) if isinstance(value, float) and value.is_integer() else value


def by_pool(plan, type_):
    """Karpenter objects of one type by the GPU pool they are for (their names are gpu-<pool>)."""
    return {r.inputs["metadata"]["name"].removeprefix("gpu-"): r for r in plan.of_type(type_)}


def assert_node_pools_follow(plan, node_pool_type: str, cluster: str, *first: str) -> None:
    """Each Karpenter NodePool sits under its GpuNodePool and depends on its NodeClass and on the resources `first`."""
    urns = {r.name: r.urn for r in plan.resources}
    for pool, node_pool in by_pool(plan, node_pool_type).items():
        assert node_pool.parent.endswith(f"GpuNodePool::{cluster}-{pool}")
        deps = node_pool.options.get("dependsOn", [])
        for name in (*first, f"karpenter-{pool}-node-class"):
            assert urns[name] in deps, name


def karpenter_cluster(**aws):
    raw = read_stack_config(ROOT / "stacks" / "Pulumi.aws-dev.yaml")
    return {"gpu-platform:cluster": {**raw["gpu-platform:cluster"], "aws": {"provisioner": "karpenter", **aws}}}


# Existing network, Bottlerocket, a Capacity Block pool: everything the example stacks do not exercise.
EXISTING = """\
config:
  gpu-platform:cloud: aws
  gpu-platform:environment: development
  gpu-platform:cluster:
    name: ml-lab
    region: eu-west-1
    authorizedNetworks: [203.0.113.0/24]
    aws:
      vpcId: vpc-0abc
      subnetIds: [subnet-0aaa, subnet-0bbb, subnet-0ccc]
      amiType: BOTTLEROCKET_x86_64_NVIDIA
      capacityBlocks:
        h100-block: {reservationId: cr-0123456789abcdef0, availabilityZone: eu-west-1b}
  gpu-platform:gpuPools:
    - {name: l40s, instanceType: g6e.12xlarge, maxNodes: 2, capacityType: spot, workload: inference}
    - {name: h100-block, instanceType: p5.48xlarge, minNodes: 2, maxNodes: 2, capacityType: reserved}
  gpu-platform:teams:
    - {name: lab, quotas: {l40s: 8, h100-block: 16}}
"""


# Created VPC with a Capacity Block zone, and a mixed MIG strategy (one layout with several profiles).
MIXED = {
    "gpu-platform:cluster": {"name": "ml-mixed", "region": "us-east-1", "aws": {
        "capacityBlocks": {"h100-block": {"reservationId": "cr-0fedcba9876543210", "availabilityZone": "us-east-1b"}}}},
    "gpu-platform:gpuPools": [
        {"name": "a100-balanced", "instanceType": "p4de.24xlarge", "maxNodes": 2, "workload": "inference",
         "sharing": {"mode": "mig", "migProfile": "all-balanced"}},
        {"name": "h100-slices", "instanceType": "p5.48xlarge", "maxNodes": 2, "workload": "inference",
         "sharing": {"mode": "mig", "migProfile": "all-1g.10gb"}},
        {"name": "h100-block", "instanceType": "p5.48xlarge", "minNodes": 1, "maxNodes": 2,
         "capacityType": "reserved"},
    ],
    "gpu-platform:teams": [{"name": "lab", "quotas": {"h100-block": 16}}],
}
