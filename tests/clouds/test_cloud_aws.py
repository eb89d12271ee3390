"""EKS: network, IAM, control plane, managed node groups, Cluster Autoscaler IRSA and scale-from-zero ASG tags."""
from __future__ import annotations

import ipaddress
import json

import pulumi
import pytest
import yaml

from components.clouds.aws.cluster import EksCluster, kubeconfig
from components.clouds.aws.network import pick_zones, subnet_cidrs
from components.clouds import PROFILES
from components.config import ConfigError, load_from_pulumi, validate
from components.config.capacity import mig_strategy, pool_units
from gpu_platform.engine.plan import PROJECT_ROOT, read_stack_config, run_program

from support.clouds import EXISTING, MIXED
from support.plans import one, plan_file_fixture, plan_fixture

CLUSTER = "aws:eks/cluster:Cluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ASG_TAG = "aws:autoscaling/tag:Tag"
GPU_NODE_POOL = "gpu-platform:cluster:GpuNodePool"
NODE_TEMPLATE = "k8s.io/cluster-autoscaler/node-template/"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
SPOT_TAINT = {"key": "gpu-platform.io/spot", "value": "true", "effect": "NO_SCHEDULE"}
BOTTLEROCKET_LABELS = {f"nvidia.com/gpu.deploy.{o}": "false"
                       for o in ("device-plugin", "driver", "mig-manager", "container-toolkit")}


prod = plan_fixture("aws-prod")
dev = plan_fixture("aws-dev")
existing = plan_file_fixture("Pulumi.aws-lab.yaml", EXISTING)
mixed = plan_fixture("aws-prod", MIXED)


def gpu_groups(plan):
    return {r.inputs["nodeGroupName"]: r for r in plan.of_type(NODE_GROUP) if r.inputs["nodeGroupName"] != "system"}


def pool_tags(plan, cluster, pool):
    """The ASG tags of one pool, as key -> value, checking every tag targets that pool's ASG."""
    tags = {}
    for r in plan.of_type(ASG_TAG):
        if r.name.startswith(f"{cluster}-{pool}-asg-"):
            assert r.inputs["autoscalingGroupName"] == f"eks-{cluster}-{pool}-nodegroup-asg"
            assert r.inputs["tag"]["propagateAtLaunch"] is False
            tags[r.inputs["tag"]["key"]] = r.inputs["tag"]["value"]
    return tags


def of_kind(tags, kind):
    return {k.removeprefix(f"{NODE_TEMPLATE}{kind}/"): v for k, v in tags.items() if k.startswith(f"{NODE_TEMPLATE}{kind}/")}


# --- node groups ---------------------------------------------------------------------------------------------

def test_gpu_node_groups_are_children_of_gpu_node_pools(prod):
    groups = gpu_groups(prod)
    assert sorted(groups) == ["gpu-a100-infer", "gpu-h100-train", "gpu-l4-notebooks"]
    for pool in ("h100-train", "a100-infer", "l4-notebooks"):
        assert groups[f"gpu-{pool}"].parent == one(prod, GPU_NODE_POOL, f"ml-prod-{pool}").urn
        assert groups[f"gpu-{pool}"].inputs["clusterName"] == "ml-prod"


def test_every_gpu_node_group_is_tainted_no_schedule(prod, dev, existing):
    for plan in (prod, dev, existing):
        for name, group in gpu_groups(plan).items():
            assert group.inputs["taints"][0] == GPU_TAINT, name
            assert all(t["effect"] in ("NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE") for t in group.inputs["taints"])
            spot = group.inputs["capacityType"] == "SPOT"
            assert (SPOT_TAINT in group.inputs["taints"]) == spot, name


def test_system_node_group_is_tainted_for_platform_pods_on_demand(prod):
    system = one(prod, NODE_GROUP, "ml-prod-system")
    assert system.inputs["taints"] == [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}]
    assert system.inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert system.inputs["instanceTypes"] == ["m6i.2xlarge"]
    assert system.inputs["scalingConfig"] == {"minSize": 2, "maxSize": 4, "desiredSize": 2}


