"""EKS managed node groups: the system group, GPU groups, and the hints that let the Cluster Autoscaler scale from zero."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws.autoscaling as autoscaling
import pulumi_aws.ec2 as ec2
import pulumi_aws.eks as eks

from components.clouds.aws import efa
from components.clouds.base import GpuNodePool
from components.config.labels import LABEL_PREFIX
from components.clouds.facts import CloudProfile, GpuImage
from components.clouds.aws.facts import PROFILE
from components.config.capacity import GPU_RESOURCE
from components.config.model import GpuPool, PlatformConfig, Taint
from components.system_pool import SYSTEM_TAINT

GPU_NODE_GROUP_PREFIX = "gpu-"  # keeps GPU node groups apart from "system" whatever the pools are called
SYSTEM_NODE_GROUP = "system"
SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
NODE_TEMPLATE = "k8s.io/cluster-autoscaler/node-template/"
# The autoscaler owns the node count between min and max; applying the stack again must not reset it.
AUTOSCALED = ["scalingConfig.desiredSize"]
# A node group's name is fixed and unique in its cluster, so a replacement cannot create the new group first.
NODE_GROUP_OPTS = pulumi.ResourceOptions(ignore_changes=AUTOSCALED, delete_before_replace=True)
# CUDA and framework images are 10-20 GB each: EKS's 20 GiB default root volume fills after one pull.
GPU_DISK_GIB = 200
# Our own AWS tag keys: EC2 refuses `/` in instance tag keys once instance tags are in the metadata service, and EKS
# then refuses node group tags with it too; `/` keys stay Kubernetes labels.
TAG_PREFIX = f"{LABEL_PREFIX}:"
# IMDSv2 with a hop limit of 1 answers processes on the node only, not pods behind its network namespace, so pods
# cannot take the node role's credentials (they use IRSA). Instance tags stay out of the metadata service whatever the
# account default says: with them in, EC2 refuses the `/` tags EKS puts on every node (kubernetes.io/cluster/<name>,
# k8s.io/cluster-autoscaler/enabled) and the group never launches a node.
METADATA_OPTIONS = {"http_endpoint": "enabled", "http_tokens": "required", "http_put_response_hop_limit": 1,
                    "instance_metadata_tags": "disabled"}


def scaling(min_nodes: int, max_nodes: int) -> dict[str, int]:
    """Bounds for the autoscaler; the group starts at its minimum."""
    return {"min_size": min_nodes, "max_size": max_nodes, "desired_size": min_nodes}


def gpu_node_labels(pool: GpuNodePool, image: GpuImage, profile: CloudProfile) -> dict[str, str]:
    """The pool's labels, those its image needs, and the autoscaler's GPU label when it advertises whole-GPU units.

    Under mixed MIG a node never advertises nvidia.com/gpu, and the autoscaler would count a labelled node as
    unready for good.
    """
    labels = {**pool.labels, **image.labels}
    if profile.autoscaler_gpu_label and GPU_RESOURCE in pool.advertised:
        labels[profile.autoscaler_gpu_label] = f"nvidia-{pool.args.gpu_model.lower()}"
    return dict(sorted(labels.items()))


def node_template_tags(labels: dict[str, str], taints: tuple[Taint, ...], advertised: dict[str, int]) -> dict[str, str]:
    """Auto Scaling group tags that describe a node before one exists (autoscaler AWS README, scaling from 0)."""
    tags = {f"{NODE_TEMPLATE}label/{key}": value for key, value in labels.items()}
    tags.update({f"{NODE_TEMPLATE}taint/{t.key}": f"{t.value}:{t.effect}" for t in taints})
    tags.update({f"{NODE_TEMPLATE}resources/{name}": str(count) for name, count in advertised.items()})
    return tags


def system_node_group(name: str, config: PlatformConfig, cluster: eks.Cluster, node_role_arn: pulumi.Input[str],
                      subnet_ids: list, opts: pulumi.ResourceOptions) -> eks.NodeGroup:
    """The pool for cluster add-ons and platform controllers, tainted so team pods stay off it."""
    system = config.cluster.system_pool
    template = ec2.LaunchTemplate(f"{name}-system-launch-template", metadata_options=METADATA_OPTIONS, opts=opts)
    return eks.NodeGroup(
        f"{name}-system", cluster_name=cluster.name, node_group_name=SYSTEM_NODE_GROUP, node_role_arn=node_role_arn,
        subnet_ids=subnet_ids, instance_types=[system.instance_type], ami_type=SYSTEM_AMI_TYPE,
        capacity_type="ON_DEMAND", version=cluster.version,
        scaling_config=scaling(system.min_nodes, system.max_nodes),
        labels={f"{LABEL_PREFIX}/node-role": SYSTEM_NODE_GROUP}, launch_template=template_ref(template),
        # EKS managed node groups carry taints themselves (updated in place).
        taints=[{"key": SYSTEM_TAINT.key, "value": SYSTEM_TAINT.value,
                 "effect": PROFILE.taint_effects[SYSTEM_TAINT.effect]}],
        # A second group named "system" cannot exist beside the first: a replacement (a new instance type) must
        # delete the old group first, and system pods wait for the new one (plan --diff warns).
        opts=pulumi.ResourceOptions.merge(opts, NODE_GROUP_OPTS))


def template_ref(template: ec2.LaunchTemplate) -> dict[str, Any]:
    """A node group's reference to a launch template: EKS rolls the group when the version changes."""
    return {"id": template.id, "version": template.latest_version.apply(str)}


