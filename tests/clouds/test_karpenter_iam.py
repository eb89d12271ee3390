"""Karpenter's controller policy against the release's own: every grant of the getting-started CloudFormation
(../shared/upstream/karpenter/v1.14.1/cloudformation.yaml) is ours with the same or stricter conditions, and we grant
nothing it does not."""
from __future__ import annotations

import fnmatch
import json
import re

import pytest
import yaml

from gpu_platform.engine import plan_stack

from support.clouds import karpenter_cluster
from support.paths import upstream

REFERENCE = "karpenter/v1.14.1/cloudformation.yaml"
# The template's parameters and attributes, as the offline plan of aws-dev names them.
SUBSTITUTIONS = {"AWS::Partition": "aws", "AWS::Region": "us-west-2", "AWS::AccountId": "000000000000",
                 "AWS::URLSuffix": "amazonaws.com", "ClusterName": "ml-dev",
                 "KarpenterNodeRole.Arn": "arn:aws:iam::000000000000:role/ml-dev-node"}
# No interruption queue is created (docs/autoscaling.md): the controller runs without one, so it gets no SQS rights.
NOT_GRANTED = {"AllowInterruptionQueueActions"}


class _CloudFormation(yaml.SafeLoader):
    """The template's short-form intrinsics: !Sub keeps its string, !Ref and !GetAtt their target."""


for _tag in ("!Sub", "!Ref", "!GetAtt"):
    _CloudFormation.add_constructor(_tag, lambda loader, node: loader.construct_scalar(node))


def reference_statements() -> list[dict]:
    """The controller policies' statements (every KarpenterController* managed policy), parameters substituted."""
    template = yaml.load(upstream(REFERENCE).read_text(), Loader=_CloudFormation)
    statements = []
    for resource in template["Resources"].values():
        props = resource.get("Properties", {})
        if (resource["Type"] == "AWS::IAM::ManagedPolicy"
                and props["ManagedPolicyName"].startswith("KarpenterController")):
            document = re.sub(r"\$\{([^}]+)\}", lambda m: SUBSTITUTIONS.get(m.group(1), m.group(0)),
                              props["PolicyDocument"])
            statements += json.loads(document)["Statement"]
    return statements


def listed(value) -> list:
    return value if isinstance(value, list) else [value]


def grants(statements: list[dict]) -> list[tuple[str, str, str, dict]]:
    """(sid, action, resource, {(operator, key): set of values}) for every action-resource pair allowed."""
    out = []
    for s in statements:
        assert s["Effect"] == "Allow"
        conditions = {(op, key): set(listed(values)) for op, pairs in s.get("Condition", {}).items()
                      for key, values in pairs.items()}
        out += [(s["Sid"], a, r, conditions) for a in listed(s["Action"]) for r in listed(s["Resource"])]
    return out


def at_least_as_strict(ours: dict, theirs: dict) -> bool:
    """Every condition of theirs is ours too, with the same operator and no value theirs does not allow."""
    return all(key in ours and ours[key] <= values for key, values in theirs.items())


@pytest.fixture(scope="module")
def ours() -> list[dict]:
    plan = plan_stack("aws-dev", config_overrides=karpenter_cluster())
    policy = next(r for r in plan.of_type("aws:iam/rolePolicy:RolePolicy") if r.name == "ml-dev-karpenter")
    # The offline engine's cluster ARN names no region (components/clouds/aws/offline.py); EKS's names the cluster's.
    return json.loads(policy.inputs["policy"].replace(":eks:offline:", ":eks:us-west-2:"))["Statement"]


def test_every_reference_grant_is_ours_with_its_conditions(ours):
    reference = [s for s in reference_statements() if s["Sid"] not in NOT_GRANTED]
    assert len(reference) >= 15, "the template's controller policies were not found"
    missing = [(sid, action, resource) for sid, action, resource, conditions in grants(reference)
               if not any(a == action and r == resource and at_least_as_strict(c, conditions)
                          for _, a, r, c in grants(ours))]
    assert missing == []


def test_we_grant_nothing_the_reference_does_not(ours):
    reference = grants(reference_statements())
    extra = [(sid, action, resource) for sid, action, resource, _ in grants(ours)
             if not any(a == action and fnmatch.fnmatchcase(resource, r) for _, a, r, _ in reference)]
    assert extra == []


def test_instance_profiles_are_those_karpenter_tags_with_their_node_class(ours):
    """The tag Karpenter puts on instance profiles it creates: conditioning on any other denies CreateInstanceProfile
    and every EC2NodeClass stays not ready."""
    create = next(s for s in ours if "iam:CreateInstanceProfile" in listed(s["Action"]))
    assert create["Condition"]["StringLike"] == {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}
    assert any(s["Action"] == "iam:ListInstanceProfiles" for s in ours)