def test_ami_and_capacity_types(prod, dev, existing):
    assert {n: (g.inputs["amiType"], g.inputs["capacityType"]) for n, g in gpu_groups(prod).items()} == {
        "gpu-h100-train": ("AL2023_x86_64_NVIDIA", "ON_DEMAND"),
        "gpu-a100-infer": ("AL2023_x86_64_NVIDIA", "ON_DEMAND"),
        "gpu-l4-notebooks": ("AL2023_x86_64_NVIDIA", "SPOT"),
    }
    assert {n: g.inputs["capacityType"] for n, g in gpu_groups(dev).items()} == {
        "gpu-l4-dev": "SPOT", "gpu-a10g-train": "ON_DEMAND"}
    assert {n: (g.inputs["amiType"], g.inputs["capacityType"]) for n, g in gpu_groups(existing).items()} == {
        "gpu-l40s": ("BOTTLEROCKET_x86_64_NVIDIA", "SPOT"),
        "gpu-h100-block": ("BOTTLEROCKET_x86_64_NVIDIA", "CAPACITY_BLOCK"),
    }


def test_instance_types_and_disk(prod):
    groups = gpu_groups(prod)
    assert groups["gpu-h100-train"].inputs["instanceTypes"] == ["p5.48xlarge"]
    assert groups["gpu-l4-notebooks"].inputs["instanceTypes"] == ["g6.12xlarge"]
    assert groups["gpu-h100-train"].inputs["tags"]["gpu-platform.io:interconnect"] == "efa"


def test_scaling_config_leaves_desired_size_to_the_autoscaler(prod, dev):
    for plan in (prod, dev):
        for group in plan.of_type(NODE_GROUP):
            cfg = group.inputs["scalingConfig"]
            assert cfg["desiredSize"] == cfg["minSize"] <= cfg["maxSize"]
            assert group.options["ignoreChanges"] == ["scalingConfig.desiredSize"]
    groups = gpu_groups(prod)
    assert groups["gpu-h100-train"].inputs["scalingConfig"] == {"minSize": 0, "maxSize": 4, "desiredSize": 0}
    assert groups["gpu-a100-infer"].inputs["scalingConfig"] == {"minSize": 1, "maxSize": 2, "desiredSize": 1}


def test_labels_are_the_pool_labels_plus_the_autoscaler_gpu_label(prod):
    groups = gpu_groups(prod)
    for pool in ("h100-train", "a100-infer", "l4-notebooks"):
        labels = groups[f"gpu-{pool}"].inputs["labels"]
        pool_labels = one(prod, GPU_NODE_POOL, f"ml-prod-{pool}").inputs["labels"]
        assert labels == {**pool_labels, "k8s.amazonaws.com/accelerator": labels["k8s.amazonaws.com/accelerator"]}
        assert labels["gpu-platform.io/pool"] == pool
    assert groups["gpu-h100-train"].inputs["labels"]["k8s.amazonaws.com/accelerator"] == "nvidia-h100-80gb"
    assert groups["gpu-l4-notebooks"].inputs["labels"]["gpu-platform.io/sharing"] == "time-slicing"
    assert not any(k.startswith("nvidia.com/gpu.deploy.") for g in groups.values() for k in g.inputs["labels"])


def test_bottlerocket_nodes_keep_the_operator_operands_off(existing):
    for name, group in gpu_groups(existing).items():
        labels = group.inputs["labels"]
        assert {k: labels[k] for k in BOTTLEROCKET_LABELS} == BOTTLEROCKET_LABELS, name
        assert of_kind(pool_tags(existing, "ml-lab", name.removeprefix("gpu-")), "label") == labels


def test_node_groups_follow_the_cluster_and_node_role_policies(prod):
    cluster = one(prod, CLUSTER, "ml-prod-eks")
    grants = {r.urn for r in prod.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
              if r.name.startswith("ml-prod-node-")}
    assert len(grants) == 4
    for group in prod.of_type(NODE_GROUP):
        assert cluster.urn in group.options["dependsOn"]
        assert grants <= set(group.options["dependsOn"])
        assert group.inputs["version"] == "1.35"


