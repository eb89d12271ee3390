"""IAM for EKS: the cluster and node roles, and IRSA roles for in-cluster controllers such as the Cluster Autoscaler."""
from __future__ import annotations

import json
from typing import Callable

import pulumi
import pulumi_aws.iam as iam

from components.autoscaling.values import NAMESPACE as AUTOSCALER_NAMESPACE
from components.autoscaling.values import SERVICE_ACCOUNT as AUTOSCALER_SERVICE_ACCOUNT

Opts = Callable[..., pulumi.ResourceOptions]

MANAGED_POLICY = "arn:aws:iam::aws:policy/{}"
CLUSTER_POLICIES = ("AmazonEKSClusterPolicy",)
NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryReadOnly",  # pull EKS add-on and ECR images
    "AmazonEKS_CNI_Policy",  # the VPC CNI runs with the node role unless given its own IRSA role
    "AmazonSSMManagedInstanceCore",  # shell access to GPU nodes without SSH keys or open ports
)
# EKS tags every managed node group's Auto Scaling group with these, which the autoscaler discovers them by.
AUTODISCOVERY_TAG = "k8s.io/cluster-autoscaler/{}"
AUTODISCOVERY_ENABLED_TAG = "k8s.io/cluster-autoscaler/enabled"


def service_trust(service: str) -> str:
    """A trust policy that lets one AWS service assume the role."""
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]})


def service_role(name: str, service: str, policies: tuple[str, ...], opts: Opts
                 ) -> tuple[iam.Role, list[iam.RolePolicyAttachment]]:
    """A role for an AWS service with AWS-managed policies attached (as separate resources, so they can be waited on)."""
    role = iam.Role(name, assume_role_policy=service_trust(service), opts=opts())
    attachments = [iam.RolePolicyAttachment(f"{name}-{policy}", role=role.name,
                                            policy_arn=MANAGED_POLICY.format(policy), opts=opts())
                   for policy in policies]
    return role, attachments


def irsa_trust(provider_arn: str, issuer: str, namespace: str, service_account: str) -> str:
    """A trust policy for exactly one Kubernetes service account through the cluster's OIDC provider."""
    host = issuer.removeprefix("https://")
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Principal": {"Federated": provider_arn},
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {"StringEquals": {f"{host}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                                       f"{host}:aud": "sts.amazonaws.com"}},
    }]})


def autoscaler_policy(cluster_name: str, cluster_arn: str) -> str:
    """The Cluster Autoscaler's permissions (autoscaler AWS README, auto-discovery policy), scoped to this cluster.

    Describe calls cannot be limited by resource tags, so they stay on "*"; the two calls that change capacity
    only reach Auto Scaling groups EKS tagged as this cluster's.
    """
    nodegroups = cluster_arn.replace(":cluster/", ":nodegroup/", 1) + "/*/*"
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "Discover", "Effect": "Allow", "Resource": "*", "Action": [
            "autoscaling:DescribeAutoScalingGroups",
            "autoscaling:DescribeAutoScalingInstances",
            "autoscaling:DescribeLaunchConfigurations",
            "autoscaling:DescribeScalingActivities",
            "ec2:DescribeImages",
            "ec2:DescribeInstanceTypes",
            "ec2:DescribeLaunchTemplateVersions",
            "ec2:GetInstanceTypesFromInstanceRequirements",
        ]},
        # Labels and taints of node groups at zero nodes, straight from EKS.
        {"Sid": "NodeGroups", "Effect": "Allow", "Resource": nodegroups, "Action": ["eks:DescribeNodegroup"]},
        {"Sid": "Scale", "Effect": "Allow", "Resource": "*",
         "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
         "Condition": {"StringEquals": {f"aws:ResourceTag/{AUTODISCOVERY_TAG.format(cluster_name)}": "owned"}}},
    ]})


def autoscaler_role(name: str, cluster_name: pulumi.Output[str], cluster_arn: pulumi.Output[str],
                    issuer: pulumi.Output[str], oidc: iam.OpenIdConnectProvider, opts: Opts) -> iam.Role:
    """The Cluster Autoscaler's IRSA role: only its service account may assume it."""
    trust = pulumi.Output.all(oidc.arn, issuer).apply(
        lambda a: irsa_trust(a[0], a[1], AUTOSCALER_NAMESPACE, AUTOSCALER_SERVICE_ACCOUNT))
    role = iam.Role(name, assume_role_policy=trust, opts=opts())
    iam.RolePolicy(name, role=role.id, name="cluster-autoscaler",
                   policy=pulumi.Output.all(cluster_name, cluster_arn).apply(lambda a: autoscaler_policy(*a)),
                   opts=opts())
    return role
