"""What the offline engine answers for AWS: the outputs EKS, IAM, KMS and EC2 compute that the program reads back, the
invokes it makes, real zone names per region, and the inputs whose change replaces a resource. Plain data, no Pulumi."""
from __future__ import annotations

from components.clouds.facts import OfflineFacts

# Zone names are the region plus a letter; not every letter exists (ap-northeast-1 has no "b"). China (partition
# aws-cn) and GovCloud (aws-us-gov) too; cn-north-1 has no "c".
_ZONE_LETTERS = {
    "us-east-1": "abcdef", "us-east-2": "abc", "us-west-2": "abcd", "eu-west-1": "abc", "eu-central-1": "abc",
    "eu-north-1": "abc", "ap-northeast-1": "acd", "ap-southeast-2": "abc",
    "cn-north-1": "abd", "cn-northwest-1": "abc", "us-gov-west-1": "abc", "us-gov-east-1": "abc",
}

OFFLINE = OfflineFacts(
    zones={region: tuple(f"{region}{z}" for z in letters) for region, letters in _ZONE_LETTERS.items()},
    fallback_zones=lambda region: tuple(f"{region}{z}" for z in "abc"),
    computed={
        "aws:eks/cluster:Cluster": lambda name, inputs: {
            "endpoint": f"https://{name}.gr7.offline.eks.amazonaws.com",
            "certificateAuthority": {"data": "T0ZGTElORQ=="},
            "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.offline.amazonaws.com/id/{name.upper()}"}]}],
            "arn": f"arn:aws:eks:offline:000000000000:cluster/{inputs.get('name', name)}",
            # EKS creates the cluster security group and reads the VPC from the subnets (EFA security groups use both).
            "vpcConfig": {**(inputs.get("vpcConfig") or {}), "vpcId": f"vpc-offline-{name}",
                          "clusterSecurityGroupId": f"sg-offline-{name}"},
        },
        "aws:iam/role:Role": lambda name, _: {"arn": f"arn:aws:iam::000000000000:role/{name}"},
        "aws:iam/openIdConnectProvider:OpenIdConnectProvider": lambda name, _: {
            "arn": f"arn:aws:iam::000000000000:oidc-provider/{name}"},
        "aws:eks/nodeGroup:NodeGroup": lambda name, _: {
            "resources": [{"autoscalingGroups": [{"name": f"eks-{name}-asg"}]}]},
        "aws:kms/key:Key": lambda name, _: {"arn": f"arn:aws:kms:offline:000000000000:key/{name}"},
        "aws:ec2/launchTemplate:LaunchTemplate": lambda name, _: {"latestVersion": 1},
    },
    invokes={
        "aws:index/getCallerIdentity:getCallerIdentity": lambda _: {
            "accountId": "000000000000", "arn": "arn:aws:iam::000000000000:user/offline", "userId": "offline",
            "id": "0"},
        # Offline every subnet id lies in the zone asked for: the first id named answers.
        "aws:ec2/getSubnets:getSubnets": lambda args: {
            "ids": [v for f in args.get("filters", []) if f["name"] == "subnet-id" for v in f["values"]][:1],
            "id": "s"},
    },
    zone_invokes={
        "aws:index/getAvailabilityZones:getAvailabilityZones": lambda names, _: {
            "names": list(names), "zoneIds": [f"offline-az{i}" for i, _ in enumerate(names, 1)], "id": "zones"},
    },
    replace_on_changes={
        # terraform-provider-aws internal/service/eks/node_group.go: ForceNew on these; labels, taints, tags,
        # scalingConfig, updateConfig, version and launchTemplate.version update in place.
        "aws:eks/nodeGroup:NodeGroup": (
            "amiType", "capacityType", "clusterName", "diskSize", "instanceTypes", "launchTemplate.id",
            "launchTemplate.name", "nodeGroupName", "nodeGroupNamePrefix", "nodeRoleArn", "remoteAccess", "subnetIds",
        ),
        # terraform-provider-aws internal/service/autoscaling/group_tag.go: a tag belongs to one group under one key;
        # its value and propagateAtLaunch update in place.
        "aws:autoscaling/tag:Tag": ("autoscalingGroupName", "tag.key"),
        # terraform-provider-aws internal/service/ec2/vpc_subnet.go: a subnet cannot move between AZs, CIDRs or VPCs.
        "aws:ec2/subnet:Subnet": ("availabilityZone", "availabilityZoneId", "cidrBlock", "vpcId"),
        # terraform-provider-aws internal/service/ec2/vpc.go: a VPC's primary CIDR is fixed.
        "aws:ec2/vpc:Vpc": ("cidrBlock",),
        # terraform-provider-aws internal/service/eks/cluster.go: name and role are fixed for a cluster's life.
        "aws:eks/cluster:Cluster": ("name", "roleArn"),
    },
    node_pool_types=("aws:eks/nodeGroup:NodeGroup",),
)