def test_node_group_names_fit_eks_limit():
    naming = PROFILES["aws"].pool_naming
    assert len("gpu-" + naming.derive("a" * 80)) == 63
    assert naming.valid(naming.derive("h100-train"))


# --- control plane -------------------------------------------------------------------------------------------

def test_production_cluster_is_private_protected_encrypted(prod):
    cluster = one(prod, CLUSTER, "ml-prod-eks")
    assert cluster.options["protect"] is True
    assert one(prod, "gpu-platform:aws:EksCluster", "ml-prod").options["protect"] is True
    assert all(g.options["protect"] for g in prod.of_type(NODE_GROUP))
    vpc = cluster.inputs["vpcConfig"]
    assert (vpc["endpointPrivateAccess"], vpc["endpointPublicAccess"]) == (True, False)
    assert "publicAccessCidrs" not in vpc
    key = one(prod, "aws:kms/key:Key", "ml-prod-secrets")
    assert key.inputs["enableKeyRotation"] is True
    assert cluster.inputs["encryptionConfig"] == {
        "provider": {"keyArn": "arn:aws:kms:offline:000000000000:key/ml-prod-secrets"}, "resources": ["secrets"]}
    assert cluster.inputs["accessConfig"] == {"authenticationMode": "API_AND_CONFIG_MAP",
                                              "bootstrapClusterCreatorAdminPermissions": True}
    assert cluster.inputs["enabledClusterLogTypes"] == ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    assert (cluster.inputs["name"], cluster.inputs["version"]) == ("ml-prod", "1.35")


def test_development_cluster_is_public_unprotected(dev, existing):
    cluster = one(dev, CLUSTER, "ml-dev-eks")
    assert cluster.options["protect"] is False
    assert (cluster.inputs["vpcConfig"]["endpointPrivateAccess"], cluster.inputs["vpcConfig"]["endpointPublicAccess"]) \
        == (True, True)
    assert "encryptionConfig" not in cluster.inputs and not dev.of_type("aws:kms/key:Key")
    assert cluster.inputs["enabledClusterLogTypes"] == ["api", "audit", "authenticator"]
    lab = one(existing, CLUSTER, "ml-lab-eks")
    assert lab.inputs["vpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24"]


def test_cluster_uses_a_provider_in_the_configured_region(prod, existing):
    assert one(prod, "pulumi:providers:aws", "ml-prod-aws").inputs["region"] == "us-east-1"
    assert one(existing, "pulumi:providers:aws", "ml-lab-aws").inputs["region"] == "eu-west-1"


def test_cluster_and_node_roles(prod):
    trust = {r.name: json.loads(r.inputs["assumeRolePolicy"]) for r in prod.of_type("aws:iam/role:Role")}
    assert trust["ml-prod-cluster"]["Statement"][0]["Principal"] == {"Service": "eks.amazonaws.com"}
    assert trust["ml-prod-node"]["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    attached = {r.name: r.inputs["policyArn"] for r in prod.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")}
    assert attached == {
        "ml-prod-cluster-AmazonEKSClusterPolicy": "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",
        "ml-prod-node-AmazonEKSWorkerNodePolicy": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "ml-prod-node-AmazonEC2ContainerRegistryReadOnly": "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "ml-prod-node-AmazonEKS_CNI_Policy": "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "ml-prod-node-AmazonSSMManagedInstanceCore": "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
    }
    cluster = one(prod, CLUSTER, "ml-prod-eks")
    assert cluster.inputs["roleArn"] == "arn:aws:iam::000000000000:role/ml-prod-cluster"
    assert {r.urn for r in prod.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
            if r.name.startswith("ml-prod-cluster-")} <= set(cluster.options["dependsOn"])


