"""One profile per cloud: every per-cloud fact the config and components need, in one typed table.

Components read these facts instead of branching on the cloud name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExtraKey:
    """One key allowed in the `cluster.<cloud>` block."""

    kind: type | tuple[type, ...]
    doc: str
    required: bool = False


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


_K8S_EFFECTS = {"NoSchedule": "NoSchedule", "PreferNoSchedule": "PreferNoSchedule", "NoExecute": "NoExecute"}
_API_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}

PROFILES: dict[str, CloudProfile] = {
    "aws": CloudProfile(
        name="aws",
        service="EKS",
        taint_effects=_API_EFFECTS,
        # The GPU Operator cannot own the driver on Amazon Linux (NVIDIA/gpu-operator#686): the EKS GPU AMI does.
        driver_owners=("managed",),
        default_driver="managed",
        pool_naming=PoolNaming(max_len=63, pattern=r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}"),
        default_system_instance="m6i.2xlarge",
        extras={
            "vpcId": ExtraKey(str, "existing VPC id; omit to create a private VPC"),
            "subnetIds": ExtraKey(list, "existing private subnet ids (two or more AZs)"),
            "vpcCidr": ExtraKey(str, "CIDR of the VPC created when vpcId is omitted"),
            "amiType": ExtraKey(str, "GPU node AMI type: AL2023_x86_64_NVIDIA (default) or BOTTLEROCKET_x86_64_NVIDIA"),
            "publicAccessCidrs": ExtraKey(list, "CIDRs allowed to reach a public API endpoint"),
        },
        driver_note="the EKS GPU AMI owns driver and toolkit; the operator cannot install the driver on Amazon Linux, NVIDIA/gpu-operator#686",
    ),
    "azure": CloudProfile(
        name="azure",
        service="AKS",
        taint_effects=_K8S_EFFECTS,
        driver_owners=("managed", "operator"),
        default_driver="managed",
        # AKS Linux agent pool names: lowercase letters and digits, start with a letter, at most 12.
        pool_naming=PoolNaming(max_len=12, pattern=r"[a-z][a-z0-9]{0,11}", drop_hyphens=True),
        default_system_instance="Standard_D8s_v5",
        extras={
            "resourceGroup": ExtraKey(str, "existing resource group; omit to create one"),
            "vnetSubnetId": ExtraKey(str, "existing subnet id for nodes; omit to create a VNet"),
            "vnetCidr": ExtraKey(str, "address space of the VNet created when vnetSubnetId is omitted"),
            "tenantId": ExtraKey(str, "Entra ID tenant for AKS-managed AAD"),
            "adminGroupObjectIds": ExtraKey(list, "Entra ID groups that administer the cluster"),
            "zones": ExtraKey(list, "availability zones for GPU pools, e.g. [\"1\", \"2\"] (GPU sizes are not in every zone)"),
            "deployerPrincipalType": ExtraKey(str, "who runs pulumi up on an Entra ID cluster: User (default) or "
                                                   "ServicePrincipal; it is granted Kubernetes cluster-admin"),
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
    ),
    "gcp": CloudProfile(
        name="gcp",
        service="GKE",
        taint_effects=_API_EFFECTS,
        driver_owners=("managed", "operator"),
        default_driver="managed",
        pool_naming=PoolNaming(max_len=40, pattern=r"[a-z]([a-z0-9-]{0,38}[a-z0-9])?"),
        default_system_instance="e2-standard-8",
        extras={
            "project": ExtraKey(str, "GCP project id", required=True),
            "network": ExtraKey(str, "existing VPC network; omit to create one"),
            "subnetwork": ExtraKey(str, "existing subnetwork with pod/service secondary ranges"),
            "zones": ExtraKey(list, "node zones within the region (GPU availability differs per zone)"),
            "masterIpv4CidrBlock": ExtraKey(str, "/28 for the private control plane"),
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
    ),
    "oci": CloudProfile(
        name="oci",
        service="OKE",
        taint_effects=_K8S_EFFECTS,
        driver_owners=("managed", "operator"),
        default_driver="managed",
        pool_naming=PoolNaming(max_len=255, pattern=r"[A-Za-z0-9][A-Za-z0-9_.-]*"),
        default_system_instance="VM.Standard.E5.Flex",
        extras={
            "compartmentId": ExtraKey(str, "OCI compartment OCID", required=True),
            "vcnId": ExtraKey(str, "existing VCN OCID; omit to create one"),
            "nodeSubnetId": ExtraKey(str, "existing private node subnet OCID"),
            "endpointSubnetId": ExtraKey(str, "existing API endpoint subnet OCID"),
            "serviceLbSubnetId": ExtraKey(str, "existing load balancer subnet OCID"),
            "gpuImageId": ExtraKey(str, "GPU node image OCID (an OKE GPU image with the driver baked in)"),
            "imageId": ExtraKey(str, "system node image OCID"),
            "availabilityDomain": ExtraKey(str, "availability domain for node placement"),
        },
        driver_note="OKE GPU images ship the driver",
    ),
}


def profile(cloud: str) -> CloudProfile:
    """The profile of `cloud`, or a KeyError naming the allowed clouds."""
    try:
        return PROFILES[cloud]
    except KeyError:
        raise KeyError(f"unknown cloud {cloud!r}; allowed: {', '.join(PROFILES)}") from None
