"""AWS facts: the EKS row of the cloud table, its regions and `cluster.aws` keys, and the EFA fabric record.
Free of Pulumi and the AWS SDK (config validation reads it)."""
from __future__ import annotations

import ipaddress
import re

from components.clouds.facts import (API_EFFECTS, ArnPartition, CloudProfile, ExtraKey, Fabric, GpuImage,
                                     NcclTestImage, NetworkTopology, PoolNaming, created_network_cidr, minors)
from components.pins import PINS


def _vpc_size(net: ipaddress.IPv4Network) -> str | None:
    # AWS allows /16 at most; /22 still leaves a /24 of node and pod addresses per AZ (the VPC CNI gives pods VPC IPs).
    if not 16 <= net.prefixlen <= 22:
        return f"must be a /16 to /22 network; got /{net.prefixlen}"
    return None


_vpc_cidr = created_network_cidr("10.0.0.0/16", _vpc_size)


_IAM_PRINCIPAL = re.compile(r"arn:aws(-cn|-us-gov)?:iam::\d{12}:(role|user)/[\w+=,.@/-]+")
_IAM_PRINCIPAL_FORMS = ("arn:aws:iam::<12-digit account>:role/<name>, arn:aws:iam::<account>:user/<name> "
                        "(partitions aws, aws-cn, aws-us-gov)")


def _iam_principals(value: list) -> str | None:
    bad = [v for v in value if not isinstance(v, str) or not _IAM_PRINCIPAL.fullmatch(v)]
    if not bad:
        return None
    sessions = [v for v in bad if isinstance(v, str) and ":assumed-role/" in v]
    hint = "; an STS assumed-role ARN names one session, give the role's own ARN" if sessions else ""
    return f"must list IAM role or user ARNs ({_IAM_PRINCIPAL_FORMS}); not: {', '.join(map(repr, bad))}{hint}"


def _subnet_ids(value: list) -> str | None:
    if not all(isinstance(v, str) and v.startswith("subnet-") for v in value):
        return f"must list subnet ids (subnet-...); got {value!r}"
    # EKS places control plane interfaces in at least two AZs.
    return None if len(value) >= 2 else f"must list at least two subnets in different AZs; got {len(value)}"


def _aws_zones(value: list) -> str | None:
    if not 1 <= len(value) <= 3 or len(set(value)) != len(value) or not all(isinstance(z, str) and z for z in value):
        return f"must list one to three distinct availability zone names, e.g. [us-east-1a, us-east-1b]; got {value!r}"
    return None


def _capacity_blocks(value: dict) -> str | None:
    for pool, block in value.items():
        if (not isinstance(block, dict) or set(block) != {"reservationId", "availabilityZone"}
                or not str(block.get("reservationId", "")).startswith("cr-")
                or not isinstance(block.get("availabilityZone"), str) or not block["availabilityZone"].strip()):
            return (f"{pool}: must be {{reservationId: cr-..., availabilityZone: <zone>}} "
                    f"(the Capacity Block bought for that pool); got {block!r}")
    return None


def _block_zones(value: dict) -> list[tuple[str, str]]:
    return [(f"{pool}.availabilityZone", block["availabilityZone"]) for pool, block in value.items()
            if isinstance(block, dict) and isinstance(block.get("availabilityZone"), str)]


# EKS GPU AMIs (REFERENCE section 1). Bottlerocket ships its own NVIDIA device plugin: these labels keep the GPU
# Operator's operands off its nodes, or the operator's plugin crash-loops (awslabs/ai-on-eks#78).
_EKS_GPU_IMAGES = {
    # Karpenter's al2023/bottlerocket aliases resolve to the NVIDIA variant of the AMI on GPU instance types.
    "AL2023_x86_64_NVIDIA": GpuImage(image_volume="/dev/xvda", karpenter_alias="al2023"),
    # Bottlerocket keeps its OS on /dev/xvda and containers on a separate data volume.
    "BOTTLEROCKET_x86_64_NVIDIA": GpuImage(
        image_volume="/dev/xvdb", karpenter_alias="bottlerocket",
        labels={f"nvidia.com/gpu.deploy.{operand}": "false"
                for operand in ("device-plugin", "driver", "mig-manager", "container-toolkit")},
        sharing_modes=("none",),
        note="Bottlerocket's own device plugin serves whole GPUs; MIG and sharing need the GPU Operator's "
             "mig-manager and device plugin, which are off on Bottlerocket",
    ),
}


# EKS's public regions on REGIONS_AS_OF, with its China and GovCloud ones.
_REGIONS = (
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "af-south-1", "ap-east-1", "ap-east-2", "ap-south-1",
    "ap-south-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-southeast-1", "ap-southeast-2",
    "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-6", "ap-southeast-7", "ca-central-1",
    "ca-west-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2",
    "eu-west-3", "il-central-1", "me-central-1", "me-south-1", "mx-central-1", "sa-east-1",
    "cn-north-1", "cn-northwest-1", "us-gov-east-1", "us-gov-west-1",
)


