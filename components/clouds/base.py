"""The public shape every cloud's cluster component has, so later layers never ask which cloud they are on."""
from dataclasses import dataclass, field
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components.args import fill_defaults
from components.args_checks import check_args
from components.clouds.facts import CloudProfile
from components.config.labels import pool_labels, pool_taints
from components.config.capacity import mig_strategy, pool_units
from components.config.model import GpuPool, PlatformConfig, Taint, pod_security_admits


def fabric_teams(config: PlatformConfig, pool: GpuPool, profile: CloudProfile) -> list[str]:
    """Teams with quota on the pool whose Pod Security level admits the pool's fabric pods (none without a fabric)."""
    fabric = profile.fabrics.get(pool.fabric)
    if fabric is None:
        return []
    return [t.name for t in config.teams if t.quotas.get(pool.name) and pod_security_admits(t.pod_security,
                                                                                            fabric.pod_security)]


@dataclass
class GpuNodePoolArgs:
    """The Kubernetes-level facts of one GPU pool, which its cloud node group is built from and policies read."""

    pool_name: str
    """The pool's name in the stack config (its `gpu-platform.io/pool` label)."""
    cloud: str
    """The cloud: aws, azure, gcp or oci."""
    cloud_name: str
    """The pool's name on the cloud (node group, agent pool or node pool name)."""
    instance_type: str
    """The cloud instance type, e.g. p5.48xlarge."""
    gpu_model: str
    """The GPU model the instance type carries, e.g. H100."""
    gpus_per_node: int
    """Physical GPUs per node."""
    min_nodes: int
    """Smallest node count (0 scales the pool to zero)."""
    max_nodes: int
    """Largest node count."""
    driver: str
    """Who installs the NVIDIA driver: `operator`, `cloud` or `image`."""
    capacity_type: Optional[str] = "on-demand"
    """on-demand, spot or reserved."""
    workload: Optional[str] = "training"
    """What the pool is for: training or inference."""
    sharing_mode: Optional[str] = "none"
    """How GPUs are shared: none, mig, mps or time-slicing."""
    mig_config: Optional[str] = None
    """The mig-parted config name when sharing is mig."""
    replicas: Optional[int] = None
    """Clients per GPU when sharing is mps or time-slicing."""
    fabric: Optional[str] = "none"
    """The node-to-node fabric the pool's nodes attach: none, or the cloud's (efa on EKS)."""
    fabric_teams: Optional[list[str]] = field(default_factory=list)
    """Teams whose pods can use the fabric (quota on the pool, Pod Security admitting its pods); none: it is unused."""
    labels: Optional[dict[str, str]] = field(default_factory=dict)
    """Node labels every node of the pool carries."""
    taints: Optional[list[dict[str, str]]] = field(default_factory=list)
    """Node taints in Kubernetes spelling: key, value, effect."""
    advertised: Optional[dict[str, int]] = field(default_factory=dict)
    """Extended resources one node advertises, e.g. {"nvidia.com/gpu": 8}."""

    def __post_init__(self) -> None:
        fill_defaults(self)

    @classmethod
    def from_config(cls, config: PlatformConfig, pool: GpuPool, profile: CloudProfile) -> "GpuNodePoolArgs":
        """The args a cloud's cluster component passes for one configured pool."""
        return cls(
            pool_name=pool.name, cloud=profile.name, cloud_name=pool.cloud_name, instance_type=pool.instance_type,
            gpu_model=pool.instance.gpu.name, gpus_per_node=pool.instance.gpus, min_nodes=pool.min_nodes,
            max_nodes=pool.max_nodes, driver=pool.driver, capacity_type=pool.capacity_type, workload=pool.workload,
            sharing_mode=pool.sharing.mode, mig_config=pool.sharing.mig_config_name, replicas=pool.sharing.replicas,
            fabric=pool.fabric, fabric_teams=fabric_teams(config, pool, profile),
            labels=pool_labels(config, pool),
            taints=[{"key": t.key, "value": t.value, "effect": t.effect} for t in pool_taints(pool, profile)],
            advertised=pool_units(pool, mig_strategy(config.gpu_pools)),
        )


class GpuNodePool(pulumi.ComponentResource):
    """One GPU pool on any cloud: its cloud resources are children, its Kubernetes-level facts are its inputs.

    Policies read these inputs (taints in Kubernetes spelling, labels, driver owner) on every cloud alike.
    """

    TYPE = "gpu-platform:cluster:GpuNodePool"

    advertised_resources: pulumi.Output[dict[str, int]]
    """Extended resources one node of the pool advertises, e.g. {"nvidia.com/gpu": 8}."""
    node_labels: pulumi.Output[dict[str, str]]
    """Labels every node of the pool carries: what workloads select the pool by."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        check_args(args)  # every problem at once, before any child exists
        labels, advertised = dict(args.labels), dict(args.advertised)
        taints = tuple(Taint(t["key"], t.get("value", ""), t["effect"]) for t in args.taints)
        props = {
            "poolName": args.pool_name,
            "cloud": args.cloud,
            "cloudName": args.cloud_name,
            "instanceType": args.instance_type,
            "gpuModel": args.gpu_model,
            "gpusPerNode": args.gpus_per_node,
            "minNodes": args.min_nodes,
            "maxNodes": args.max_nodes,
            "capacityType": args.capacity_type,
            "workload": args.workload,
            "sharing": {"mode": args.sharing_mode, "migConfig": args.mig_config, "replicas": args.replicas},
            "driver": args.driver,
            "fabric": args.fabric,
            "fabricTeams": list(args.fabric_teams),
            "labels": labels,
            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints],
            "advertised": advertised,
        }
        super().__init__(self.TYPE, name, props, opts)
        # Set after registering: the SDK replaces every prop-named attribute with an Output, and layers need plain values.
        self.args, self.labels, self.taints, self.advertised = args, labels, taints, advertised
        self.advertised_resources = pulumi.Output.from_input(advertised)
        self.node_labels = pulumi.Output.from_input(labels)

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

    def autoscaler_values(self) -> Optional[dict[str, Any]]:
        """The cloud part of the Cluster Autoscaler's Helm values, or None.

        Clouds whose pools autoscale natively (and adopted clusters) return None: nothing to install.
        """
        return None

    def node_provisioner(self) -> Optional[Any]:
        """What a native node provisioner installed in the cluster needs (EKS Karpenter), or None when the GPU
        pools are the cloud's own node pools."""
        return None

    def managed_expander_priorities(self) -> Optional[dict[str, list[str]]]:
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
