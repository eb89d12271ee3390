"""The public shape every cloud's cluster component has, so later layers never ask which cloud they are on."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.clouds.labels import pool_labels, pool_taints
from components.clouds.profiles import CloudProfile
from components.config.capacity import mig_strategy, pool_units
from components.config.model import GpuPool, PlatformConfig


class GpuNodePool(pulumi.ComponentResource):
    """One GPU pool on any cloud: its cloud resources are children, its Kubernetes-level facts are its inputs.

    Policies read these inputs (taints in Kubernetes spelling, labels, driver owner) on every cloud alike.
    """

    TYPE = "gpu-platform:cluster:GpuNodePool"

    def __init__(self, name: str, config: PlatformConfig, pool: GpuPool, profile: CloudProfile,
                 opts: pulumi.ResourceOptions | None = None):
        labels = pool_labels(config, pool)
        taints = pool_taints(pool, profile)
        advertised = pool_units(pool, mig_strategy(config.gpu_pools))
        props = {
            "poolName": pool.name,
            "cloud": profile.name,
            "cloudName": pool.cloud_name,
            "instanceType": pool.instance_type,
            "gpuModel": pool.instance.gpu.name,
            "gpusPerNode": pool.instance.gpus,
            "minNodes": pool.min_nodes,
            "maxNodes": pool.max_nodes,
            "capacityType": pool.capacity_type,
            "workload": pool.workload,
            "sharing": {"mode": pool.sharing.mode, "migConfig": pool.sharing.mig_config_name,
                        "replicas": pool.sharing.replicas},
            "driver": pool.driver,
            "labels": labels,
            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints],
            "advertised": advertised,
        }
        super().__init__(self.TYPE, name, props, opts)
        # Set after registering: the SDK replaces every prop-named attribute with an Output, and layers need plain values.
        self.pool, self.labels, self.taints, self.advertised = pool, labels, taints, advertised

    def finish(self, outputs: dict[str, Any]) -> None:
        self.register_outputs({"advertised": self.advertised, **outputs})


class PlatformCluster(pulumi.ComponentResource):
    """A Kubernetes cluster with a system pool and tainted GPU pools, or an adopted one.

    Public shape on every cloud: `kubeconfig` (secret), `provider` (Kubernetes provider for later layers),
    `cluster_name`, and `pools` (GpuNodePool by config name).
    """

    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    cluster_name: pulumi.Output[str]
    pools: dict[str, GpuNodePool]

    def autoscaler_values(self) -> dict[str, Any] | None:
        """The cloud part of the Cluster Autoscaler's Helm values, or None.

        Clouds whose pools autoscale natively (and adopted clusters) return None: nothing to install.
        """
        return None

    def node_provisioner(self) -> Any | None:
        """What a native node provisioner installed in the cluster needs (EKS Karpenter), or None when the GPU
        pools are the cloud's own node pools."""
        return None

    def managed_expander_priorities(self) -> dict[str, list[str]] | None:
        """Priority-expander tiers for a cloud-managed autoscaler that reads them from a ConfigMap (AKS), or None."""
        return None

    def _finish(self, name: str, kubeconfig: pulumi.Input[str], cluster_name: pulumi.Input[str]) -> None:
        """Create the Kubernetes provider and register outputs: the last step of every cloud's constructor."""
        self.kubeconfig = pulumi.Output.secret(kubeconfig)
        self.cluster_name = pulumi.Output.from_input(cluster_name)
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig,
                                     enable_server_side_apply=True,
                                     opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({"kubeconfig": self.kubeconfig, "clusterName": self.cluster_name,
                               "pools": list(self.pools)})