# AWS's EFA test image (aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests): CUDA, the EFA installer,
# aws-ofi-nccl, NCCL, nccl-tests built with MPI, Open MPI and sshd. Pinned: `latest` moves. EKS pools without EFA run
# it too: with NCCL_NET=Socket its libfabric plugin stays unused. Its Open MPI is the EFA installer's, under
# /opt/amazon/openmpi (NVIDIA/aicr validators/performance/cre_fabric.go runs this tag's mpirun from there).
_AWS_NCCL_TESTS = NcclTestImage(
    image="public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9",
    binary="/opt/nccl-tests/build/all_reduce_perf",
    source="AWS's nccl-tests image, aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests",
    mpirun="/opt/amazon/openmpi/bin/mpirun")


# EFA on EKS (EKS user guide "device-management-efa"): the EFA device plugin advertises vpc.amazonaws.com/efa, one per
# interface. The chart only schedules on the instance types it lists: v0.5.30 is the first pin listing p6-b200.48xlarge
# (tests/clouds/test_fabric_efa_render.py renders it against every EFA type of the catalog).
# FI_PROVIDER=efa makes libfabric (and the aws-ofi-nccl plugin NCCL loads) fail instead of falling back to TCP;
# FI_EFA_USE_DEVICE_RDMA=1 turns on GPUDirect RDMA, which p4d and later support.
_EFA = Fabric(name="efa", resource="vpc.amazonaws.com/efa", chart="aws-efa-k8s-device-plugin",
              repository="https://aws.github.io/eks-charts", version=PINS["aws-efa-k8s-device-plugin"].version,
              namespace="kube-system",
              env=(("FI_PROVIDER", "efa"), ("FI_EFA_USE_DEVICE_RDMA", "1"), ("NCCL_DEBUG", "INFO")))


