"""The typed stack config: what `gpu-platform:*` keys mean once validated."""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from components.catalog import CLOUDS  # noqa: F401  (the clouds the config accepts: those the catalog covers)
from components.catalog.types import InstanceType
# The policy block is the policy pack's to read and judge; the config carries it as the pack reads it.
from policies.exemptions import Exemption, Policy  # noqa: F401

ENVIRONMENTS = ("production", "staging", "development")
CAPACITY_TYPES = ("on-demand", "spot", "reserved")
WORKLOADS = ("training", "inference", "interactive")
SHARING_MODES = ("none", "mig", "mps", "time-slicing")
DRIVER_OWNERS = ("managed", "operator")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PRIORITIES = ("critical", "high", "normal", "low")
EGRESS = ("internet", "none")
# Pod Security levels a team namespace may enforce: baseline by default; privileged only where a fabric needs it.
# fabric-sidecar: baseline for every pod except exactly the team's GPUDirect sidecar, held by the platform's own
# admission policy (components/tenancy/fabric_baseline.py), since Pod Security admission has no such exception.
FABRIC_SIDECAR = "fabric-sidecar"
POD_SECURITY_LEVELS = ("baseline", "restricted", FABRIC_SIDECAR, "privileged")
_STRICTEST_FIRST = ("restricted", "baseline", FABRIC_SIDECAR, "privileged")  # each admits every pod the ones before it admit


def pod_security_admits(level: str, needed: str) -> bool:
    """Whether a namespace enforcing Pod Security `level` admits pods that need `needed`."""
    return _STRICTEST_FIRST.index(level) >= _STRICTEST_FIRST.index(needed)


def looser_pod_security(*levels: str) -> str:
    """The least strict of `levels`: what pods needing each of them need together."""
    return max(levels, key=_STRICTEST_FIRST.index)
# How a pool's nodes are obtained: its autoscaler as pods wait, or all at once for an admitted Kueue workload
# (GKE Dynamic Workload Scheduler, flex-start with queued provisioning).
PROVISIONING = ("autoscaler", "queued")  # what a team's pods may reach beyond the cluster (teams[].egress)



def default(cls: type, name: str) -> Any:
    """A field's default as declared below: validation reads its defaults here, so each is written once."""
    for f in fields(cls):
        if f.name == name:
            if f.default is not MISSING:
                return f.default
            if f.default_factory is not MISSING:
                return f.default_factory()
    raise KeyError(f"{cls.__name__}.{name} has no default")


GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT_VALUE = "present"


@dataclass(frozen=True)
class Taint:
    """A Kubernetes node taint in Kubernetes spelling; clouds translate the effect."""

    key: str
    value: str
    effect: str = "NoSchedule"

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}"


GPU_TAINT = Taint(GPU_TAINT_KEY, GPU_TAINT_VALUE, "NoSchedule")


@dataclass(frozen=True)
class NodePool:
    """The system (non-GPU) pool every cluster gets."""

    instance_type: str
    min_nodes: int = 2
    max_nodes: int = 4


@dataclass(frozen=True)
class Cluster:
    """The Kubernetes cluster to create, or adopt through `existingKubeconfig`."""

    name: str
    region: str
    kubernetes_version: str
    system_pool: NodePool
    existing_kubeconfig: str | None = None
    private_endpoint: bool = False
    authorized_networks: tuple[str, ...] = ()  # IPv4 CIDRs that may reach the API endpoint; empty: no limit set
    extras: dict[str, Any] = field(default_factory=dict)  # the `cluster.<cloud>` block
    authorized_networks: tuple[str, ...] = ()  # CIDRs allowed to reach the Kubernetes API endpoint

    @property
    def adopted(self) -> bool:
        return self.existing_kubeconfig is not None

    @property
    def kubernetes_minor(self) -> str:
        """The minor of kubernetes_version, which may name a patch (1.35.2 -> 1.35): what versioned APIs key on."""
        return ".".join(self.kubernetes_version.split(".")[:2])


@dataclass(frozen=True)
class Sharing:
    """How one pool's GPUs are shared between pods."""

    mode: str = "none"
    mig_profile: str | dict[str, int] | None = None  # "all-1g.10gb", "all-balanced" or {profile: count}
    replicas: int | None = None

    def mig_layout(self, instance: InstanceType) -> dict[str, int]:
        """MIG instances per GPU, by profile name, for this pool's GPU model."""
        if self.mode != "mig" or self.mig_profile is None:
            return {}
        if isinstance(self.mig_profile, dict):
            return dict(self.mig_profile)
        if self.mig_profile == "all-balanced":
            return dict(instance.gpu.mig_balanced)
        profile = instance.gpu.mig_profile(self.mig_profile.removeprefix("all-"))
        return {profile.name: profile.max_per_gpu} if profile else {}

    @property
    def mig_config_name(self) -> str | None:
        """The mig-parted config a node selects through `nvidia.com/mig.config`."""
        if self.mode != "mig":
            return None
        if isinstance(self.mig_profile, dict):
            name = "custom-" + "-".join(f"{k}x{v}" for k, v in sorted(self.mig_profile.items()))
        else:
            name = self.mig_profile
        # A label value cannot hold "+": spell "+me" profiles ".me" as mig-parted's own config names do.
        return name.replace("+", ".")