def test_kubeconfig_authenticates_through_aws_eks_get_token():
    config = yaml.safe_load(kubeconfig("ml-prod", "https://x.eks.amazonaws.com", "Q0E=", "us-east-1"))
    assert config["clusters"][0]["cluster"] == {"server": "https://x.eks.amazonaws.com",
                                                "certificate-authority-data": "Q0E="}
    user = config["users"][0]["user"]["exec"]
    assert user["apiVersion"] == "client.authentication.k8s.io/v1beta1" and user["command"] == "aws"
    assert user["args"] == ["eks", "get-token", "--cluster-name", "ml-prod", "--region", "us-east-1", "--output", "json"]
    assert config["current-context"] == "ml-prod"


def test_kubeconfig_output_is_secret(prod):
    assert prod.outputs["kubeconfig"] == "[secret]"
    assert one(prod, "pulumi:providers:kubernetes", "ml-prod-k8s").inputs["kubeconfig"] == "[secret]"


# --- network -------------------------------------------------------------------------------------------------

def test_created_vpc_spans_three_zones_with_eks_subnet_tags(prod):
    assert one(prod, "aws:ec2/vpc:Vpc", "ml-prod-vpc").inputs["cidrBlock"] == "10.40.0.0/16"
    subnets = {r.name: r.inputs for r in prod.of_type("aws:ec2/subnet:Subnet")}
    private = [subnets[f"ml-prod-private-{i}"] for i in range(3)]
    public = [subnets[f"ml-prod-public-{i}"] for i in range(3)]
    # The offline zones of the provider's region.
    assert [s["availabilityZone"] for s in private] == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert all(s["tags"]["kubernetes.io/role/internal-elb"] == "1" for s in private)
    assert all(s["tags"]["kubernetes.io/role/elb"] == "1" for s in public)
    assert [s["cidrBlock"] for s in private] == ["10.40.0.0/18", "10.40.64.0/18", "10.40.128.0/18"]
    nets = [ipaddress.ip_network(s["cidrBlock"]) for s in private + public]
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])
    cluster_subnets = one(prod, CLUSTER, "ml-prod-eks").inputs["vpcConfig"]["subnetIds"]
    assert [s.rsplit("-", 1)[0] for s in cluster_subnets] == [f"ml-prod-private-{i}" for i in range(3)]


def test_one_nat_per_zone_in_production_one_in_development(prod, dev):
    for plan, cluster, nats in ((prod, "ml-prod", [0, 1, 2]), (dev, "ml-dev", [0, 0, 0])):
        assert len(plan.of_type("aws:ec2/natGateway:NatGateway")) == len(set(nats))
        routes = {r.name: r.inputs for r in plan.of_type("aws:ec2/route:Route")}
        assert [routes[f"{cluster}-private-{i}-default"]["natGatewayId"].rsplit("-", 1)[0] for i in range(3)] == \
               [f"{cluster}-nat-{n}" for n in nats]
        assert routes[f"{cluster}-public-default"]["gatewayId"].startswith(f"{cluster}-igw-")
    assert one(dev, "aws:ec2/vpc:Vpc", "ml-dev-vpc").inputs["cidrBlock"] == "10.0.0.0/16"


def test_existing_subnets_create_no_network(existing):
    # Launch templates, and the EFA security group of the (auto-EFA) p5 block pool, are not network.
    created = [r.name for r in existing.resources if r.type.startswith("aws:ec2/")
               and r.type != "aws:ec2/launchTemplate:LaunchTemplate"]
    assert created == ["ml-lab-h100-block-efa"]
    ids = ["subnet-0aaa", "subnet-0bbb", "subnet-0ccc"]
    assert one(existing, CLUSTER, "ml-lab-eks").inputs["vpcConfig"]["subnetIds"] == ids
    assert one(existing, NODE_GROUP, "ml-lab-system").inputs["subnetIds"] == ids
    assert gpu_groups(existing)["gpu-l40s"].inputs["subnetIds"] == ids


