"""The shapes of per-cloud facts: what every cloud package states about itself (its `facts.py`), read by the config
and the components instead of branching on the cloud name. Free of Pulumi and of any cloud SDK."""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Callable



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


# Creates the in-cluster parts of the fabrics in use that share it, in one call (fabrics sharing an installer may
# share resources, as GKE's two GPUDirect fabrics share the NRI injector): (name, config, fabrics, values, opts), values
# keyed by fabric name; it names its own resources below `name`.
FabricInstaller = Callable[[str, Any, "tuple[Fabric, ...]", dict[str, dict[str, Any]], Any], None]


@dataclass(frozen=True)
class NcclTestImage:
    """An image `gpu-platform nccl-test` runs: nccl-tests' all_reduce_perf built with MPI, Open MPI and OpenSSH, pinned,
    from the cloud's (or NVIDIA's) own published test or framework images."""

    image: str
    binary: str  # all_reduce_perf (the MPI build) in the image
    source: str  # who publishes the image and where it is documented, printed with a socket test's note
    # Shell run on every rank before sshd starts, for what the image leaves to its callers (its sshd, its NCCL).
    setup: str = ""
    env: tuple[tuple[str, str], ...] = ()  # what the image needs set, e.g. LD_LIBRARY_PATH to its own NCCL
    # mpirun by absolute path where the image's Open MPI is off the default PATH: Open MPI then takes its prefix from
    # it, so the ranks started over SSH (with sshd's PATH) find orted.
    mpirun: str = "mpirun"


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
    # The fabric's own in-cluster installer, a function of its cloud package that imports it on call (facts stay
    # free of Pulumi): `install(name, config, fabrics, values, opts)` (a FabricInstaller), called once for all the
    # fabrics in use whose records name the same function, values being each one's pools' nodeSelector and
    # tolerations. None: `chart` is a plain device plugin chart taking those values.
    installer: "Callable[[], FabricInstaller] | None" = None
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
    # The NCCL test image with this fabric's transport (GKE GPUDirect's is its NCCL plugin installer image, which
    # carries nccl-tests built against the plugin); None: the cloud's own (CloudProfile.nccl_test).
    nccl_test: NcclTestImage | None = None
    # A fabric without a device plugin (resource and chart empty) reaches pods another way, which its cloud package
    # keeps to itself; what the rest of the platform must know of it: the sidecar its pods run beside the workload
    # (admitted by teams[].podSecurity fabric-sidecar), and how many nodes its pools' compact placement keeps close
    # together (0: its pools get none).
    pod_sidecar: "PodSidecar | None" = None
    placement_max_nodes: int = 0
    # What a pod using all of a node's NICs of such a fabric adds, a pure function of its cloud package:
    # (fabric, gpus, nics) -> {"annotations", "sidecar", "volumes", "mounts"} (the NCCL test builds its pods with it).
    workload_pod: "Callable[[Fabric, int, int], dict[str, Any]] | None" = None
    # The fabric works only with the cloud's own GPU driver (driver: managed); `auto` leaves other pools at none.
    needs_managed_driver: bool = False
    # The Pod Security level pods using the fabric need (GKE GPUDirect: host paths and NET_ADMIN, so privileged).
    pod_security: str = "baseline"


@dataclass(frozen=True)
class PodSidecar:
    """The container every pod using a fabric's NICs runs beside its workload, and what it needs beyond the Pod Security
    baseline: exactly this image and command may add these capabilities and mount these host paths, and the pod's
    other containers may mount the workload host paths (tenancy/fabric_baseline.py admits exactly this)."""

    image: str
    command: tuple[str, ...]
    capabilities: tuple[str, ...]
    host_paths: tuple[str, ...]  # the sidecar's hostPath volumes
    workload_host_paths: tuple[str, ...]  # the workload containers' (read-only, except device directories)


def writable_host_path(host_path: str) -> bool:
    """Device directories (NCCL maps their files read-write); every other host directory a fabric's workload mounts,
    such as the node's NCCL plugin that every pod on it shares, is mounted read-only."""
    return host_path.startswith("/dev/")


def workload_mount(volume: str, host_path: str, mount_path: str) -> dict[str, Any]:
    """A fabric workload container's mount; the team's admission policy (tenancy/fabric_baseline.py) holds it to
    this."""
    mount: dict[str, Any] = {"name": volume, "mountPath": mount_path}
    if host_path and not writable_host_path(host_path):
        mount["readOnly"] = True
    return mount


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
    # Its choices spelled otherwise than the provisioner they choose (components/provisioning/kinds.py), as
    # choice -> provisioner: a cloud's own name for a provisioner it runs itself.
    provisioner_kinds: dict[str, str] = field(default_factory=dict)
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
    # The nccl-test image of pools without a fabric (NCCL over TCP sockets) and of fabrics without their own: every
    # cloud names one its vendor (or NVIDIA) publishes, so no pool runs another cloud's network stack.
    nccl_test: NcclTestImage = field(kw_only=True)
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
    # The logical name of the cluster resource is `<cluster.name>-<this>` (components/clouds/<cloud>/cluster.py): what a
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




