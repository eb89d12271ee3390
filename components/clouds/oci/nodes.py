"""OKE node pools: placement over availability domains, preemptible capacity, and taints through cloud-init."""
from __future__ import annotations

import base64
from collections.abc import Sequence

import pulumi
import pulumi_oci.containerengine as ce

from components.config.model import Taint

# OKE's own node bootstrap, fetched from instance metadata; a custom cloud-init must run it or nodes never join.
_OKE_INIT = ('curl --fail -H "Authorization: Bearer Oracle" -L0 '
             "http://169.254.169.254/opc/v2/instance/metadata/oke_init_script | base64 --decode >/var/run/oke-init.sh")
# A custom cloud-init replaces OKE's default one, which grows the root filesystem into a boot volume larger than
# the image: Oracle's documented custom cloud-init runs oci-growfs first, or the extra space stays unused.
_GROW_ROOT = "/usr/libexec/oci-growfs -y"
# Flex shapes need an explicit size; 4 OCPUs (8 vCPUs) and 32 GB match the other clouds' system nodes.
SYSTEM_SHAPE_CONFIG = ce.NodePoolNodeShapeConfigArgs(ocpus=4, memory_in_gbs=32)
# CUDA and framework images are 10-20 GB each: OKE's 50 GB default boot volume fills after a few pulls (the same
# size EKS GPU nodes get).
GPU_BOOT_VOLUME_GB = 200

# The cluster's and every node pool's CNI (oci.py says why flannel).
POD_NETWORK = "FLANNEL_OVERLAY"


def register_with_taints(taints: Sequence[Taint], effects: dict[str, str]) -> str:
    """The kubelet flag that taints a node as it registers, in the kubelet's `key=value:Effect` spelling."""
    return "--register-with-taints=" + ",".join(f"{t.key}={t.value}:{effects[t.effect]}" for t in taints)


def cloud_init(kubelet_args: str) -> str:
    """Base64 user data that grows the root filesystem, then runs OKE's init script with extra kubelet flags.

    OKE node pools have no taint field (oracle/terraform-provider-oci#1504): the kubelet must taint its own node
    when it registers, so no pod lands before the taint exists.
    """
    script = ("#!/bin/bash\n"
              "set -euo pipefail\n"
              f"{_GROW_ROOT}\n"
              f"{_OKE_INIT}\n"
              f'bash /var/run/oke-init.sh --kubelet-extra-args "{kubelet_args}"\n')
    return base64.b64encode(script.encode()).decode()


def placements(ads: pulumi.Input[list[str]], subnet_id: pulumi.Input[str],
               preemptible: bool) -> pulumi.Output[list[ce.NodePoolNodeConfigDetailsPlacementConfigArgs]]:
    """One placement per availability domain; spot pools ask for preemptible capacity in each."""
    # Preemptible instances are reclaimed with notice; TERMINATE without keeping the boot volume leaves nothing
    # billed behind, and the autoscaler replaces the node if the pods are still pending.
    preempt = ce.NodePoolNodeConfigDetailsPlacementConfigPreemptibleNodeConfigArgs(
        preemption_action=ce.NodePoolNodeConfigDetailsPlacementConfigPreemptibleNodeConfigPreemptionActionArgs(
            type="TERMINATE", is_preserve_boot_volume=False)) if preemptible else None
    return pulumi.Output.all(ads, subnet_id).apply(lambda args: [
        ce.NodePoolNodeConfigDetailsPlacementConfigArgs(availability_domain=ad, subnet_id=args[1],
                                                        preemptible_node_config=preempt)
        for ad in args[0]])


def node_pool(name: str, pool_name: str, *, cluster: ce.Cluster, compartment: str, version: str, shape: str, image: str,
              size: int, ads: pulumi.Input[list[str]], node_subnet: pulumi.Input[str],
              labels: dict[str, str], kubelet_args: str | None, preemptible: bool = False,
              shape_config: ce.NodePoolNodeShapeConfigArgs | None = None, boot_volume_gb: int | None = None,
              opts: pulumi.ResourceOptions) -> ce.NodePool:
    """An OKE node pool on flannel overlay pod networking, sized by the Cluster Autoscaler after creation.

    A larger boot volume needs kubelet_args: only that cloud-init grows the filesystem into it.
    """
    metadata = None
    if kubelet_args:
        metadata = {
            "user_data": cloud_init(kubelet_args),
            # The OCI Cluster Autoscaler reads the pool's taints from this key to build its scale-from-zero
            # template (cloudprovider/oci/nodepools/registered_taints.go); user_data alone is opaque to it.
            "kubelet-extra-args": kubelet_args,
        }
    return ce.NodePool(
        name,
        cluster_id=cluster.id,
        compartment_id=compartment,
        name=pool_name,
        kubernetes_version=version,
        node_shape=shape,
        node_shape_config=shape_config,
        node_source_details=ce.NodePoolNodeSourceDetailsArgs(
            source_type="IMAGE", image_id=image,
            boot_volume_size_in_gbs=str(boot_volume_gb) if boot_volume_gb else None),
        node_config_details=ce.NodePoolNodeConfigDetailsArgs(
            size=size,
            placement_configs=placements(ads, node_subnet, preemptible),
            node_pool_pod_network_option_details=ce.NodePoolNodeConfigDetailsNodePoolPodNetworkOptionDetailsArgs(
                cni_type=POD_NETWORK),
        ),
        initial_node_labels=[ce.NodePoolInitialNodeLabelArgs(key=k, value=v) for k, v in labels.items()],
        node_metadata=metadata,
        # The Cluster Autoscaler owns the size after creation; Pulumi must not reset it on the next `up`.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["nodeConfigDetails.size"])),
    )
