"""One profile per cloud: every per-cloud fact the config and components need, in one typed table.

Components read these facts instead of branching on the cloud name.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from components.pins import PINS


@dataclass(frozen=True)
class ExtraKey:
    """One key allowed in the `cluster.<cloud>` block."""

    kind: type | tuple[type, ...]
    doc: str
    required: bool = False
    choices: tuple[str, ...] = ()  # the only values the cloud API accepts
    requires: tuple[str, ...] = ()  # sibling keys that must be set with this one
    conflicts: tuple[str, ...] = ()  # sibling keys that make this one meaningless
    check: Callable[[Any], str | None] | None = None  # what is wrong with a value of the right kind, or None
    # The availability zones a value names, as (path below this key, zone), so they can be checked against the region.
    zones: Callable[[Any], list[tuple[str | int, str]]] | None = None

    def problem(self, value: Any) -> str | None:
        """Why `value` (already of the right kind) is not acceptable, or None."""
        if self.choices and value not in self.choices:
            return f"{value!r} is not allowed; allowed: {', '.join(self.choices)}"
        return self.check(value) if self.check else None


@dataclass(frozen=True)
class GpuImage:
    """A GPU node image a cloud offers, and what pools running it need."""

    labels: dict[str, str] = field(default_factory=dict)  # node labels every node on this image needs
    sharing_modes: tuple[str, ...] = ("none", "mig", "mps", "time-slicing")  # the modes the platform can set up on it
    note: str = ""  # why sharing_modes is limited, shown in errors
    # The block device that holds container images, which the pool's launch template sizes.
    image_volume: str = ""
    # The Karpenter EC2NodeClass AMI alias family of this image (EKS), where Karpenter can provision it.
    karpenter_alias: str = ""


@dataclass(frozen=True)
class PoolNaming:
    """How the cloud constrains node pool names."""

    max_len: int
    pattern: str  # regex the derived name must match
    drop_hyphens: bool = False

    def derive(self, name: str) -> str:
        derived = name.replace("-", "") if self.drop_hyphens else name
        return derived[: self.max_len]

    def valid(self, name: str) -> bool:
        return re.fullmatch(self.pattern, name) is not None


@dataclass(frozen=True)
class NetworkTopology:
    """Node labels a cloud puts on GPU nodes for their place in its data-center network, for Kueue TAS."""

    levels: tuple[str, ...]  # broadest first; kubernetes.io/hostname is added below them
    instance_types: str  # regex of the instance types whose nodes carry every one of these labels
    # A layer below `levels` that only some of those types have (their nodes carry its label too), and their regex.
    deeper_level: str = ""
    deeper_instance_types: str = ""
    # Who writes the labels when the cloud itself does not: the platform installs no such writer, so a pool that
    # would need them is refused rather than given levels no node carries (Kueue would admit none of its jobs).
    writer: str = ""

    def labels(self, instance_type: str) -> bool:
        return re.fullmatch(self.instance_types, instance_type) is not None

    def levels_of(self, instance_type: str) -> tuple[str, ...]:
        """The labels nodes of a labelled type carry, broadest first."""
        if self.deeper_level and re.fullmatch(self.deeper_instance_types, instance_type):
            return (*self.levels, self.deeper_level)
        return self.levels


@dataclass(frozen=True)
class Fabric:
    """A fast inter-node fabric a cloud offers GPU pools (gpuPools[].fabric), and what makes it usable in Kubernetes."""

    name: str  # the gpuPools[].fabric value, and the catalog's InstanceType.interconnect it attaches to
    resource: str  # extended resource its device plugin advertises per interface
    chart: str  # the device plugin's Helm chart, repository and pinned version
    repository: str
    version: str
    namespace: str
    env: tuple[tuple[str, str], ...] = ()  # what NCCL/libfabric need in pods using it
    # How the chart is installed: "device-plugin" (a plain device plugin chart, values nodeSelector/tolerations) or
    # "network-operator" (NVIDIA Network Operator plus the NicClusterPolicy that runs the NIC driver and plugin).
    installer: str = "device-plugin"
    # GPUDirect RDMA on this fabric needs nvidia-peermem, which only the GPU Operator's driver loads (driver.rdma);
    # pools whose driver the cloud installs get the fabric without it (warned about).
    peer_memory_by_operator: bool = False
    # A device plugin without a Helm chart (chart ""): its image, run as a DaemonSet reading `plugin_config`.
    image: str = ""
    plugin_config: str = ""
    # Units of `resource` a pod taking a whole node requests; 0: one per fabric interface (fabric_interfaces).
    pod_units: int = 0
    # The fabric's nodes come from a fixed-size group the Cluster Autoscaler does not resize: minNodes = maxNodes.
    fixed_size: bool = False
    # cluster.<cloud> keys a stack must set once a pool uses the fabric, and capacity types it cannot buy.
    required_extras: tuple[str, ...] = ()
    unsupported_capacity: tuple[str, ...] = ()
    # The fabric's nodes get their labels from the kubelet's --node-labels (self-managed nodes), which the
    # NodeRestriction admission plugin limits in the kubernetes.io and k8s.io domains.
    labels_via_kubelet: bool = False
    # The NCCL test image with this fabric's transport and its all_reduce_perf path ("": the default EFA image;
    # GKE GPUDirect's is its NCCL plugin installer image, which carries nccl-tests built against the plugin).
    nccl_test_image: str = ""
    nccl_test_binary: str = ""
    # A fabric without a device plugin (resource and chart empty) reaches pods another way: on GKE through
    # multi-networking and a receive-datapath sidecar (gpudirect).
    gpudirect: "GpuDirect | None" = None
    # The fabric works only with the cloud's own GPU driver (driver: managed); `auto` leaves other pools at none.
    needs_managed_driver: bool = False
    # The Pod Security level pods using the fabric need (GKE GPUDirect: host paths and NET_ADMIN, so privileged).
    pod_security: str = "baseline"


@dataclass(frozen=True)
class GpuDirect:
    """GKE GPUDirect-TCPX/TCPXO: one extra VPC per GPU NIC, the NCCL plugin installer, the NRI device injector and
    the receive-datapath manager (RxDM) sidecar every pod using the NICs runs (GKE "Maximize GPU network bandwidth
    with GPUDirect and multi-networking", GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpx(o))."""

    installer: str  # DaemonSet name of the NCCL plugin installer, in kube-system
    installer_image: str  # pinned NCCL plugin image; it also carries the nccl-tests the smoke test runs
    accelerator: str  # cloud.google.com/gke-accelerator value the upstream installer selects
    rxdm_image: str  # pinned RxDM image matching the plugin version
    rxdm_container: str  # sidecar container name (the NRI annotation devices.gke.io/container.<name> names it)
    rxdm_command: tuple[str, ...]
    rxdm_capabilities: tuple[str, ...]
    rxdm_volumes: tuple[tuple[str, str, str], ...]  # (volume, hostPath, mountPath in the sidecar)
    workload_volumes: tuple[tuple[str, str, str], ...]  # (volume, hostPath or "" for emptyDir, mountPath in NCCL pods)
    extra_devices: tuple[str, ...]  # device nodes the sidecar needs besides /dev/nvidia*
    mtu: int  # of every GPU NIC VPC
    subnet_offset: int  # third octet where this fabric's /20 GPU NIC subnets start in 192.168.0.0/16
    # TCPXO's low-latency control messages need the NICs' aperture devices exposed on the host first.
    llcm: bool = False
    # Compact placement (GKE compact-placement): nodes of one pool close together in one zone, up to this many.
    placement_max_nodes: int = 150


@dataclass(frozen=True)
class ArnPartition:
    """An AWS partition: the regions in it, the first field of its ARNs, and the EC2 service principal there."""

    name: str  # arn:<name>:...
    region_prefix: str  # regions starting with it are in the partition; "" (the commercial partition, last) any other
    ec2_principal: str = "ec2.amazonaws.com"


@dataclass(frozen=True)
class CloudProfile:
    """What differs between clouds, stated once."""

    name: str
    service: str  # EKS, AKS, GKE, OKE
    taint_effects: dict[str, str]  # Kubernetes effect -> the provider's spelling
    driver_owners: tuple[str, ...]  # who may own the driver: "managed" (cloud image) and/or "operator"
    default_driver: str
    pool_naming: PoolNaming
    default_system_instance: str
    extras: dict[str, ExtraKey] = field(default_factory=dict)
    driver_note: str = ""
    # Where MIG layouts and MPS/time-slicing are configured: "operator" (mig-manager, device plugin config)
    # or "pool" (a node pool field of the cloud API, which then owns it alone).
    mig_via: str = "operator"
    sharing_via: str = "operator"
    # The pool field that carries a MIG layout when mig_via == "pool" (named in errors).
    mig_pool_field: str = ""
    # The pool field names only a compute-slice count (MIG1g..MIG7g), so each count reaches one profile:
    # the smallest-memory one with that many slices.
    mig_by_slices: bool = False
    # mig_via/sharing_via "pool" works only through the cloud's own driver and device plugin.
    pool_sharing_needs_managed_driver: bool = False
    # Largest replicas the cloud's pool sharing field accepts (None: no cloud limit).
    max_pool_sharing_replicas: int | None = None
    # Taints (key, value, effect) the cloud's convention or the cloud itself puts on GPU pools / spot pools,
    # beyond ours; every one must be tolerated by the GPU operator's DaemonSets. Plain tuples: the config
    # model imports this module.
    extra_gpu_taints: tuple[tuple[str, str, str], ...] = ()
    spot_taints: tuple[tuple[str, str, str], ...] = ()
    # Node labels a pool needs when the GPU operator owns the driver.
    operator_driver_labels: dict[str, str] = field(default_factory=dict)
    # GPU node images, chosen by the extras key `gpu_image_key`; the first one is the default.
    gpu_images: dict[str, GpuImage] = field(default_factory=dict)
    gpu_image_key: str = ""
    # Config capacity type -> the provider's spelling, when the cloud takes one field for it.
    capacity_types: dict[str, str] = field(default_factory=dict)
    # The extras key mapping each reserved pool to its reservation, when the cloud cannot use reserved capacity
    # without naming it.
    reservations_key: str = ""
    # Who scales GPU pools: "pool" (the cloud's own pool autoscaling) or "cluster-autoscaler" (installed by us).
    autoscaler: str = "pool"
    # The extras key choosing a native node provisioner instead (its first choice, the default, is `autoscaler`),
    # and the capacity types the native provisioner cannot buy.
    provisioner_key: str = ""
    provisioner_unsupported_capacity: tuple[str, ...] = ()
    # Why the native provisioner cannot buy those (named in the error), and whether it can give its nodes the pool's
    # fast fabric at all (with the reason it cannot).
    provisioner_capacity_note: str = ""
    provisioner_refuses_fabric: bool = False
    provisioner_fabric_note: str = ""
    # The Kubernetes minors the pinned native provisioner release supports, when the stack installs it (empty: the
    # cloud runs it and keeps it current).
    provisioner_kubernetes_versions: tuple[str, ...] = ()
    # The ProvisioningRequest class of the cloud's queued provisioning (gpuPools[].provisioning: queued), which
    # Kueue's provisioning admission check asks for; empty where the cloud has none.
    queued_provisioning_class: str = ""
    # Node label the Cluster Autoscaler reads to know a new node will have GPUs, so it waits for the device plugin
    # instead of scaling up again.
    autoscaler_gpu_label: str = ""
    # The Kubernetes minors the cloud still creates clusters on (cluster.kubernetesVersion must be one), each with
    # the version string its API takes: the minor itself, or a full version where the API wants one (OKE).
    kubernetes_versions: dict[str, str] = field(default_factory=dict)
    # The Cluster Autoscaler's scale-from-zero template for this cloud counts whole GPUs only, so a pool that
    # advertises MIG resources cannot scale up from zero nodes for pods asking for them.
    autoscaler_template_whole_gpus: bool = False
    # Label domains the cloud's node pool API refuses (a key in them, or a subdomain of them, is an error).
    reserved_label_domains: tuple[str, ...] = ()
    # GPU Operator facts (components/gpu). The cloud's GPU image already has the NVIDIA container toolkit.
    image_ships_toolkit: bool = False
    # The cloud runs its own device plugin on pools whose driver it installs (what mig_via/sharing_via "pool" use).
    cloud_device_plugin: bool = False
    # The GPU id type that plugin reports to the kubelet, for dcgm-exporter's pod attribution ("uid" | "device-name").
    cloud_plugin_gpu_id_type: str = "uid"
    # Where the cloud-installed driver lives, when not where the operator looks (hostPaths.driverInstallDir).
    managed_driver_root: str = ""
    # The nccl-test image and all_reduce_perf path for pools without a fabric (NCCL over TCP sockets); ("", ""): the
    # command's default, AWS's public nccl-tests image.
    nccl_socket_test: tuple[str, str] = ("", "")
    # The operator's toolkit must hand GPUs to containers through CDI on this cloud's node OS.
    needs_cdi: bool = False
    # system-node-critical/system-cluster-critical pods outside kube-system need a ResourceQuota admitting them.
    critical_pods_need_quota: bool = False
    # What the cloud offers instead of, or next to, our Helm-installed operator.
    operator_note: str = ""
    # cluster.authorizedNetworks limits only a public endpoint (a private cluster refuses them or ignores them).
    authorized_networks_public_only: bool = False
    # cluster.authorizedNetworks may list IPv6 CIDRs: the cloud's allow-list takes them for the clusters we create.
    authorized_networks_ipv6: bool = False
    # The logical name of the cluster resource is `<cluster.name>-<this>` (components/clouds/<cloud>.py): what a
    # policy exemption names to waive a finding on the cluster, which config validation honours too.
    cluster_resource_suffix: str = "cluster"
    # teams[].principals: the cloud identities mapped into a team's groups, where the cloud does not put its own
    # identities in Kubernetes groups by itself (None: it does, and the field is refused).
    team_principals: ExtraKey | None = None
    # The extras key listing node zones when the cloud starts a pool's initial nodes in every zone (GKE's
    # initialNodeCount is per zone): validation keeps minNodes rounded up per zone within maxNodes.
    zones_key: str = ""
    # How team groups (teams[i].groups, bound in Kubernetes RBAC) must be spelled for the cloud's identities to
    # carry them, or None when any name works; and the extras key that maps those identities into Kubernetes
    # groups, required once a team lists groups.
    team_group_check: Callable[[str], str | None] | None = None
    team_groups_key: str = ""
    # GPU Operator container runtime facts. The containerd handler GPU nodes define, when not the operator's
    # default `nvidia` (operator.runtimeClass): operand pods run with a RuntimeClass naming it.
    operator_runtime_class: str = ""
    # Environment the operator's container toolkit needs on this cloud's nodes (toolkit.env).
    toolkit_env: tuple[tuple[str, str], ...] = ()
    # How the cloud API's version field takes cluster.kubernetesVersion: "minor" only (1.35), "minor-or-patch" (1.35 or
    # 1.35.2), or "patch" (a full version; a bare minor becomes its kubernetes_versions entry), prefixed as it wants.
    kubernetes_version_form: str = "minor"
    kubernetes_version_prefix: str = ""
    # The regions the cloud had when REGIONS_AS_OF was written: another well-formed region is warned about, not refused.
    regions: tuple[str, ...] = ()
    # Formats the cloud API takes (regexes for the whole value), checked before anything is created.
    region_pattern: str = r".+"
    region_example: str = ""
    instance_type_pattern: str = r".+"  # the system pool's instance type (GPU pools are looked up in the catalog)
    instance_type_example: str = ""
    # The cluster names the cloud takes, as the program uses them (a regex for the whole name), and their rule in words.
    cluster_name_pattern: str = r"[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?"
    cluster_name_doc: str = "1-40 lowercase letters, digits and '-', starting and ending with a letter or digit"
    zone_pattern: str = ""  # a zone of region R: the pattern with {region} replaced by R
    # Most nodes one node pool can have (the cloud's per-pool limit); maxNodes above it would fail at create time.
    max_pool_nodes: int = 1000
    # The limit counts one zone's nodes, so a pool spread over the zones of `zones_key` holds it once per zone.
    max_pool_nodes_per_zone: bool = False
    # Block/rack node labels for Kueue topology-aware scheduling (None: the cloud sets none, only the hostname).
    network_topology: NetworkTopology | None = None
    # The fast fabrics the platform can attach to this cloud's GPU pools, by gpuPools[].fabric value.
    fabrics: dict[str, Fabric] = field(default_factory=dict)
    # The cluster's CNI enforces no NetworkPolicy, so the platform installs Calico in policy-only mode beside it
    # (components/tenancy/calico.py) on clusters it creates.
    calico_policy_only: bool = False
    # The partitions whose ARNs the program builds (AWS managed policies, trust principals), first match by region.
    arn_partitions: tuple[ArnPartition, ...] = ()

    def kubernetes_api_version(self, version: str) -> str:
        """What the cloud API's version field takes for a validated cluster.kubernetesVersion."""
        return self.kubernetes_versions.get(version) or f"{self.kubernetes_version_prefix}{version}"

    def pool_node_limit(self, zones: int) -> tuple[int, str]:
        """The most nodes a pool over `zones` zones may have, and the limit's name for errors."""
        if self.max_pool_nodes_per_zone and zones > 1:
            return (self.max_pool_nodes * zones,
                    f"{self.service} node pool limit, {self.max_pool_nodes} per zone in {zones} zones")
        return self.max_pool_nodes, f"{self.service} node pool limit"

    def arn_partition(self, region: str) -> ArnPartition:
        """The partition `region` is in; ARNs built with another partition's name do not exist there."""
        return next(p for p in self.arn_partitions if region.startswith(p.region_prefix))


def _ipv4_network(value: Any) -> ipaddress.IPv4Network | None:
    try:
        return ipaddress.IPv4Network(value)
    except (ValueError, TypeError):
        return None


# Where a created VPC, VNet or VCN may live: RFC 1918 and CGNAT, exactly what a team's internet-egress
# NetworkPolicy excepts (components/tenancy/isolation.py). In public space its nodes, kubelets and load balancers
# would count as "internet" to every team pod, and the real owners of those addresses would become unreachable.
PRIVATE_NETWORKS = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                            "100.64.0.0/10"))