@dataclass(frozen=True)
class GpuPool:
    """A dedicated GPU node pool, always tainted NoSchedule."""

    name: str
    instance_type: str
    instance: InstanceType
    max_nodes: int
    min_nodes: int = 0
    capacity_type: str = "on-demand"
    workload: str = "training"
    sharing: Sharing = field(default_factory=Sharing)
    driver: str = "managed"
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    cloud_name: str = ""  # the pool's name as the cloud spells it (see CloudProfile.pool_name)
    topology: bool = False  # Kueue topology-aware scheduling on this pool's ResourceFlavor
    fabric: str = "none"  # the fast fabric its nodes get: "none" or a CloudProfile.fabrics name (e.g. "efa")
    provisioning: str = "autoscaler"  # one of PROVISIONING

    @property
    def queued(self) -> bool:
        return self.provisioning == "queued"

    @property
    def all_taints(self) -> tuple[Taint, ...]:
        """The GPU taint first, then the pool's extra ones."""
        return (GPU_TAINT, *(t for t in self.taints if t != GPU_TAINT))


@dataclass(frozen=True)
class Gang:
    """All-or-nothing admission of distributed jobs."""

    enabled: bool = True
    timeout_s: int = 600
    recovery_timeout_s: int | None = None


@dataclass(frozen=True)
class Scheduler:
    """The batch scheduler that admits GPU workloads."""

    kind: str = "kueue"
    gang: Gang = field(default_factory=Gang)
    fair_sharing: bool = True
    allow_overcommit: bool = False  # nominal quotas may add up to more than a pool offers at maxNodes
    frameworks: tuple[str, ...] = ()  # job framework operators installed and enabled in Kueue


@dataclass(frozen=True)
class TeamLimits:
    """Caps on what a team's pods request in all, wherever they run (teams[].limits); None: derived from its pools
    (tenancy/compute_quota.py)."""

    cpu: str | None = None  # a Kubernetes quantity, e.g. "64" or "500m"
    memory: str | None = None  # e.g. "256Gi"
    pods: int | None = None


@dataclass(frozen=True)
class Team:
    """A tenant: its namespace, GPU quota per pool, priority and admin groups."""

    name: str
    quotas: dict[str, int]
    borrowing_limit: int | None = None
    lending_limit: int | None = None
    priority: str = "normal"
    groups: tuple[str, ...] = ()
    principals: tuple[str, ...] = ()  # cloud identities put in `groups` where the cloud needs the mapping (EKS)
    reclaim: bool = False  # the reclaimer may take back this team's idle GPUs (observability.reclaim)
    egress: str = "internet"  # public addresses only, or nothing outside the cluster but DNS
    pod_security: str = "baseline"  # the Pod Security level its namespace enforces (POD_SECURITY_LEVELS)
    limits: TeamLimits = field(default_factory=TeamLimits)


@dataclass(frozen=True)
class Prometheus:
    """Where DCGM metrics are scraped and rules evaluated."""

    install: bool = True
    namespace: str = "monitoring"
    release_label: str = "kube-prometheus-stack"  # ServiceMonitors carry `release: <this>`
    url: str | None = None  # HTTP API of an existing Prometheus (install: false), for the reclaimer


@dataclass(frozen=True)
class Slo:
    """GPU utilization objectives that alerts and the reclaimer enforce."""

    min_utilization: float = 0.5
    idle_minutes: int = 30
    pending_minutes: int = 60  # GPU work waiting longer than this is alerted


@dataclass(frozen=True)
class Reclaim:
    """The opt-in job that takes idle allocated GPUs back from opted-in teams."""

    enabled: bool = False
    dry_run: bool = True
    schedule: str = "*/10 * * * *"


@dataclass(frozen=True)
class Observability:
    """DCGM, Prometheus and SLO settings."""

    dcgm: bool = True
    prometheus: Prometheus = field(default_factory=Prometheus)
    slo: Slo = field(default_factory=Slo)
    reclaim: Reclaim = field(default_factory=Reclaim)


@dataclass(frozen=True)
class PlatformConfig:
    """One stack's validated config."""

    cloud: str
    environment: str
    cluster: Cluster
    gpu_pools: tuple[GpuPool, ...]
    scheduler: Scheduler
    teams: tuple[Team, ...]
    observability: Observability
    policy: Policy
    warnings: tuple[str, ...] = ()

    @property
    def production(self) -> bool:
        return self.environment == "production"

    @property
    def protected(self) -> bool:
        """Whether stateful resources carry `protect`: staging rehearses production's upgrades, so an `up` that
        production would refuse is refused there first."""
        return self.environment in ("production", "staging")

    def pool(self, name: str) -> GpuPool:
        return next(p for p in self.gpu_pools if p.name == name)
