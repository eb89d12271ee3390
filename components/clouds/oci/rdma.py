"""OKE RDMA pools: a cluster network of bare-metal GPU nodes that join the cluster as self-managed nodes, as Oracle's
oci-hpc-oke quickstart builds them (terraform-oci-oke modules/workers clusternetworks.tf and instanceconfig.tf).

OKE managed node pools cannot be placed on an RDMA cluster network; a cluster network launches its instances from an
instance configuration, and those instances join the cluster themselves (OKE "Working with Self-Managed Nodes").
"""
from __future__ import annotations

import base64
from collections.abc import Sequence

import pulumi
import pulumi_oci.containerengine as ce
import pulumi_oci.core as core
import pulumi_oci.identity as identity

from components.config.model import GpuPool, Taint

# The Oracle Cloud Agent plugins an RDMA node needs: authentication and address configuration of its RDMA NICs,
# and their health monitoring (the quickstart's oke-rdma pool enables exactly these three).
RDMA_AGENT_PLUGINS = ("Compute HPC RDMA Authentication", "Compute HPC RDMA Auto-Configuration",
                      "Compute RDMA GPU Monitoring")
# ibv_reg_mr pins memory, which fails under CRI-O's default 8 MB locked-memory limit: RDMA pods need it unlimited
# (the quickstart's oke-ubuntu-cloud-init.sh writes the same drop-in), so no pod needs IPC_LOCK.
_MEMLOCK = ("mkdir -p /etc/crio/crio.conf.d\n"
            "printf '[crio.runtime]\\ndefault_ulimits = [\"memlock=-1:-1\"]\\n' >/etc/crio/crio.conf.d/12-memlock.conf")


def join_policy(name: str, cluster: ce.Cluster, cluster_name: str, compartment: str, tenancy: str,
                opts: pulumi.ResourceOptions) -> identity.Policy:
    """The right of this compartment's instances to join this one cluster ({CLUSTER_JOIN}, OKE self-managed nodes).

    Self-managed nodes authenticate as instance principals, which a policy can only name through a dynamic group.
    A dynamic group rule cannot single out a cluster network's instances (no attribute names an instance pool; a
    defined tag could, at the cost of a tenancy-wide tag namespace, docs/oci.md), so it matches the compartment; the
    policy then grants nothing but joining this cluster.
    """
    group = identity.DynamicGroup(
        f"{name}-rdma-nodes", compartment_id=tenancy, name=f"{cluster_name}-rdma-nodes",
        description=f"Instances of compartment {compartment}: self-managed RDMA nodes of OKE cluster {cluster_name}",
        matching_rule=f"ALL {{instance.compartment.id = '{compartment}'}}", opts=opts)
    statement = pulumi.Output.all(group.name, cluster.id).apply(
        lambda args: f"Allow dynamic-group {args[0]} to {{CLUSTER_JOIN}} in compartment id {compartment} "
                     f"where target.cluster.id = '{args[1]}'")
    return identity.Policy(
        f"{name}-rdma-join", compartment_id=compartment, name=f"{cluster_name}-rdma-node-join",
        description=f"Self-managed RDMA nodes join OKE cluster {cluster_name}", statements=[statement], opts=opts)