def gpu_launch_template(name: str, pool: GpuNodePool, image: GpuImage, reservation_id: str | None,
                        fabric: dict[str, Any], opts: pulumi.ResourceOptions) -> ec2.LaunchTemplate:
    """A GPU pool's launch template: metadata locked down, room for CUDA images, the pool's EFA interfaces and
    placement (`fabric`, efa.py) and, for a Capacity Block, the block's instance type and reservation (a
    CAPACITY_BLOCK node group launches only through such a template)."""
    disk = {"device_name": image.image_volume, "ebs": {
        "volume_size": GPU_DISK_GIB, "volume_type": "gp3", "encrypted": "true", "delete_on_termination": "true"}}
    block: dict[str, Any] = {}
    if reservation_id:
        block = {"instance_type": pool.args.instance_type, "instance_market_options": {"market_type": "capacity-block"},
                 "capacity_reservation_specification": {
                     "capacity_reservation_target": {"capacity_reservation_id": reservation_id}}}
    return ec2.LaunchTemplate(
        f"{name}-launch-template", metadata_options=METADATA_OPTIONS, block_device_mappings=[disk], **block, **fabric,
        # Capacity Block templates existed under this name before every pool had one; the alias keeps their node
        # groups on the same template (a new one would replace the group).
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            aliases=[pulumi.Alias(name=f"{name}-capacity-block")] if reservation_id else None)))


def gpu_node_group(name: str, pool: GpuNodePool, spec: GpuPool, config: PlatformConfig, profile: CloudProfile,
                   image_type: str, cluster: eks.Cluster, node_role_arn: pulumi.Input[str], subnet_ids: Any,
                   opts: pulumi.ResourceOptions) -> tuple[eks.NodeGroup, pulumi.Output[str]]:
    """One GPU pool's managed node group and its node-template tags; returns the group and its ASG name."""
    image = profile.gpu_images[image_type]
    labels = gpu_node_labels(pool, image, profile)
    capacity_type = profile.capacity_types[spec.capacity_type]
    reservation_id = (config.cluster.extras[profile.reservations_key][spec.name]["reservationId"]
                      if spec.capacity_type == "reserved" else None)
    fabric = (efa.efa_launch_settings(name, spec, cluster, reservation_id is not None, opts)
              if spec.fabric == "efa" else {})
    template = gpu_launch_template(name, pool, image, reservation_id, fabric, opts)
    # A Capacity Block's template names the instance type; EKS rejects it on the group as well.
    placement = {} if reservation_id else {"instance_types": [spec.instance_type]}
    tags = {f"{TAG_PREFIX}pool": spec.name}
    if spec.instance.interconnect:
        # What the type offers, attached or not (gpuPools[].fabric decides).
        tags[f"{TAG_PREFIX}interconnect"] = spec.instance.interconnect
    group = eks.NodeGroup(
        f"{name}-nodegroup", cluster_name=cluster.name, node_group_name=GPU_NODE_GROUP_PREFIX + spec.cloud_name,
        node_role_arn=node_role_arn, subnet_ids=subnet_ids, ami_type=image_type, capacity_type=capacity_type,
        version=cluster.version, scaling_config=scaling(spec.min_nodes, spec.max_nodes), labels=labels,
        taints=[{"key": t.key, "value": t.value, "effect": profile.taint_effects[t.effect]} for t in pool.taints],
        # One GPU node at a time: a rolling update never takes more than one node's GPUs away.
        update_config={"max_unavailable": 1}, tags=tags, launch_template=template_ref(template), **placement,
        # Node group names are unique in a cluster, so a replacement created first would fail on the name: the old
        # group goes first (plan --diff names every such replacement before it happens).
        opts=pulumi.ResourceOptions.merge(opts, NODE_GROUP_OPTS))
    asg_name = group.resources.apply(lambda resources: resources[0].autoscaling_groups[0].name)
    for key, value in node_template_tags(labels, pool.taints, pool.advertised).items():
        autoscaling.Tag(f"{name}-asg-{key.removeprefix(NODE_TEMPLATE)}", autoscaling_group_name=asg_name,
                        # The only tag keys we create with `/`: the autoscaler reads node templates from these keys on
                        # the group alone. Never propagated, they never become instance tags, the only tags the
                        # metadata-service key rule applies to.
                        tag={"key": key, "value": value, "propagate_at_launch": False},
                        # Derived from the pool's labels and taints and recreated from them at will: unprotected, so
                        # renaming a label (a tag delete) works in production.
                        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=False)))
    return group, asg_name