def _public_space(net: ipaddress.IPv4Network) -> str | None:
    if any(net.subnet_of(private) for private in PRIVATE_NETWORKS):
        return None
    return (f"{net} is not private address space: team pods' internet egress would reach the cluster's nodes there; "
            f"use a range inside {', '.join(map(str, PRIVATE_NETWORKS))}")


def _vpc_cidr(value: str) -> str | None:
    net = _ipv4_network(value)
    if net is None:
        return f"{value!r} is not an IPv4 network like 10.0.0.0/16 (host bits zero)"
    if public := _public_space(net):
        return public
    # AWS allows /16 at most; /22 still leaves a /24 of node and pod addresses per AZ (the VPC CNI gives pods VPC IPs).
    if not 16 <= net.prefixlen <= 22:
        return f"must be a /16 to /22 network; got /{net.prefixlen}"
    return None


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


_GUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def _guid_list(value: list) -> str | None:
    bad = [v for v in value if not isinstance(v, str) or not re.fullmatch(_GUID, v)]
    return f"must list Entra ID group object ids (GUIDs); not: {', '.join(map(repr, bad))}" if bad else None


def _ocid(kind: str) -> Callable[[str], str | None]:
    """A check that a value is an OCID of `kind` (ocid1.<kind>.<realm>...)."""
    def check(value: str) -> str | None:
        return None if value.startswith(f"ocid1.{kind}.") else f"must be a {kind} OCID (ocid1.{kind}...); got {value!r}"
    return check