def test_subnet_cidrs_split_small_vpcs_too():
    private, public = subnet_cidrs("10.8.0.0/22", 3)
    assert private == ["10.8.0.0/24", "10.8.1.0/24", "10.8.2.0/24"]
    assert public == ["10.8.3.0/27", "10.8.3.32/27", "10.8.3.64/27"]


def test_zones_are_the_regions_first_three_and_capacity_block_zones_come_after():
    # The cluster's zones never depend on pools: a block outside them gets an extra zone at the end.
    assert pick_zones(["a", "b", "c", "d"], []) == (["a", "b", "c"], [])
    assert pick_zones(["a", "b", "c", "d"], ["b"]) == (["a", "b", "c"], [])
    assert pick_zones(["a", "b", "c", "d"], ["d"]) == (["a", "b", "c"], ["d"])
    assert pick_zones(["a", "b"], []) == (["a", "b"], [])
    assert pick_zones(["a", "b", "c", "d"], ["a"], pinned=["d", "b"]) == (["d", "b"], ["a"])
    with pytest.raises(pulumi.RunError, match="availability zone\\(s\\) x not in this region; available: a, b"):
        pick_zones(["a", "b"], ["x"])


# --- reserved capacity ---------------------------------------------------------------------------------------

def test_capacity_block_pool_launches_through_a_template_in_its_zone(mixed, existing):
    group = gpu_groups(mixed)["gpu-h100-block"]
    template = one(mixed, "aws:ec2/launchTemplate:LaunchTemplate", "ml-mixed-h100-block-launch-template")
    assert template.inputs["instanceType"] == "p5.48xlarge"
    assert template.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template.inputs["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0fedcba9876543210"}}
    assert group.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert group.inputs["launchTemplate"]["version"] == "1"
    assert group.inputs["launchTemplate"]["id"].startswith("ml-mixed-h100-block-launch-template-")
    assert "instanceTypes" not in group.inputs and "diskSize" not in group.inputs
    assert [s.rsplit("-", 1)[0] for s in group.inputs["subnetIds"]] == ["ml-mixed-private-1"]  # us-east-1b
    # On existing subnets the block's zone is looked up among them (offline: the first id).
    assert gpu_groups(existing)["gpu-h100-block"].inputs["subnetIds"] == ["subnet-0aaa"]


# --- Cluster Autoscaler --------------------------------------------------------------------------------------

def test_autoscaler_irsa_role_trusts_only_its_service_account(prod):
    role = one(prod, "aws:iam/role:Role", "ml-prod-cluster-autoscaler")
    statement, = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Federated": "arn:aws:iam::000000000000:oidc-provider/ml-prod-oidc"}
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    issuer = one(prod, "aws:iam/openIdConnectProvider:OpenIdConnectProvider", "ml-prod-oidc").inputs["url"]
    host = issuer.removeprefix("https://")
    assert statement["Condition"] == {"StringEquals": {
        f"{host}:sub": "system:serviceaccount:kube-system:cluster-autoscaler", f"{host}:aud": "sts.amazonaws.com"}}


