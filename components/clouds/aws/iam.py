"""IAM for EKS: the cluster and node roles, and IRSA roles for in-cluster controllers such as the Cluster Autoscaler."""
from __future__ import annotations

import json
from typing import Callable

import pulumi
import pulumi_aws.iam as iam

from components.provisioning.cluster_autoscaler.values import NAMESPACE as AUTOSCALER_NAMESPACE
from components.provisioning.cluster_autoscaler.values import SERVICE_ACCOUNT as AUTOSCALER_SERVICE_ACCOUNT
from components.provisioning.karpenter import component as karpenter

Opts = Callable[..., pulumi.ResourceOptions]

MANAGED_POLICY = "arn:{partition}:iam::aws:policy/{name}"
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


def service_role(name: str, service: str, policies: tuple[str, ...], partition: str, opts: Opts
                 ) -> tuple[iam.Role, list[iam.RolePolicyAttachment]]:
    """A role for an AWS service with AWS-managed policies attached (as separate resources, so they can be waited on)."""
    role = iam.Role(name, assume_role_policy=service_trust(service), opts=opts())
    attachments = [iam.RolePolicyAttachment(f"{name}-{policy}", role=role.name,
                                            policy_arn=MANAGED_POLICY.format(partition=partition, name=policy),
                                            opts=opts())
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




def karpenter_policy(cluster_name: str, cluster_arn: str, region: str, node_role_arn: str) -> str:
    """Karpenter's controller permissions: the controller policies of Karpenter's getting-started CloudFormation
    (aws/karpenter-provider-aws v1.14.1, cloudformation.yaml), without the interruption queue statement (no queue here).

    Everything that launches, tags or deletes is conditioned on the `kubernetes.io/cluster/<name>: owned` and
    `eks:eks-cluster-name` tags Karpenter puts on what it creates, so the role reaches no other cluster's instances,
    templates or instance profiles.
    """
    _, partition, _, _, account, _ = cluster_arn.split(":", 5)
    ec2 = f"arn:{partition}:ec2:{region}"
    profiles = f"arn:{partition}:iam::{account}:instance-profile/*"
    owned = {f"aws:RequestTag/kubernetes.io/cluster/{cluster_name}": "owned",
             "aws:RequestTag/eks:eks-cluster-name": cluster_name}
    owned_resource = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    in_region = {"aws:RequestTag/topology.kubernetes.io/region": region}
    region_resource = {"aws:ResourceTag/topology.kubernetes.io/region": region}
    # The tag Karpenter writes on the instance profiles it creates: a condition on any other tag denies
    # CreateInstanceProfile.
    node_class_tag = "karpenter.k8s.aws/ec2nodeclass"
    created = [f"{ec2}:*:{kind}/*" for kind in ("fleet", "instance", "volume", "network-interface", "launch-template",
                                                 "spot-instances-request")]
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "AllowScopedEC2InstanceAccessActions", "Effect": "Allow",
         "Resource": [f"{ec2}::image/*", f"{ec2}::snapshot/*", f"{ec2}:*:security-group/*", f"{ec2}:*:subnet/*",
                      f"{ec2}:*:capacity-reservation/*", f"{ec2}:*:placement-group/*"],
         "Action": ["ec2:RunInstances", "ec2:CreateFleet"]},
        {"Sid": "AllowScopedEC2LaunchTemplateAccessActions", "Effect": "Allow",
         "Resource": f"{ec2}:*:launch-template/*", "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
         "Condition": {"StringEquals": owned_resource, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}},
        {"Sid": "AllowScopedEC2InstanceActionsWithTags", "Effect": "Allow", "Resource": created,
         "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
         "Condition": {"StringEquals": owned, "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}}},
        {"Sid": "AllowScopedResourceCreationTagging", "Effect": "Allow", "Resource": created, "Action": "ec2:CreateTags",
         "Condition": {"StringEquals": {**owned, "ec2:CreateAction": ["RunInstances", "CreateFleet",
                                                                       "CreateLaunchTemplate"]},
                       "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}}},
        {"Sid": "AllowScopedResourceTagging", "Effect": "Allow", "Resource": f"{ec2}:*:instance/*",
         "Action": "ec2:CreateTags",
         "Condition": {"StringEquals": owned_resource, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                       "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster_name},
                       "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim",
                                                                     "Name"]}}},
        {"Sid": "AllowScopedDeletion", "Effect": "Allow",
         "Resource": [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
         "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
         "Condition": {"StringEquals": owned_resource, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}},
        # Describe calls take no resource or tag condition; they are held to the cluster's region.
        {"Sid": "AllowRegionalReadActions", "Effect": "Allow", "Resource": "*",
         "Action": ["ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances",
                    "ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets"],
         "Condition": {"StringEquals": {"aws:RequestedRegion": region}}},
        {"Sid": "AllowSSMReadActions", "Effect": "Allow",
         "Resource": f"arn:{partition}:ssm:{region}::parameter/aws/service/*", "Action": "ssm:GetParameter"},
        {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
        # Only the platform's node role, and only to EC2 (its service name in the commercial and China partitions).
        {"Sid": "AllowPassingInstanceRole", "Effect": "Allow", "Resource": node_role_arn, "Action": "iam:PassRole",
         "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}}},
        {"Sid": "AllowScopedInstanceProfileCreationActions", "Effect": "Allow", "Resource": profiles,
         "Action": ["iam:CreateInstanceProfile"],
         "Condition": {"StringEquals": {**owned, **in_region},
                       "StringLike": {f"aws:RequestTag/{node_class_tag}": "*"}}},
        {"Sid": "AllowScopedInstanceProfileTagActions", "Effect": "Allow", "Resource": profiles,
         "Action": ["iam:TagInstanceProfile"],
         "Condition": {"StringEquals": {**owned_resource, **region_resource, **owned, **in_region},
                       "StringLike": {f"aws:ResourceTag/{node_class_tag}": "*",
                                      f"aws:RequestTag/{node_class_tag}": "*"}}},
        {"Sid": "AllowScopedInstanceProfileActions", "Effect": "Allow", "Resource": profiles,
         "Action": ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
         "Condition": {"StringEquals": {**owned_resource, **region_resource},
                       "StringLike": {f"aws:ResourceTag/{node_class_tag}": "*"}}},
        # The node-class finalizer and the instance-profile garbage collector list profiles; List takes no resource
        # or tag condition, and without it deleting a pool or the stack waits forever.
        {"Sid": "AllowUnscopedInstanceProfileListAction", "Effect": "Allow", "Resource": "*",
         "Action": "iam:ListInstanceProfiles"},
        {"Sid": "AllowInstanceProfileReadActions", "Effect": "Allow", "Resource": profiles,
         "Action": "iam:GetInstanceProfile"},
        {"Sid": "AllowAPIServerEndpointDiscovery", "Effect": "Allow", "Resource": cluster_arn,
         "Action": "eks:DescribeCluster"},
        # Karpenter avoids zones ARC has shifted this cluster away from.
        {"Sid": "AllowZonalShiftStatusReadOnly", "Effect": "Allow", "Resource": "*",
         "Action": ["arc-zonal-shift:GetManagedResource"],
         "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": cluster_arn}}},
    ]})


def karpenter_role(name: str, cluster_name: pulumi.Output[str], cluster_arn: pulumi.Output[str], region: str,
                   node_role_arn: pulumi.Output[str], issuer: pulumi.Output[str], oidc: iam.OpenIdConnectProvider,
                   opts: Opts) -> tuple[iam.Role, iam.RolePolicy]:
    """Karpenter's IRSA role (only its service account may assume it) and its policy, to be waited on."""
    trust = pulumi.Output.all(oidc.arn, issuer).apply(
        lambda a: irsa_trust(a[0], a[1], karpenter.NAMESPACE, karpenter.SERVICE_ACCOUNT))
    role = iam.Role(name, assume_role_policy=trust, opts=opts())
    policy = iam.RolePolicy(name, role=role.id, name="karpenter-controller",
                            policy=pulumi.Output.all(cluster_name, cluster_arn, node_role_arn).apply(
                                lambda a: karpenter_policy(a[0], a[1], region, a[2])),
                            opts=opts())
    return role, policy