PROFILE = CloudProfile(
    name="aws",
    service="EKS",
    cluster_resource_suffix="eks",
    taint_effects=API_EFFECTS,
    # The GPU Operator cannot own the driver on Amazon Linux (NVIDIA/gpu-operator#686): the EKS GPU AMI does.
    driver_owners=("managed",),
    default_driver="managed",
    # EKS allows 63 characters; EksCluster prefixes GPU node group names with "gpu-" (4).
    pool_naming=PoolNaming(max_len=59, pattern=r"[A-Za-z0-9][A-Za-z0-9_-]{0,58}"),
    default_system_instance="m6i.2xlarge",
    # EKS user guide "kubernetes-versions", endoflife.date/amazon-eks: new clusters on any version in standard or
    # extended support; 1.32 extended to 2027-03-23, 1.33 to 2027-07-29, 1.34 to 2027-12-02, 1.35 standard to
    # 2027-03-27; 1.36 has been on EKS since about June 2026 (kubernetes/autoscaler#9985).
    kubernetes_versions=minors("1.32", "1.33", "1.34", "1.35", "1.36"),
    # CreateCluster's version is a minor ("1.35"); EKS picks the patch itself.
    kubernetes_version_form="minor",
    regions=_REGIONS,
    extras={
        "vpcId": ExtraKey(str, "existing VPC id; omit to create a private VPC", requires=("subnetIds",),
                          check=lambda v: None if v.startswith("vpc-") else f"must be a VPC id (vpc-...); got {v!r}"),
        "subnetIds": ExtraKey(list, "existing private subnet ids (two or more AZs)", check=_subnet_ids),
        "vpcCidr": ExtraKey(str, "CIDR of the VPC created when vpcId is omitted", check=_vpc_cidr),
        "amiType": ExtraKey(str, "GPU node AMI type: AL2023_x86_64_NVIDIA (default) or BOTTLEROCKET_x86_64_NVIDIA",
                            choices=tuple(_EKS_GPU_IMAGES)),
        # Pinned zones keep every subnet where it is whatever the region offers later (network.py).
        "zones": ExtraKey(list, "AZs of the VPC this platform creates, in order (default: the region's first "
                                "three); a reserved pool's AZ outside them gets a subnet of its own",
                          check=_aws_zones, conflicts=("subnetIds",)),
        "provisioner": ExtraKey(str, "who makes GPU nodes: cluster-autoscaler (default; managed node groups) or "
                                     "karpenter (a Karpenter NodePool and EC2NodeClass per GPU pool)",
                                choices=("cluster-autoscaler", "karpenter")),
        "capacityBlocks": ExtraKey(dict, "per reserved pool: {reservationId, availabilityZone} of its EC2 "
                                         "Capacity Block for ML", check=_capacity_blocks, zones=_block_zones),
    },
    driver_note="the EKS GPU AMI owns driver and toolkit; the operator cannot install the driver on Amazon Linux, NVIDIA/gpu-operator#686",
    gpu_images=_EKS_GPU_IMAGES,
    gpu_image_key="amiType",
    # Reserved GPU capacity on EC2 is a Capacity Block for ML; managed node groups take it as CAPACITY_BLOCK.
    capacity_types={"on-demand": "ON_DEMAND", "spot": "SPOT", "reserved": "CAPACITY_BLOCK"},
    # A CAPACITY_BLOCK node group launches only through a launch template naming the block (EKS user guide,
    # capacity-blocks-mng), in the block's AZ.
    reservations_key="capacityBlocks",
    # Managed node groups have no autoscaling of their own: only min/max bounds for the Cluster Autoscaler.
    autoscaler="cluster-autoscaler",
    provisioner_key="provisioner",
    # Capacity Blocks (reserved pools) need Karpenter's capacityReservationSelectorTerms, not built here: they stay
    # on managed node groups, so a Karpenter stack refuses them.
    provisioner_unsupported_capacity=("reserved",),
    # Karpenter 1.14.1 (components/provisioning/karpenter/) supports Kubernetes up to 1.36 (its compatibility
    # matrix); on a newer cluster its controller refuses to reconcile node classes ("karpenter version is not
    # compatible with K8s version", aws/karpenter-provider-aws#7127).
    provisioner_kubernetes_versions=("1.32", "1.33", "1.34", "1.35", "1.36"),
    # EFA is built into managed node groups' launch templates (efa.py); the EC2NodeClasses carry none of it.
    provisioner_refuses_fabric=True,
    provisioner_fabric_note="the platform builds EFA interfaces, their security group and the cluster placement "
                            "group into managed node groups' launch templates, and its EC2NodeClasses carry "
                            "none of them",
    # The Cluster Autoscaler's AWS GPU label: nodes carrying it count as unready until GPUs are advertised.
    autoscaler_gpu_label="k8s.amazonaws.com/accelerator",
    # The managed node group API rejects these label prefixes (InvalidParameterException, eksctl#4007).
    reserved_label_domains=("kubernetes.io", "k8s.io", "eks.amazonaws.com"),
    # The EKS AL2023 NVIDIA AMI ships the container toolkit with the driver (REFERENCE section 1), as does Bottlerocket.
    image_ships_toolkit=True,
    # publicAccessCidrs govern the public endpoint only; the private one follows the cluster security group.
    authorized_networks_public_only=True,
    # No IPv6 in publicAccessCidrs: EKS takes IPv6 CIDRs only on IPv6-family clusters, and ours are IPv4.
    authorized_networks_ipv6=False,
    # EKS knows IAM principals, not Kubernetes groups: an access entry per principal names the groups it joins.
    team_principals=ExtraKey(list, "IAM role or user ARNs whose sessions join the team's groups (EKS access "
                                   "entries)", check=_iam_principals),
    region_pattern=r"(us|eu|ap|sa|ca|me|af|il|mx|cn)(-gov|-iso[a-z]?)?-(north|south|east|west|central|northeast|"
                   r"southeast|northwest|southwest)-\d",
    # China and GovCloud regions (EKS runs in both) are partitions of their own: an arn:aws: policy does not
    # exist there, and China's EC2 service principal has its own domain (eksctl's ServicePrincipalPartitionMap).
    arn_partitions=(
        ArnPartition("aws-cn", "cn-", ec2_principal="ec2.amazonaws.com.cn"),
        ArnPartition("aws-us-gov", "us-gov-"),
        ArnPartition("aws-iso", "us-iso-"),
        ArnPartition("aws-iso-b", "us-isob-"),
        ArnPartition("aws-iso-f", "us-isof-"),
        ArnPartition("aws-iso-e", "eu-isoe-"),
        ArnPartition("aws", ""),
    ),
    region_example="us-east-1",
    # EKS CreateCluster takes 1-100 characters, upper case and underscores included.
    cluster_name_pattern=r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}",
    cluster_name_doc="EKS cluster names are 1-100 letters, digits, '-' and '_', starting with a letter or digit",
    # EKS GPU node groups get EFA interfaces, a cluster placement group and the EFA device plugin (efa.py).
    fabrics={"efa": _EFA},
    nccl_test=_AWS_NCCL_TESTS,
    instance_type_pattern=r"[a-z][a-z0-9-]*\.[a-z0-9]+",
    instance_type_example="m6i.2xlarge",
    zone_pattern="{region}[a-z]",
    # EKS service quota "nodes per managed node group".
    max_pool_nodes=450,
    # EKS labels nodes with their EC2 instance topology network nodes (EKS user guide ml-workload-topology), on
    # the types DescribeInstanceTopology supports (EC2 ec2-instance-topology-prerequisites). p6-b200's topology
    # has a 4th layer below layer-3, labelled on its nodes only: its pools get a Topology of their own with it, so
    # Kueue packs a job under one layer-4 node, not just one layer-3 node.
    network_topology=NetworkTopology(
        levels=("topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
                "topology.k8s.aws/network-node-layer-3"),
        instance_types=r"p4de?\.24xlarge|p5e?n?\.48xlarge|p6-b200\.48xlarge|g6e\.\w+",
        deeper_level="topology.k8s.aws/network-node-layer-4", deeper_instance_types=r"p6-b200\.48xlarge"),
)