def test_autoscaler_policy_is_scoped_to_the_cluster(prod):
    policy = json.loads(one(prod, "aws:iam/rolePolicy:RolePolicy", "ml-prod-cluster-autoscaler").inputs["policy"])
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    assert set(by_sid) == {"Discover", "NodeGroups", "Scale"}
    assert all(a.split(":")[1].startswith(("Describe", "Get")) for a in by_sid["Discover"]["Action"])
    assert by_sid["NodeGroups"] == {"Sid": "NodeGroups", "Effect": "Allow", "Action": ["eks:DescribeNodegroup"],
                                    "Resource": "arn:aws:eks:offline:000000000000:nodegroup/ml-prod/*/*"}
    assert by_sid["Scale"]["Action"] == ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]
    assert by_sid["Scale"]["Condition"] == {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/ml-prod": "owned"}}
    assert not any("*" in a for s in policy["Statement"] for a in s["Action"])


def test_asg_tags_advertise_exactly_what_the_catalog_and_sharing_give(prod):
    config = validate({k.removeprefix("gpu-platform:"): v for k, v in
                       read_stack_config(PROJECT_ROOT / "stacks" / "Pulumi.aws-prod.yaml").items()
                       if k.startswith("gpu-platform:")})
    strategy = mig_strategy(config.gpu_pools)
    expected = {"h100-train": {"nvidia.com/gpu": "8"},  # 8 H100s, whole
                "a100-infer": {"nvidia.com/gpu": "56"},  # 8 A100s x 7 1g.10gb slices (single strategy)
                "l4-notebooks": {"nvidia.com/gpu": "16"}}  # 4 L4s x 4 time-slicing replicas
    for pool, resources in expected.items():
        assert of_kind(pool_tags(prod, "ml-prod", pool), "resources") == resources
        assert {k: str(v) for k, v in pool_units(config.pool(pool), strategy).items()} == resources


def test_asg_tags_for_mixed_mig_name_each_slice(mixed):
    assert of_kind(pool_tags(mixed, "ml-mixed", "a100-balanced"), "resources") == {
        "nvidia.com/mig-1g.10gb": "16", "nvidia.com/mig-2g.20gb": "8", "nvidia.com/mig-3g.40gb": "8"}
    assert of_kind(pool_tags(mixed, "ml-mixed", "h100-slices"), "resources") == {"nvidia.com/mig-1g.10gb": "56"}
    # Under mixed MIG no node advertises nvidia.com/gpu, so the autoscaler's GPU label would mark nodes unready.
    groups = gpu_groups(mixed)
    assert "k8s.amazonaws.com/accelerator" not in groups["gpu-a100-balanced"].inputs["labels"]
    assert groups["gpu-h100-block"].inputs["labels"]["k8s.amazonaws.com/accelerator"] == "nvidia-h100-80gb"


def test_asg_tags_repeat_node_group_labels_and_taints(prod):
    for name, group in gpu_groups(prod).items():
        tags = pool_tags(prod, "ml-prod", name.removeprefix("gpu-"))
        assert of_kind(tags, "label") == group.inputs["labels"]
        effects = {"NO_SCHEDULE": "NoSchedule"}
        assert of_kind(tags, "taint") == {t["key"]: f"{t['value']}:{effects[t['effect']]}" for t in group.inputs["taints"]}
    spot = of_kind(pool_tags(prod, "ml-prod", "l4-notebooks"), "taint")
    assert spot == {"nvidia.com/gpu": "present:NoSchedule", "gpu-platform.io/spot": "true:NoSchedule"}


def test_autoscaler_values_name_region_cluster_and_role():
    config = read_stack_config(PROJECT_ROOT / "stacks" / "Pulumi.aws-prod.yaml")

    def program():
        platform = load_from_pulumi()
        pulumi.export("values", EksCluster(platform.cluster.name, platform).autoscaler_values())

    _, outputs = run_program("aws-prod", config, program)
    assert outputs["values"] == {
        "cloudProvider": "aws", "awsRegion": "us-east-1", "autoDiscovery": {"clusterName": "ml-prod"},
        "rbac": {"serviceAccount": {"name": "cluster-autoscaler", "annotations": {
            "eks.amazonaws.com/role-arn": "arn:aws:iam::000000000000:role/ml-prod-cluster-autoscaler"}}},
        "expanderPriorities": {
            "20": ["^eks\\-ml\\-prod\\-l4\\-notebooks\\-nodegroup\\-asg$"],
            "10": ["^eks\\-ml\\-prod\\-h100\\-train\\-nodegroup\\-asg$",
                   "^eks\\-ml\\-prod\\-a100\\-infer\\-nodegroup\\-asg$"],
            "1": [".*"],
        },
    }


# --- config --------------------------------------------------------------------------------------------------

def problems(raw):
    with pytest.raises(ConfigError) as info:
        validate(raw)
    return {p.path: p.message for p in info.value.problems}


@pytest.mark.parametrize("aws, path, fragment", [
    ({"amiType": "AL2_x86_64_GPU"}, "cluster.aws.amiType",
     "'AL2_x86_64_GPU' is not allowed; allowed: AL2023_x86_64_NVIDIA, BOTTLEROCKET_x86_64_NVIDIA"),
    ({"amiType": 3}, "cluster.aws.amiType", "must be a str"),
    ({"vpcId": "vpc-1"}, "cluster.aws.subnetIds", "is required with vpcId"),
    ({"vpcId": "sg-1", "subnetIds": ["subnet-1", "subnet-2"]}, "cluster.aws.vpcId", "must be a VPC id"),
    ({"subnetIds": ["subnet-1"]}, "cluster.aws.subnetIds", "at least two subnets"),
    ({"subnetIds": ["subnet-1", "sn-2"]}, "cluster.aws.subnetIds", "must list subnet ids"),
    ({"vpcCidr": "10.0.0.0/8"}, "cluster.aws.vpcCidr", "/16 to /22"),
    ({"vpcCidr": "10.0.0.1/16"}, "cluster.aws.vpcCidr", "is not an IPv4 network"),
    ({"vpcCidr": "8.8.0.0/16"}, "cluster.aws.vpcCidr", "8.8.0.0/16 is not private address space: team pods'"),
    ({"vpcCidr": "172.32.0.0/16"}, "cluster.aws.vpcCidr", "is not private address space"),  # just past 172.16/12
    ({"capacityBlocks": {"h100-train": {"reservationId": "r-1", "availabilityZone": "us-east-1a"}}},
     "cluster.aws.capacityBlocks",
     "h100-train: must be {reservationId: cr-..., availabilityZone: <zone>}"),
    ({"capacityBlocks": {"nope": {"reservationId": "cr-1", "availabilityZone": "us-east-1a"}}},
     "cluster.aws.capacityBlocks.nope",
     "no reserved GPU pool named 'nope'"),
])
def test_bad_aws_block(raw, aws, path, fragment):
    raw["cluster"]["aws"] = aws
    assert fragment in problems(raw)[path]


def test_reserved_pool_needs_its_capacity_block(raw):
    raw["gpuPools"][0]["capacityType"] = "reserved"
    assert problems(raw) == {"gpuPools[0].capacityType": "reserved on EKS needs cluster.aws.capacityBlocks.h100-train "
                                                         "(per reserved pool: {reservationId, availabilityZone} of its "
                                                         "EC2 Capacity Block for ML)"}
    raw["cluster"]["aws"] = {"capacityBlocks": {"h100-train": {"reservationId": "cr-1",
                                                              "availabilityZone": "us-east-1a"}}}
    assert validate(raw).cluster.extras["capacityBlocks"]["h100-train"]["reservationId"] == "cr-1"


def test_bottlerocket_rejects_gpu_sharing(raw):
    raw["cluster"]["aws"] = {"amiType": "BOTTLEROCKET_x86_64_NVIDIA"}
    found = problems(raw)
    assert list(found) == ["gpuPools[1].sharing.mode"]
    assert found["gpuPools[1].sharing.mode"].startswith(
        "mig is not available on cluster.aws.amiType BOTTLEROCKET_x86_64_NVIDIA (Bottlerocket's own device plugin")
    raw["gpuPools"][1]["sharing"] = {"mode": "none"}
    raw["teams"][1]["quotas"] = {"a100-infer": 16}
    assert validate(raw).cluster.extras["amiType"] == "BOTTLEROCKET_x86_64_NVIDIA"


def test_eks_refuses_labels_in_reserved_domains(raw):
    raw["gpuPools"][0]["labels"] = {"node-role.kubernetes.io/gpu": "true", "eks.amazonaws.com/x": "y",
                                    "example.com/k8s.io": "fine", "team": "fine"}
    assert problems(raw) == {
        f"gpuPools[0].labels.{key}": "EKS refuses node labels in kubernetes.io, k8s.io, eks.amazonaws.com "
                                     "(or their subdomains); use your own domain"
        for key in ("node-role.kubernetes.io/gpu", "eks.amazonaws.com/x")}