@dataclass(frozen=True)
class OfflineFacts:
    """What the offline engine (gpu_platform.engine) answers for a cloud's resources and invokes, in place of its
    provider: outputs the provider computes that the program reads back, invokes the program makes (by token), and
    the inputs whose change replaces a resource, each from the provider's own schema."""

    # Real zone names per region, so a stack naming a real zone plans offline as it applies; other regions get
    # `fallback_zones` (None: the cloud has no zone invoke).
    zones: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fallback_zones: Callable[[str], tuple[str, ...]] | None = None
    computed: dict[str, Callable[[str, dict], dict]] = field(default_factory=dict)  # type -> (name, inputs) -> outputs
    invokes: dict[str, Callable[[dict], dict]] = field(default_factory=dict)  # token -> args -> answer
    zone_invokes: dict[str, Callable[[tuple[str, ...], dict], dict]] = field(default_factory=dict)  # (zones, args)
    # Wire input paths whose change replaces a resource (a path names an object or list as a whole), and those
    # updated in place that reach only nodes created afterwards.
    replace_on_changes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    new_nodes_only: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The cloud's node pool resource types: one outside a GpuNodePool is the cluster's system pool (plan diffs).
    node_pool_types: tuple[str, ...] = ()

    def zones_of(self, region: str) -> tuple[str, ...]:
        """The zone (OCI: availability domain) names of `region`: the table's, else the generic pattern."""
        if region in self.zones:
            return self.zones[region]
        if self.fallback_zones is None:
            raise KeyError(f"no offline zones for region {region!r}")
        return self.fallback_zones(region)


def ipv4_network(value: Any) -> ipaddress.IPv4Network | None:
    """`value` as an IPv4 network, or None when it is not one (host bits set included)."""
    try:
        return ipaddress.IPv4Network(value)
    except (ValueError, TypeError):
        return None


# Where a created VPC, VNet or VCN may live: RFC 1918 and CGNAT, exactly what a team's internet-egress
# NetworkPolicy excepts (components/tenancy/isolation.py). In public space its nodes, kubelets and load balancers
# would count as "internet" to every team pod, and the real owners of those addresses would become unreachable.
PRIVATE_NETWORKS = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                            "100.64.0.0/10"))


def public_space(net: ipaddress.IPv4Network) -> str | None:
    """Why `net` cannot hold a created network, or None when it is private address space."""
    if any(net.subnet_of(private) for private in PRIVATE_NETWORKS):
        return None
    return (f"{net} is not private address space: team pods' internet egress would reach the cluster's nodes there; "
            f"use a range inside {', '.join(map(str, PRIVATE_NETWORKS))}")


def created_network_cidr(example: str, fits: Callable[[ipaddress.IPv4Network], str | None]
                         ) -> Callable[[str], str | None]:
    """A check of a created VPC/VNet/VCN's CIDR: an IPv4 network in private space, then the cloud's own `fits`."""
    def check(value: str) -> str | None:
        net = ipv4_network(value)
        if net is None:
            return f"{value!r} is not an IPv4 network like {example} (host bits zero)"
        return public_space(net) or fits(net)
    return check


def minors(*minors: str) -> dict[str, str]:
    """A version table for APIs that take the bare minor (EKS, AKS, GKE)."""
    return {minor: minor for minor in minors}



# How Kubernetes taint effects are spelled: as Kubernetes does, or as the enum of a cloud API that takes them.
K8S_EFFECTS = {"NoSchedule": "NoSchedule", "PreferNoSchedule": "PreferNoSchedule", "NoExecute": "NoExecute"}
API_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}

# Kubernetes minors each cloud creates clusters on, as of 2026-12-03 (each cloud's sources at its kubernetes_versions).
# Upstream (kubernetes.io/releases): 1.34 reached end of life 2026-10-27; 1.35 is supported to 2027-02-28, 1.36 to
# 2027-06-28, 1.37 to 2027-10-28. 1.37 is left out everywhere until every cloud has it GA. The default is the newest
# minor on every cloud's table.
DEFAULT_KUBERNETES_VERSION = "1.35"
KUBERNETES_VERSIONS_AS_OF = "2026-12-03"

# Each cloud's public regions on this date (AWS and Azure with their China and government regions). OCI dedicated
# regions (eu-dcc-*) belong to one customer each and are never listed.
REGIONS_AS_OF = "2026-12-03"