def _vcn_cidr(value: str) -> str | None:
    net = _ipv4_network(value)
    if net is None:
        return f"{value!r} is not an IPv4 network like 10.0.0.0/16 (host bits zero)"
    if public := _public_space(net):
        return public
    # OCI allows /16 to /30; OkeNetwork carves endpoint, load balancer and node subnets out of a /16.
    if net.prefixlen != 16:
        return f"must be a /16 (OkeNetwork splits it into three subnets); got /{net.prefixlen}"
    # Flannel's pod and the service ranges live outside the VCN, which must not overlap them.
    for other in (OKE_POD_CIDR, OKE_SERVICE_CIDR):
        if net.overlaps(ipaddress.IPv4Network(other)):
            return f"overlaps {other}, the cluster's flannel pod or service range; pick another /16"
    return None


# OKE's flannel pod and service ranges (its defaults), set explicitly so the VCN can be checked against them.
OKE_POD_CIDR = "10.244.0.0/16"
OKE_SERVICE_CIDR = "10.96.0.0/16"
# AKS overlay ranges (components/clouds/azure.py): pods and services live outside the VNet, which must not overlap them.
AKS_POD_CIDR = "192.168.0.0/16"
AKS_SERVICE_CIDR = "172.16.0.0/16"


def _aks_vnet_cidr(value: str) -> str | None:
    net = _ipv4_network(value)
    if net is None:
        return f"{value!r} is not an IPv4 network like 10.224.0.0/16 (host bits zero)"
    if public := _public_space(net):
        return public
    for what, other in (("pod", AKS_POD_CIDR), ("service", AKS_SERVICE_CIDR)):
        if net.overlaps(ipaddress.IPv4Network(other)):
            return f"{value} overlaps the AKS overlay {what} range {other}; pick another range"
    # AksCluster gives nodes the first /18 (or the first half of a smaller VNet).
    return None if net.prefixlen <= 24 else f"must be a /24 or larger; got /{net.prefixlen}"


def _azure_zones(value: list) -> str | None:
    bad = [z for z in value if str(z) not in ("1", "2", "3")]
    return f"Azure availability zones are \"1\", \"2\" and \"3\"; not: {', '.join(map(repr, bad))}" if bad else None


NAP_KEYS = ("maxCpu", "maxMemoryGb", "maxGpus")


def _gke_nap(value: dict) -> str | None:
    """The shape of cluster.gcp.nodeAutoProvisioning; the GPU types and totals are checked against the pools."""
    unknown = sorted(set(value) - set(NAP_KEYS))
    if unknown:
        return f"unknown keys {', '.join(map(str, unknown))}; allowed: {', '.join(NAP_KEYS)}"
    for key in ("maxCpu", "maxMemoryGb"):
        if not isinstance(value.get(key), int) or isinstance(value.get(key), bool) or value[key] < 1:
            return f"{key} is required, a whole number >= 1 (NAP needs cpu and memory limits); got {value.get(key)!r}"
    gpus = value.get("maxGpus", {})
    if not isinstance(gpus, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                                             for v in gpus.values()):
        return f"maxGpus must map GKE accelerator types to whole numbers >= 1; got {gpus!r}"
    return None


def _gke_master_cidr(value: str) -> str | None:
    net = _ipv4_network(value)
    return None if net is not None and net.prefixlen == 28 else f"must be an IPv4 /28 like 172.16.0.0/28; got {value!r}"


def _gcp_zones(value: list) -> str | None:
    bad = [z for z in value if not isinstance(z, str)]
    if bad:
        return f"must list zone names like us-central1-a; not: {', '.join(map(repr, bad))}"
    if not value or len(set(value)) != len(value):
        return f"must list one or more distinct zones like [us-central1-a, us-central1-c]; got {value!r}"
    return None