def kubelet_args(taints: Sequence[Taint], labels: dict[str, str], effects: dict[str, str]) -> str:
    """Kubelet flags: taints at registration, and the pool's labels (self-managed nodes have no initialNodeLabels)."""
    return (" ".join(["--register-with-taints=" + ",".join(f"{t.key}={t.value}:{effects[t.effect]}" for t in taints),
                      "--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(labels.items()))]))


def cloud_init(endpoint: str, ca_cert: str, extra_args: str) -> str:
    """Base64 user data that joins a self-managed node to the cluster with the pool's taints and labels.

    Oracle's OKE images join through /etc/oke/oke-install.sh (OKE "Creating Cloud-init Scripts for Self-managed
    Nodes"); Oracle's Ubuntu worker images through `oke bootstrap`, which reads the endpoint and CA from these two
    files (oci-hpc-oke oke-workers.tf, oke-ubuntu-cloud-init.sh). Both branches pass the same kubelet flags.
    """
    script = "\n".join([
        "#!/bin/bash",
        "set -euo pipefail",
        # A larger boot volume than the image: grow the root filesystem where Oracle Linux's tool exists.
        "if [ -x /usr/libexec/oci-growfs ]; then /usr/libexec/oci-growfs -y; fi",
        _MEMLOCK,
        "mkdir -p /etc/oke /etc/kubernetes",
        f"echo '{endpoint}' >/etc/oke/oke-apiserver",
        f"echo '{ca_cert}' | base64 --decode >/etc/kubernetes/ca.crt",
        "if command -v oke >/dev/null 2>&1; then",
        f'  oke bootstrap --kubelet-extra-args "{extra_args}"',
        "else",
        f'  bash /etc/oke/oke-install.sh --apiserver-endpoint "{endpoint}" --kubelet-ca-cert "{ca_cert}" '
        f'--kubelet-extra-args "{extra_args}"',
        "fi",
        "",
    ])
    return base64.b64encode(script.encode()).decode()


def cluster_network(name: str, pool: GpuPool, *, compartment: str, version: str, image: str, ad: pulumi.Input[str],
                    node_subnet: pulumi.Input[str], endpoint: pulumi.Input[str],
                    ca_cert: pulumi.Input[str], extra_args: str, boot_volume_gb: int,
                    opts: pulumi.ResourceOptions) -> tuple[core.InstanceConfiguration, core.ClusterNetwork]:
    """The pool's instance configuration and its cluster network of `maxNodes` nodes, in one availability domain."""
    user_data = pulumi.Output.all(endpoint, ca_cert).apply(lambda args: cloud_init(args[0], args[1], extra_args))
    metadata = {
        "user_data": user_data,
        # No oke-native-pod-networking/pod-subnets keys: on a flannel cluster the node's podCIDR comes from the
        # control plane (terraform-oci-oke sets them only for cni_type npn).
        "oke-k8version": version,
    }
    config = core.InstanceConfiguration(
        f"{name}-instance-config", compartment_id=compartment, display_name=pool.cloud_name,
        instance_details=core.InstanceConfigurationInstanceDetailsArgs(
            instance_type="compute",
            launch_details=core.InstanceConfigurationInstanceDetailsLaunchDetailsArgs(
                compartment_id=compartment, availability_domain=ad, shape=pool.instance_type,
                source_details=core.InstanceConfigurationInstanceDetailsLaunchDetailsSourceDetailsArgs(
                    source_type="image", image_id=image, boot_volume_size_in_gbs=str(boot_volume_gb)),
                create_vnic_details=core.InstanceConfigurationInstanceDetailsLaunchDetailsCreateVnicDetailsArgs(
                    subnet_id=node_subnet, assign_public_ip=False),
                agent_config=core.InstanceConfigurationInstanceDetailsLaunchDetailsAgentConfigArgs(
                    are_all_plugins_disabled=False, is_management_disabled=False, is_monitoring_disabled=False,
                    plugins_configs=[
                        core.InstanceConfigurationInstanceDetailsLaunchDetailsAgentConfigPluginsConfigArgs(
                            name=plugin, desired_state="ENABLED") for plugin in RDMA_AGENT_PLUGINS]),
                metadata=metadata,
            )),
        opts=opts)
    network = core.ClusterNetwork(
        f"{name}-cluster-network", compartment_id=compartment, display_name=pool.cloud_name,
        instance_pools=[core.ClusterNetworkInstancePoolArgs(
            instance_configuration_id=config.id, size=pool.max_nodes, display_name=pool.cloud_name)],
        placement_configuration=core.ClusterNetworkPlacementConfigurationArgs(
            availability_domain=ad, primary_subnet_id=node_subnet),
        # First boot of bare-metal GPU shapes configures their hardware: the quickstart allows two hours.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            custom_timeouts=pulumi.CustomTimeouts(create="2h"))))
    return config, network