_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+")
# Google Groups for RBAC reads group membership only below this one group, and GKE accepts no other name.
GKE_SECURITY_GROUP_PREFIX = "gke-security-groups@"


def _gke_security_group(value: str) -> str | None:
    if value.startswith(GKE_SECURITY_GROUP_PREFIX) and _EMAIL.fullmatch(value):
        return None
    return f"must be gke-security-groups@<your Google Workspace or Cloud Identity domain>; got {value!r}"


def _entra_group(value: str) -> str | None:
    return None if re.fullmatch(_GUID, value) else (
        f"{value!r:.80} is not an Entra ID group object id (GUID), as AKS-managed Entra ID RBAC binds groups by "
        "object id")


def _google_group(value: str) -> str | None:
    return None if _EMAIL.fullmatch(value) else (
        f"must be a Google group email like ml-research@example.com (GKE puts group emails in tokens); got {value!r}")


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

# Kubernetes minors each cloud creates clusters on, as of 2026-12-03. Upstream (kubernetes.io/releases): 1.34 reached
# end of life 2026-10-27; 1.35 is supported to 2027-02-28, 1.36 to 2027-06-28, 1.37 to 2027-10-28.
# - EKS (user guide "kubernetes-versions", endoflife.date/amazon-eks): new clusters on any version in standard or
#   extended support; 1.32 extended to 2027-03-23, 1.33 to 2027-07-29, 1.34 to 2027-12-02, 1.35 standard to
#   2027-03-27; 1.36 has been on EKS since about June 2026 (kubernetes/autoscaler#9985).
# - AKS (supported-kubernetes-versions): cluster creation only on the three community-supported GA minors (N-2),
#   each for 12 months from its GA about three months after upstream (1.32: GA Mar 2025, EOL Mar 2026), so 1.34
#   ended about Nov 2026; 1.35 and 1.36 remain.
# - GKE (release schedule, endoflife.date/google-kubernetes-engine): the REGULAR channel our clusters use creates
#   only minors in standard support; 1.34 ended 2026-10-01, 1.35 runs to 2027-04-11, 1.36 after it.
# - OKE (Kubernetes Engine supported versions, add-on version table up to 1.34): the three newest minors, named
#   by their first OKE build (v1.31.1, v1.32.1, v1.33.1 in OKE's supported lists). v1.35.1 follows that naming;
#   check `oci ce cluster-options get --cluster-option-id all` before a first `pulumi up` in a new region.
# 1.37 is left out everywhere until every cloud has it GA. The default is the newest minor on all four tables.
DEFAULT_KUBERNETES_VERSION = "1.35"
KUBERNETES_VERSIONS_AS_OF = "2026-12-03"

# Each cloud's public regions on this date (AWS and Azure with their China and government regions). OCI dedicated
# regions (eu-dcc-*) belong to one customer each and are never listed.
REGIONS_AS_OF = "2026-12-03"
_AWS_REGIONS = (
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "af-south-1", "ap-east-1", "ap-east-2", "ap-south-1",
    "ap-south-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-southeast-1", "ap-southeast-2",
    "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-6", "ap-southeast-7", "ca-central-1",
    "ca-west-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2",
    "eu-west-3", "il-central-1", "me-central-1", "me-south-1", "mx-central-1", "sa-east-1",
    "cn-north-1", "cn-northwest-1", "us-gov-east-1", "us-gov-west-1",
)
_AZURE_REGIONS = (
    "eastus", "eastus2", "westus", "westus2", "westus3", "centralus", "northcentralus", "southcentralus",
    "westcentralus", "canadacentral", "canadaeast", "brazilsouth", "brazilsoutheast", "mexicocentral", "chilecentral",
    "northeurope", "westeurope", "uksouth", "ukwest", "francecentral", "francesouth", "germanywestcentral",
    "germanynorth", "switzerlandnorth", "switzerlandwest", "norwayeast", "norwaywest", "swedencentral", "swedensouth",
    "polandcentral", "italynorth", "spaincentral", "austriaeast", "belgiumcentral", "australiaeast",
    "australiasoutheast", "australiacentral", "australiacentral2", "eastasia", "southeastasia", "japaneast",
    "japanwest", "koreacentral", "koreasouth", "centralindia", "southindia", "westindia", "jioindiawest",
    "jioindiacentral", "uaenorth", "uaecentral", "qatarcentral", "israelcentral", "southafricanorth",
    "southafricawest", "newzealandnorth", "indonesiacentral", "malaysiawest",
    "usgovvirginia", "usgovarizona", "usgovtexas", "chinaeast2", "chinaeast3", "chinanorth2", "chinanorth3",
)
_GCP_REGIONS = (
    "us-central1", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west2", "us-west3", "us-west4",
    "northamerica-northeast1", "northamerica-northeast2", "northamerica-south1", "southamerica-east1",
    "southamerica-west1", "europe-central2", "europe-north1", "europe-north2", "europe-southwest1", "europe-west1",
    "europe-west2", "europe-west3", "europe-west4", "europe-west6", "europe-west8", "europe-west9", "europe-west10",
    "europe-west12", "asia-east1", "asia-east2", "asia-northeast1", "asia-northeast2", "asia-northeast3",
    "asia-south1", "asia-south2", "asia-southeast1", "asia-southeast2", "australia-southeast1",
    "australia-southeast2", "me-central1", "me-central2", "me-west1", "africa-south1",
)
_OCI_REGIONS = (
    "af-johannesburg-1", "ap-batam-1", "ap-chuncheon-1", "ap-hyderabad-1", "ap-melbourne-1", "ap-mumbai-1",
    "ap-osaka-1", "ap-seoul-1", "ap-singapore-1", "ap-singapore-2", "ap-sydney-1", "ap-tokyo-1", "ca-montreal-1",
    "ca-toronto-1", "eu-amsterdam-1", "eu-frankfurt-1", "eu-jovanovac-1", "eu-madrid-1", "eu-marseille-1",
    "eu-milan-1", "eu-paris-1", "eu-stockholm-1", "eu-zurich-1", "il-jerusalem-1", "me-abudhabi-1", "me-dubai-1",
    "me-jeddah-1", "me-riyadh-1", "mx-monterrey-1", "mx-queretaro-1", "sa-bogota-1", "sa-santiago-1",
    "sa-saopaulo-1", "sa-valparaiso-1", "sa-vinhedo-1", "uk-cardiff-1", "uk-london-1", "us-ashburn-1",
    "us-chicago-1", "us-phoenix-1", "us-sanjose-1",
    "us-langley-1", "us-luke-1", "us-gov-ashburn-1", "us-gov-chicago-1", "us-gov-phoenix-1", "uk-gov-cardiff-1",
    "uk-gov-london-1",
)


def _minors(*minors: str) -> dict[str, str]:
    """A version table for APIs that take the bare minor (EKS, AKS, GKE)."""
    return {minor: minor for minor in minors}


# EFA on EKS (EKS user guide "device-management-efa"): the EFA device plugin advertises vpc.amazonaws.com/efa, one per
# interface. The chart only schedules on the instance types it lists: v0.5.30 is the first pin listing p6-b200.48xlarge
# (tests/test_fabric_efa_render.py renders it against every EFA type of the catalog).
# FI_PROVIDER=efa makes libfabric (and the aws-ofi-nccl plugin NCCL loads) fail instead of falling back to TCP;
# FI_EFA_USE_DEVICE_RDMA=1 turns on GPUDirect RDMA, which p4d and later support.
_EFA = Fabric(name="efa", resource="vpc.amazonaws.com/efa", chart="aws-efa-k8s-device-plugin",
              repository="https://aws.github.io/eks-charts", version=PINS["aws-efa-k8s-device-plugin"].version,
              namespace="kube-system",
              env=(("FI_PROVIDER", "efa"), ("FI_EFA_USE_DEVICE_RDMA", "1"), ("NCCL_DEBUG", "INFO")))

# InfiniBand on AKS ND pools (Azure/aks-rdma-infiniband, "Network Operator" and "GPU Drivers" guides): the NVIDIA
# Network Operator's NicClusterPolicy runs the DOCA/OFED driver container and the SR-IOV device plugin, which
# advertises each InfiniBand NIC as rdma/ib (one per GPU on ND sizes). The policy's device plugin runs the chart's
# own release (components/gpu/network_operator.py).
# NCCL_NET=IB selects NCCL's own InfiniBand transport (not a plugin the image may carry) and fails instead of falling
# back to TCP; NCCL_NET_GDR_LEVEL=SYS is Azure's nccl-tests setting, which lets NCCL use GPUDirect RDMA for every
# GPU-NIC pair of the VM's topology.
_INFINIBAND = Fabric(name="infiniband", resource="rdma/ib", chart="network-operator",
                     repository="https://helm.ngc.nvidia.com/nvidia", version=PINS["network-operator"].version,
                     namespace="network-operator",
                     env=(("NCCL_NET", "IB"), ("NCCL_NET_GDR_LEVEL", "SYS"), ("NCCL_DEBUG", "INFO")),
                     installer="network-operator", peer_memory_by_operator=True)
# OCI RDMA cluster networks (RoCE v2): Oracle's settings for every bare-metal GPU shape (oracle-quickstart/oci-hpc-oke
# docs/recommended-nccl-rccl-parameters-by-shape.md: GID index 3 is the RoCE v2 IPv4 GID, traffic class 41 the
# lossless class); the per-shape NIC list (NCCL_IB_HCA) is in the catalog. NCCL_NET=IB fails rather than fall back to
# TCP sockets. The device plugin is Mellanox's shared RDMA plugin (the one NVIDIA's Network Operator deploys), so a
# pod gets /dev/infiniband without hostNetwork, privileged or a hostPath, which team Pod Security forbids.
# Oracle's nccl-tests image (plain NCCL, Open MPI, sshd) and its all_reduce_perf path.
_OCI_NCCL_TESTS = ("iad.ocir.io/idxzjcdglx2s/nccl-tests:cuda-13.4.1-ubuntu-24.04-nccl-2.32.3-100526.0",
                   "/workspace/nccl-tests/build/all_reduce_perf")
_OCI_RDMA = Fabric(
    name="rdma", resource="rdma/oci_rdma", chart="", repository="", version="", namespace="kube-system",
    env=(("NCCL_NET", "IB"), ("NCCL_IB_GID_INDEX", "3"), ("NCCL_IB_TC", "41"), ("NCCL_IB_SL", "0"),
         ("NCCL_IB_TIMEOUT", "22"), ("NCCL_IB_SPLIT_DATA_ON_QPS", "0"), ("NCCL_DEBUG", "INFO")),
    image="ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.3",
    # Every Mellanox (PCI vendor 15b3) HCA in one shared resource; NCCL_IB_HCA then picks the RDMA ports.
    plugin_config=('{"periodicUpdateInterval": 300, "configList": [{"resourceName": "oci_rdma", "rdmaHcaMax": 64, '
                   '"selectors": {"vendors": ["15b3"]}}]}'),
    pod_units=1, labels_via_kubelet=True,
    fixed_size=True, required_extras=("tenancyId", "rdmaImageId"), unsupported_capacity=("spot",),
    nccl_test_image=_OCI_NCCL_TESTS[0], nccl_test_binary=_OCI_NCCL_TESTS[1])
# GKE GPUDirect (container-engine-accelerators gpudirect-tcpx/nccl-test-latest.yaml and nccl-config.yaml for TCPX,
# gpudirect-tcpxo/nccl-test-latest.yaml for TCPXO; versions as GoogleCloudPlatform/cluster-toolkit
# modules/compute/gke-node-pool/gpu_direct.tf pairs them: TCPX plugin v3.1.9 with RxDM v2.0.12, TCPXO plugin
# v1.0.8-1 with RxDM v1.0.14). The NICs are eth1..ethN in pods (networking.gke.io/interfaces), eth0 the pod network.
_GKE_LIB = "/usr/local/nvidia/lib64"  # where pods mount the node's /home/kubernetes/bin/nvidia/lib64 (plugin + NCCL)
_TCPX_PLUGIN = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9"
_TCPXO_PLUGIN = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.8-1"
_GPUDIRECT_ALL_REDUCE = "/third_party/nccl-tests-mpi/build/all_reduce_perf"
_TCPX = Fabric(
    name="gpudirect-tcpx", resource="", chart="", repository="", version="", namespace="kube-system",
    env=(("LD_LIBRARY_PATH", _GKE_LIB), ("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_CROSS_NIC", "0"),
         ("NCCL_ALGO", "Ring"), ("NCCL_PROTO", "Simple"), ("NCCL_NSOCKS_PERTHREAD", "4"),
         ("NCCL_SOCKET_NTHREADS", "1"), ("NCCL_DYNAMIC_CHUNK_SIZE", "524288"), ("NCCL_P2P_NET_CHUNKSIZE", "524288"),
         ("NCCL_P2P_PCI_CHUNKSIZE", "524288"), ("NCCL_P2P_NVL_CHUNKSIZE", "1048576"), ("NCCL_BUFFSIZE", "4194304"),
         ("NCCL_NET_GDR_LEVEL", "PIX"), ("NCCL_P2P_PXN_LEVEL", "0"),
         ("NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "eth1,eth2,eth3,eth4"), ("NCCL_GPUDIRECTTCPX_CTRL_DEV", "eth0"),
         ("NCCL_GPUDIRECTTCPX_TX_BINDINGS", "eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177;eth4:60-73,164-177"),
         ("NCCL_GPUDIRECTTCPX_RX_BINDINGS", "eth1:22-35,126-139;eth2:22-35,126-139;eth3:74-87,178-191;eth4:74-87,178-191"),
         ("NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS", "500000"),
         ("NCCL_DEBUG", "INFO")),
    needs_managed_driver=True,
    # The RxDM sidecar mounts /sys and /proc/sys and adds NET_ADMIN; the workload mounts the node's NCCL plugin.
    pod_security="fabric-sidecar",
    nccl_test_image=_TCPX_PLUGIN, nccl_test_binary=_GPUDIRECT_ALL_REDUCE,
    gpudirect=GpuDirect(
        installer="nccl-tcpx-installer",
        installer_image=_TCPX_PLUGIN,
        accelerator="nvidia-h100-80gb",
        rxdm_image="us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12",
        rxdm_container="tcpx-daemon",
        rxdm_command=("/tcpgpudmarxd/build/app/tcpgpudmarxd", "--gpu_nic_preset", "a3vm", "--gpu_shmem_type", "fd",
                      "--uds_path", "/run/tcpx", "--setup_param",
                      # Upstream's YAML passes the quotes and backslashes literally; kept byte for byte.
                      '\\"--verbose 128 2 0 \\"'),
        rxdm_capabilities=("NET_ADMIN",),
        rxdm_volumes=(("libraries", "/home/kubernetes/bin/nvidia/lib64", _GKE_LIB), ("tcpx-socket", "", "/run/tcpx"),
                      ("sys", "/sys", "/hostsysfs"), ("proc-sys", "/proc/sys", "/hostprocsysfs")),
        # NCCL reaches the RxDM through its Unix socket in the shared emptyDir, mounted at /tmp as upstream does.
        workload_volumes=(("libraries", "/home/kubernetes/bin/nvidia/lib64", _GKE_LIB), ("tcpx-socket", "", "/tmp")),
        extra_devices=(),
        mtu=8244, subnet_offset=0),
)
_TCPXO = Fabric(
    name="gpudirect-tcpxo", resource="", chart="", repository="", version="", namespace="kube-system",
    env=(("LD_LIBRARY_PATH", _GKE_LIB), ("NCCL_FASTRAK_CTRL_DEV", "eth0"),
         ("NCCL_FASTRAK_IFNAME", "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"), ("NCCL_SOCKET_IFNAME", "eth0"),
         ("NCCL_CROSS_NIC", "0"), ("NCCL_ALGO", "Ring,Tree"), ("NCCL_PROTO", "Simple"), ("NCCL_MIN_NCHANNELS", "4"),
         ("NCCL_P2P_NET_CHUNKSIZE", "524288"), ("NCCL_P2P_PCI_CHUNKSIZE", "524288"),
         ("NCCL_P2P_NVL_CHUNKSIZE", "1048576"), ("NCCL_FASTRAK_NUM_FLOWS", "2"),
         ("NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL", "0"), ("NCCL_BUFFSIZE", "8388608"), ("NCCL_FASTRAK_USE_SNAP", "1"),
         ("NCCL_FASTRAK_USE_LLCM", "1"), ("NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "/dev/aperture_devices"),
         ("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"), ("NCCL_NET_GDR_LEVEL", "PIX"),
         ("NCCL_FASTRAK_ENABLE_HOTPATH_LOGGING", "0"), ("NCCL_TUNER_PLUGIN", "libnccl-tuner.so"),
         ("NCCL_TUNER_CONFIG_PATH", f"{_GKE_LIB}/a3plus_tuner_config.textproto"),
         ("NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE", f"{_GKE_LIB}/a3plus_guest_config.textproto"),
         ("NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS", "600000"), ("NCCL_NVLS_ENABLE", "0"), ("NCCL_DEBUG", "INFO")),
    needs_managed_driver=True,
    pod_security="fabric-sidecar",
    nccl_test_image=_TCPXO_PLUGIN, nccl_test_binary=_GPUDIRECT_ALL_REDUCE,
    gpudirect=GpuDirect(
        installer="nccl-tcpxo-installer",
        installer_image=_TCPXO_PLUGIN,
        accelerator="nvidia-h100-mega-80gb",
        rxdm_image="us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.14",
        rxdm_container="tcpxo-daemon",
        rxdm_command=("/bin/sh", "-c", "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n"
                      "/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8 --uid= --alsologtostderr"),
        rxdm_capabilities=("NET_ADMIN", "NET_BIND_SERVICE"),
        rxdm_volumes=(("nvidia-install-dir-host", "/home/kubernetes/bin/nvidia", "/usr/local/nvidia"),
                      ("sys", "/sys", "/hostsysfs"), ("proc-sys", "/proc/sys", "/hostprocsysfs")),
        workload_volumes=(("libraries", "/home/kubernetes/bin/nvidia/lib64", _GKE_LIB),
                          ("aperture-devices", "/dev/aperture_devices", "/dev/aperture_devices")),
        extra_devices=("/dev/dmabuf_import_helper",),
        mtu=8244, subnet_offset=64, llcm=True),
)

_K8S_EFFECTS = {"NoSchedule": "NoSchedule", "PreferNoSchedule": "PreferNoSchedule", "NoExecute": "NoExecute"}
_API_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}

PROFILES: dict[str, CloudProfile] = {
    "aws": CloudProfile(
        name="aws",
        service="EKS",
        cluster_resource_suffix="eks",
        taint_effects=_API_EFFECTS,
        # The GPU Operator cannot own the driver on Amazon Linux (NVIDIA/gpu-operator#686): the EKS GPU AMI does.
        driver_owners=("managed",),
        default_driver="managed",
        # EKS allows 63 characters; EksCluster prefixes GPU node group names with "gpu-" (4).
        pool_naming=PoolNaming(max_len=59, pattern=r"[A-Za-z0-9][A-Za-z0-9_-]{0,58}"),
        default_system_instance="m6i.2xlarge",
        kubernetes_versions=_minors("1.32", "1.33", "1.34", "1.35", "1.36"),
        # CreateCluster's version is a minor ("1.35"); EKS picks the patch itself.
        kubernetes_version_form="minor",
        regions=_AWS_REGIONS,
        extras={
            "vpcId": ExtraKey(str, "existing VPC id; omit to create a private VPC", requires=("subnetIds",),
                              check=lambda v: None if v.startswith("vpc-") else f"must be a VPC id (vpc-...); got {v!r}"),
            "subnetIds": ExtraKey(list, "existing private subnet ids (two or more AZs)", check=_subnet_ids),
            "vpcCidr": ExtraKey(str, "CIDR of the VPC created when vpcId is omitted", check=_vpc_cidr),
            "amiType": ExtraKey(str, "GPU node AMI type: AL2023_x86_64_NVIDIA (default) or BOTTLEROCKET_x86_64_NVIDIA",
                                choices=tuple(_EKS_GPU_IMAGES)),
            # Pinned zones keep every subnet where it is whatever the region offers later (aws_network).
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
        # Karpenter 1.14.1 (components/autoscaling/karpenter.py) supports Kubernetes up to 1.36 (its compatibility
        # matrix); on a newer cluster its controller refuses to reconcile node classes ("karpenter version is not
        # compatible with K8s version", aws/karpenter-provider-aws#7127).
        provisioner_kubernetes_versions=("1.32", "1.33", "1.34", "1.35", "1.36"),
        # EFA is built into managed node groups' launch templates (aws_fabric); the EC2NodeClasses carry none of it.
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
        # EKS GPU node groups get EFA interfaces, a cluster placement group and the EFA device plugin (aws_fabric).
        fabrics={"efa": _EFA},
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
    ),
    "azure": CloudProfile(
        name="azure",
        service="AKS",
        cluster_resource_suffix="aks",
        taint_effects=_K8S_EFFECTS,
        driver_owners=("managed", "operator"),
        default_driver="managed",
        # AKS Linux agent pool names: lowercase letters and digits, start with a letter, at most 12.
        pool_naming=PoolNaming(max_len=12, pattern=r"[a-z][a-z0-9]{0,11}", drop_hyphens=True),
        default_system_instance="Standard_D8s_v5",
        kubernetes_versions=_minors("1.35", "1.36"),
        # ManagedCluster.kubernetesVersion takes a minor (AKS picks the newest patch) or a full patch version.
        kubernetes_version_form="minor-or-patch",
        regions=_AZURE_REGIONS,
        extras={
            "resourceGroup": ExtraKey(str, "existing resource group; omit to create one"),
            "vnetSubnetId": ExtraKey(str, "existing subnet id for nodes; omit to create a VNet"),
            "vnetCidr": ExtraKey(str, "address space of the VNet created when vnetSubnetId is omitted",
                                 check=_aks_vnet_cidr),
            "tenantId": ExtraKey(str, "Entra ID tenant for AKS-managed AAD"),
            "adminGroupObjectIds": ExtraKey(list, "Entra ID groups that administer the cluster", check=_guid_list),
            "zones": ExtraKey(list, "availability zones for the system and GPU pools, e.g. [\"1\", \"2\"] (GPU sizes "
                                    "are not in every zone)", check=_azure_zones),
            "deployerPrincipalType": ExtraKey(str, "who runs pulumi up on an Entra ID cluster: User (default) or "
                                                   "ServicePrincipal; it is granted Kubernetes cluster-admin",
                                              choices=("User", "ServicePrincipal")),
            "provisioner": ExtraKey(str, "who makes GPU nodes: pool (default; an autoscaled agent pool per GPU pool) "
                                         "or nap (node auto-provisioning: AKS-run Karpenter, a NodePool and "
                                         "AKSNodeClass per GPU pool)", choices=("pool", "nap")),
        },
        driver_note="AKS installs the driver unless the pool sets gpuProfile.driver=None",
        # AKS partitions GPUs itself from the pool's gpuInstanceProfile (MIG1g..MIG7g), fixed at creation.
        mig_via="pool",
        mig_pool_field="gpuInstanceProfile",
        # MIGNg selects the first profile with N compute slices; AKS has no way to ask for any other.
        mig_by_slices=True,
        # AKS creates MIG instances while installing its own driver; gpuProfile.driver=None skips both.
        pool_sharing_needs_managed_driver=True,
        # AKS convention for GPU pools (REFERENCE section 2): keeps non-GPU pods off by a second, well-known taint.
        extra_gpu_taints=(("sku", "gpu", "NoSchedule"),),
        # AKS adds this taint to every spot pool itself; declared so the operator tolerates it and state does not drift.
        spot_taints=(("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule"),),
        # AKS GPU node images bring the NVIDIA container runtime along with the driver they install.
        image_ships_toolkit=True,
        # AKS refuses authorized IP ranges on a private cluster.
        authorized_networks_public_only=True,
        # No IPv6 in authorizedIPRanges: our IPv4 clusters' API server has only an IPv4 address to allow.
        authorized_networks_ipv6=False,
        # AKS GPU nodes define only this containerd handler; with the default `nvidia` no operand pod starts.
        operator_runtime_class="nvidia-container-runtime",
        region_pattern=r"[a-z]+[a-z0-9]*",
        region_example="eastus2",
        # Constrained-vCPU sizes put the active vCPUs after a hyphen (Standard_E16-8s_v5, Standard_DS13-2_v2).
        instance_type_pattern=r"Standard_[A-Za-z]+[0-9]+(-[0-9]+)?[A-Za-z]*(_[A-Za-z0-9]+)*",
        instance_type_example="Standard_D8s_v5",
        # AKS node pools hold at most 1000 nodes (maxCount).
        max_pool_nodes=1000,
        # Node auto-provisioning (components/clouds/azure_karpenter.py): AKS runs Karpenter, whose NodePools buy
        # spot and on-demand VMs only.
        provisioner_key="provisioner",
        provisioner_unsupported_capacity=("reserved",),
        provisioner_capacity_note="a reserved pool is an agent pool preferred by the autoscaler's priority "
                                  "expander, which NAP does not run; Azure reservations discount on-demand VMs anyway",
        # InfiniBand links only the VMs of one scale set; NAP creates each node as a VM of its own.
        provisioner_refuses_fabric=True,
        provisioner_fabric_note="InfiniBand links only the VMs of one scale set, and NAP creates every node as a "
                                "standalone VM",
        # AKS-managed Entra ID RBAC binds groups by object id, not by name.
        team_group_check=_entra_group,
        # AKS documents no block or rack label on its nodes (ND InfiniBand VMs included): Kueue TAS can place by
        # hostname only (network_topology None).
        # ND pools get InfiniBand through the NVIDIA Network Operator; one agent pool is one scale set, the unit
        # Azure wires into one InfiniBand fabric (docs/azure.md).
        fabrics={"infiniband": _INFINIBAND},
    ),
    "gcp": CloudProfile(
        name="gcp",
        service="GKE",
        # masterAuthorizedNetworksConfig cidrBlocks take IPv6 CIDRs as well as IPv4 ones.
        authorized_networks_ipv6=True,
        cluster_resource_suffix="gke",
        taint_effects=_API_EFFECTS,
        driver_owners=("managed", "operator"),
        default_driver="managed",
        pool_naming=PoolNaming(max_len=40, pattern=r"[a-z]([a-z0-9-]{0,38}[a-z0-9])?"),
        default_system_instance="e2-standard-8",
        kubernetes_versions=_minors("1.35", "1.36"),
        # min_master_version takes a minor ("1.35") or a patch version ("1.35.2").
        kubernetes_version_form="minor-or-patch",
        regions=_GCP_REGIONS,
        # Dynamic Workload Scheduler: nodes of a queued node pool come only through ProvisioningRequests of this class.
        queued_provisioning_class="queued-provisioning.gke.io",
        extras={
            "project": ExtraKey(str, "GCP project id", required=True),
            "nodeAutoProvisioning": ExtraKey(dict, "node auto-provisioning: {maxCpu, maxMemoryGb, maxGpus: "
                                                   "{<GKE accelerator type>: count}}, cluster-wide totals including "
                                                   "the declared pools", check=_gke_nap),
            "network": ExtraKey(str, "existing VPC network; omit to create one"),
            "subnetwork": ExtraKey(str, "existing subnetwork with pod/service secondary ranges"),
            # Required: GKE starts initialNodeCount nodes in every zone of a pool, and without zones that is every
            # zone of the region, a count unknown until apply; GPU types are not in every zone either.
            "zones": ExtraKey(list, "node zones within the region, e.g. [us-central1-a, us-central1-c] (GKE counts "
                                    "initial nodes per zone; GPU availability differs per zone)", required=True,
                              check=_gcp_zones, zones=lambda value: list(enumerate(value))),
            "masterIpv4CidrBlock": ExtraKey(str, "/28 for the private control plane", check=_gke_master_cidr),
            "securityGroup": ExtraKey(str, "Google Groups for RBAC: gke-security-groups@<domain>, the group whose "
                                           "member groups GKE passes to Kubernetes RBAC (team groups)",
                                      check=_gke_security_group),
        },
        driver_note="GKE installs the driver when gpu_driver_version is DEFAULT or LATEST",
        # GKE's own device plugin implements gpuPartitionSize and gpuSharingConfig; configuring the
        # operator as well would make two owners of the same GPUs.
        mig_via="pool",
        sharing_via="pool",
        mig_pool_field="gpuPartitionSize",
        # INSTALLATION_DISABLED also drops GKE's device plugin, which is what partitions and shares GPUs.
        pool_sharing_needs_managed_driver=True,
        # GKE caps gpuSharingConfig.maxSharedClientsPerGpu at 48.
        max_pool_sharing_replicas=48,
        # Without it GKE's device plugin also advertises the GPUs the operator's plugin serves (REFERENCE section 1).
        operator_driver_labels={"gke-no-default-nvidia-gpu-device-plugin": "true"},
        # GKE's own device plugin serves pools with a GKE-installed driver; it implements gpuPartitionSize and
        # gpuSharingConfig, so the operator's plugin must not serve them too.
        cloud_device_plugin=True,
        # GKE's plugin registers GPUs by device name (nvidia0), so dcgm-exporter must match pods by name.
        cloud_plugin_gpu_id_type="device-name",
        # GKE installs its driver under /home/kubernetes/bin/nvidia on COS, not under /run/nvidia/driver.
        managed_driver_root="/home/kubernetes/bin/nvidia",
        # COS's read-only root has no place for the toolkit's runtime hooks: containers get GPUs through CDI.
        needs_cdi=True,
        # GKE admits critical-priority pods outside kube-system only up to a quota (operator pods use them).
        critical_pods_need_quota=True,
        zones_key="zones",
        # Google Groups for RBAC: a caller's Google groups reach RBAC as their emails.
        team_group_check=_google_group,
        team_groups_key="securityGroup",
        # GKE 1.33+: the toolkit misconfigures containerd from `containerd config dump` (NVIDIA GKE known issue).
        toolkit_env=(("RUNTIME_CONFIG_SOURCE", "file"),),
        region_pattern=r"[a-z]+-[a-z]+[0-9]+",
        region_example="us-central1",
        instance_type_pattern=r"[a-z][a-z0-9]*-[a-z0-9]+(-[a-z0-9]+)*",
        instance_type_example="e2-standard-8",
        # GKE cluster names: at most 40 characters, starting with a letter.
        cluster_name_pattern=r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?",
        cluster_name_doc="GKE cluster names start with a letter: 1-40 lowercase letters, digits and '-', not ending "
                         "with '-'",
        zone_pattern="{region}-[a-z]",
        # GKE allows at most 1000 nodes per node pool zone: a regional pool over three zones holds 3000.
        max_pool_nodes=1000,
        max_pool_nodes_per_zone=True,
        # A3 High (TCPX, 4 GPU NICs) and A3 Mega (TCPXO, 8) pools get one VPC per GPU NIC, multi-networking, compact
        # placement, the NCCL plugin installer and the NRI device injector (gcp_fabric, gpu/gpudirect); A3 Ultra and
        # A4 (RDMA over RoCE) are not attached.
        fabrics={"gpudirect-tcpx": _TCPX, "gpudirect-tcpxo": _TCPXO},
        # GKE labels the VMs of A3 Ultra and A4 (the RDMA types) with their reservation block, sub-block and host
        # (Google Cloud AI Hypercomputer, schedule-gke-workloads-tas); A3 High/Mega nodes are not documented to get them.
        network_topology=NetworkTopology(
            levels=("cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock",
                    "cloud.google.com/gce-topology-host"),
            instance_types=r"a3-ultragpu-8g|a4-highgpu-8g"),
    ),
    "oci": CloudProfile(
        name="oci",
        service="OKE",
        # No IPv6 in the endpoint NSG's rules: an IPv6 source needs an IPv6-enabled VCN, and ours has IPv4 blocks only.
        authorized_networks_ipv6=False,
        taint_effects=_K8S_EFFECTS,
        driver_owners=("managed", "operator"),
        default_driver="managed",
        pool_naming=PoolNaming(max_len=255, pattern=r"[A-Za-z0-9][A-Za-z0-9_.-]*"),
        default_system_instance="VM.Standard.E5.Flex",
        extras={
            "compartmentId": ExtraKey(str, "OCI compartment OCID", required=True, check=_ocid("compartment")),
            "vcnId": ExtraKey(str, "existing VCN OCID; omit to create one",
                              requires=("nodeSubnetId", "endpointSubnetId", "serviceLbSubnetId"), check=_ocid("vcn")),
            "vcnCidr": ExtraKey(str, "CIDR of the VCN created when vcnId is omitted", check=_vcn_cidr),
            "nodeSubnetId": ExtraKey(str, "existing private node subnet OCID", requires=("vcnId",),
                                     check=_ocid("subnet")),
            # Refused, not dropped silently: an adopted network planned for VCN-native pods must be re-planned.
            "podSubnetId": ExtraKey(str, "not used: pods run on flannel overlay (docs/oci.md)",
                                    check=lambda v: "OKE clusters here use flannel overlay pod networking, the only one "
                                                    "Calico's policy-only install fits (docs/oci.md); pods take no "
                                                    "subnet: remove it. allowed: (absent)"),
            "endpointSubnetId": ExtraKey(str, "existing API endpoint subnet OCID", requires=("vcnId",),
                                         check=_ocid("subnet")),
            "serviceLbSubnetId": ExtraKey(str, "existing load balancer subnet OCID", requires=("vcnId",),
                                          check=_ocid("subnet")),
            # Required: every stack has GPU pools, and OKE has no default GPU image to fall back to.
            "gpuImageId": ExtraKey(str, "GPU node image OCID: an OKE GPU image (Oracle Linux with the NVIDIA driver "
                                        "baked in) for the cluster's Kubernetes version", required=True,
                                   check=_ocid("image")),
            "imageId": ExtraKey(str, "non-GPU OKE node image OCID for the system pool and for GPU pools with "
                                     "driver: operator", required=True, check=_ocid("image")),
            "availabilityDomain": ExtraKey(str, "one availability domain for every node pool (bare-metal GPU shapes "
                                                "and RDMA cluster networks are usually in one AD); default: all ADs"),
            # Dynamic groups live in the tenancy, not a compartment; RDMA nodes join as instance principals.
            "rdmaImageId": ExtraKey(str, "GPU node image OCID with the RDMA stack (NVIDIA driver, Mellanox OFED, OKE "
                                         "node packages), e.g. an oci-hpc-oke worker image, for fabric: rdma pools",
                                    check=_ocid("image")),
            "tenancyId": ExtraKey(str, "tenancy OCID, where the dynamic group of RDMA cluster-network nodes is created "
                                       "(required with fabric: rdma)", check=_ocid("tenancy")),
        },
        driver_note="OKE GPU images ship the driver (driver: managed); driver: operator pools boot the non-GPU "
                    "cluster.oci.imageId instead, so the GPU Operator is the only driver owner",
        # OKE offers the operator as its NvidiaGpuOperator add-on; we install the chart instead (same values on every
        # cloud), so that add-on stays off, and OKE's own GPU plugin must not advertise GPUs next to the operator's.
        operator_note="OKE add-on NvidiaGpuOperator unused (this Helm release is the operator); OKE's NvidiaGpuPlugin "
                      "add-on is adopted and pinned to no node, so only the operator's device plugin advertises GPUs",
        # OKE takes full versions ("v1.35.1") from its supported list only; a pinned patch per minor keeps plans
        # deterministic (no control-plane upgrade because Oracle published a newer patch).
        kubernetes_versions={"1.34": "v1.34.1", "1.35": "v1.35.1"},
        kubernetes_version_form="patch",
        kubernetes_version_prefix="v",
        regions=_OCI_REGIONS,
        # OKE node pools have no autoscaling of their own: the Cluster Autoscaler resizes them within min/max.
        autoscaler="cluster-autoscaler",
        # The OCI autoscaler builds a node pool's scale-from-zero template from its shape's GPU count
        # (cloudprovider/oci/nodepools/oci_manager.go): only nvidia.com/gpu, never MIG resources.
        autoscaler_template_whole_gpus=True,
        # OCI region identifiers are <geo>-<name>-<n>, the name a city (us-ashburn-1) that government and dedicated
        # regions prefix (us-gov-ashburn-1, uk-gov-london-1, eu-dcc-milan-1); a compass word before the number means
        # an AWS region was pasted.
        region_pattern=r"(?!.*-(north|south|east|west|central|northeast|southeast|northwest|southwest)-[0-9]+$)"
                       r"[a-z]{2}(-[a-z]+)+-[0-9]+",
        region_example="us-ashburn-1",
        instance_type_pattern=r"(VM|BM)\.[A-Za-z0-9.]+",
        instance_type_example="VM.Standard.E5.Flex",
        # OKE node pools hold at most 1000 nodes (node pool size limit).
        max_pool_nodes=1000,
        # Bare-metal GPU pools on an RDMA cluster network of self-managed nodes (oci_fabric), as Oracle's
        # oci-hpc-oke quickstart builds them.
        fabrics={"rdma": _OCI_RDMA},
        # Fabric-less OKE pools test with Oracle's own image too: its registry is the cloud's, and its NCCL carries no
        # other cloud's network plugin.
        nccl_socket_test=_OCI_NCCL_TESTS,
        # Neither OKE CNI enforces NetworkPolicy; Oracle's route is Calico ("Pod Networking").
        calico_policy_only=True,
        # Not OKE but Oracle's node labeler (oci-hpc-oke's oci-hpc-oke-utils chart, from instance metadata) writes
        # these; not installed: its image installs unpinned Python packages at start-up, it has no published chart
        # repository to pin, and its repository has no license file.
        network_topology=NetworkTopology(
            levels=("oci.oraclecloud.com/rdma.hpc_island_id", "oci.oraclecloud.com/rdma.network_block_id",
                    "oci.oraclecloud.com/rdma.local_block_id"),
            instance_types=r"BM\.GPU.*",
            writer="Oracle's oci-hpc-oke node labeler (chart oci-hpc-oke-utils), not OKE, writes them and the "
                   "platform does not install it (it installs unpinned Python packages when its pods start)"),
    ),
}


def profile(cloud: str) -> CloudProfile:
    """The profile of `cloud`, or a KeyError naming the allowed clouds."""
    try:
        return PROFILES[cloud]
    except KeyError:
        raise KeyError(f"unknown cloud {cloud!r}; allowed: {', '.join(PROFILES)}") from None
