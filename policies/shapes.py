"""Each cloud's node pool resource, read into the same Kubernetes-level facts: GPU or not, taints, labels,
spot, and whether the cloud installs the NVIDIA driver.

The one table rules consult instead of branching on the cloud; wire names are the providers' (camelCase).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

from policies.props import get, items, mapping
from policies.taints import API_EFFECTS, Taint, kubelet_taints, taint_from_map, taint_from_string

POOL_COMPONENT = "gpu-platform:cluster:GpuNodePool"


@dataclass(frozen=True)
class TemplateLink:
    """A node pool whose instance type can come from a separate template resource instead of its own field."""

    type: str  # the template's resource type
    field: str  # the node pool field that names the template
    instance: str  # the template's instance type field
    pool_field: str  # the node pool's own instance types field, which the template's value stands in for


@dataclass(frozen=True)
class NodePoolShape:
    """How to read one cloud node pool resource type."""

    service: str
    taint_field: str  # where the taints live, for messages
    spelling: Callable[[Taint], str]  # a taint as this field spells it, for messages
    instance: Callable[[Mapping], str]
    gpu: Callable[[Mapping], bool]
    taints: Callable[[Mapping], list[Taint]]
    labels: Callable[[Mapping], dict[str, str]]
    spot: Callable[[Mapping], bool]
    # True: the cloud installs the NVIDIA driver on these nodes; False: it does not; None: not visible here.
    cloud_driver: Callable[[Mapping], bool | None]
    # Taints the cloud adds to such nodes whatever the resource says.
    implicit_taints: Callable[[Mapping], list[Taint]] = lambda props: []
    # GPU sharing the cloud itself configures on the pool ("time-slicing", "mps"), if any.
    sharing: Callable[[Mapping], str | None] = lambda props: None
    template: TemplateLink | None = None
    # Labels the cloud and the kubelet put on every node of the pool, with the values they can take.
    node_labels: Callable[[Mapping], dict[str, set[str]]] = lambda props: {}


INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")


def instance_type_labels(*types: object) -> dict[str, set[str]]:
    """The kubelet's instance-type labels, set from the cloud's machine type."""
    values = {str(t) for t in types if t}
    return {key: values for key in INSTANCE_TYPE_LABELS}


def _api_effect(taint: Taint) -> str:
    return API_EFFECTS.get(taint.effect, taint.effect)


# EKS ---------------------------------------------------------------------------------------------------------
# p*/g* families (p5, p4de, g6e, g5g) and gr6 (L4 with more memory per GPU).
_AWS_GPU_INSTANCE = re.compile(r"^(p\d+[a-z]*|g\d+[a-z]*|gr\d+[a-z]*)(-[a-z0-9]+)?\.")


def _eks_ami(props: Mapping) -> str:
    return str(get(props, "amiType", ""))


def _eks_gpu(props: Mapping) -> bool:
    ami = _eks_ami(props)
    return ("NVIDIA" in ami or ami.endswith("_GPU")
            or any(_AWS_GPU_INSTANCE.match(str(t)) for t in items(get(props, "instanceTypes"))))


def _eks_driver(props: Mapping) -> bool | None:
    ami = _eks_ami(props)
    if not ami or ami == "CUSTOM":
        return None  # EKS picks an AMI by instance type, or a launch template brings its own: not visible here
    return "NVIDIA" in ami or ami.endswith("_GPU")


EKS = NodePoolShape(
    service="EKS", taint_field="taints",
    spelling=lambda t: f"{{key: {t.key}, value: {t.value}, effect: {_api_effect(t)}}}",
    instance=lambda p: ",".join(str(t) for t in items(get(p, "instanceTypes"))) or _eks_ami(p),
    gpu=_eks_gpu,
    taints=lambda p: [taint_from_map(t) for t in items(get(p, "taints"))],
    labels=lambda p: dict(mapping(get(p, "labels"))),
    spot=lambda p: get(p, "capacityType") == "SPOT",
    cloud_driver=_eks_driver,
    # With a launch template (custom AMI, capacity blocks) the instance type lives on the template.
    template=TemplateLink("aws:ec2/launchTemplate:LaunchTemplate", "launchTemplate", "instanceType", "instanceTypes"),
    node_labels=lambda p: {**instance_type_labels(*items(get(p, "instanceTypes"))),
                           "eks.amazonaws.com/nodegroup": {str(get(p, "nodeGroupName", ""))},
                           "eks.amazonaws.com/capacityType": {str(get(p, "capacityType", "ON_DEMAND"))}},
)

# AKS ---------------------------------------------------------------------------------------------------------
_AKS_SPOT_TAINT = Taint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")


def _aks_driver(props: Mapping) -> bool:
    # gpuProfile.driver None (or the older SkipGPUDriverInstall tag) leaves the driver to someone else.
    if get(props, "gpuProfile.driver") == "None":
        return False
    return str(get(props, "tags.SkipGPUDriverInstall", "")).lower() != "true"


def _aks_taints(props: Mapping) -> list[Taint]:
    parsed = (taint_from_string(str(t)) for t in items(get(props, "nodeTaints")))
    return [t for t in parsed if t is not None]


def _azure_gpu_size(size: object) -> bool:
    """Azure's GPU VM sizes are the N family (NC, ND, NV, ...)."""
    return str(size).lower().startswith("standard_n")


AKS = NodePoolShape(
    service="AKS", taint_field="nodeTaints", spelling=lambda t: f'"{t}"',
    instance=lambda p: str(get(p, "vmSize", "")),
    gpu=lambda p: _azure_gpu_size(get(p, "vmSize", "")),
    taints=_aks_taints,
    labels=lambda p: dict(mapping(get(p, "nodeLabels"))),
    spot=lambda p: get(p, "scaleSetPriority") == "Spot",
    cloud_driver=_aks_driver,
    # AKS taints every spot node itself.
    implicit_taints=lambda p: [_AKS_SPOT_TAINT] if get(p, "scaleSetPriority") == "Spot" else [],
    node_labels=lambda p: {**instance_type_labels(get(p, "vmSize")),
                           "kubernetes.azure.com/agentpool": {str(get(p, "agentPoolName", ""))},
                           "agentpool": {str(get(p, "agentPoolName", ""))}},
)

# GKE ---------------------------------------------------------------------------------------------------------
_GCP_GPU_MACHINE = re.compile(r"^(a2|a3|a4|g2|g4)-")
_GKE_DRIVER_VERSIONS = ("DEFAULT", "LATEST")
_GKE_SHARING = {"TIME_SHARING": "time-slicing", "MPS": "mps"}


def _gke_accelerators(props: Mapping) -> list[Mapping]:
    return [mapping(a) for a in items(get(props, "nodeConfig.guestAccelerators"))]


GKE = NodePoolShape(
    service="GKE", taint_field="nodeConfig.taints",
    spelling=lambda t: f"{{key: {t.key}, value: {t.value}, effect: {_api_effect(t)}}}",
    instance=lambda p: str(get(p, "nodeConfig.machineType", "")),
    gpu=lambda p: (any(float(get(a, "count", 0)) > 0 for a in _gke_accelerators(p))
                   or bool(_GCP_GPU_MACHINE.match(str(get(p, "nodeConfig.machineType", ""))))),
    taints=lambda p: [taint_from_map(t) for t in items(get(p, "nodeConfig.taints"))],
    labels=lambda p: dict(mapping(get(p, "nodeConfig.labels"))),
    spot=lambda p: bool(get(p, "nodeConfig.spot")) or bool(get(p, "nodeConfig.preemptible")),
    # Unset gpuDriverVersion means GKE installs no driver at all.
    cloud_driver=lambda p: any(get(a, "gpuDriverInstallationConfig.gpuDriverVersion") in _GKE_DRIVER_VERSIONS
                               for a in _gke_accelerators(p)),
    sharing=lambda p: next((_GKE_SHARING[s] for a in _gke_accelerators(p)
                            if (s := get(a, "gpuSharingConfig.gpuSharingStrategy")) in _GKE_SHARING), None),
    node_labels=lambda p: {**instance_type_labels(get(p, "nodeConfig.machineType")),
                           "cloud.google.com/gke-nodepool": {str(get(p, "name", ""))},
                           "cloud.google.com/gke-accelerator": {str(get(a, "type", "")) for a in _gke_accelerators(p)}},
)

# OKE ---------------------------------------------------------------------------------------------------------


def _oke_taints(props: Mapping) -> list[Taint]:
    user_data = get(props, "nodeMetadata.user_data")
    return (kubelet_taints(str(user_data)) or []) if user_data else []


OKE = NodePoolShape(
    service="OKE", taint_field="nodeMetadata.user_data (kubelet --register-with-taints)",
    spelling=lambda t: f"--register-with-taints={t}",
    instance=lambda p: str(get(p, "nodeShape", "")),
    gpu=lambda p: ".GPU" in str(get(p, "nodeShape", "")),
    taints=_oke_taints,
    labels=lambda p: {str(get(label, "key")): str(get(label, "value", ""))
                      for label in items(get(p, "initialNodeLabels"))},
    spot=lambda p: any(get(pc, "preemptibleNodeConfig") is not None
                       for pc in items(get(p, "nodeConfigDetails.placementConfigs"))),
    # OKE GPU images carry the driver, but an image OCID does not say which image it is.
    cloud_driver=lambda p: None,
    node_labels=lambda p: instance_type_labels(get(p, "nodeShape")),
)

# OKE RDMA cluster networks: self-managed nodes launched from an instance configuration, which joins them with the
# same kubelet flags in its user data (components/clouds/oci/rdma.py).
_OCI_LAUNCH = "instanceDetails.launchDetails"


def _oci_launch_taints(props: Mapping) -> list[Taint]:
    user_data = get(props, f"{_OCI_LAUNCH}.metadata.user_data")
    return (kubelet_taints(str(user_data)) or []) if user_data else []


OKE_SELF_MANAGED = NodePoolShape(
    service="OKE", taint_field=f"{_OCI_LAUNCH}.metadata.user_data (kubelet --register-with-taints)",
    spelling=lambda t: f"--register-with-taints={t}",
    instance=lambda p: str(get(p, f"{_OCI_LAUNCH}.shape", "")),
    gpu=lambda p: ".GPU" in str(get(p, f"{_OCI_LAUNCH}.shape", "")),
    taints=_oci_launch_taints,
    # Labels come from the kubelet's --node-labels; the component declares them.
    labels=lambda p: {},
    spot=lambda p: get(p, f"{_OCI_LAUNCH}.preemptibleInstanceConfig") is not None,
    cloud_driver=lambda p: None,
    node_labels=lambda p: instance_type_labels(get(p, f"{_OCI_LAUNCH}.shape")),
)

# Karpenter (EKS, and AKS node auto-provisioning) -------------------------------------------------------------
# A NodePool is the capacity of every node it launches: a GPU pool when its requirements select GPU instances.
_KARPENTER_GPU_FAMILY = re.compile(r"^(p\d+[a-z]*|g\d+[a-z]*|gr\d+[a-z]*)(-[a-z0-9]+)?$")
_KARPENTER_GPU_KEYS = ("karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-name",
                       "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-gpu-memory",
                       # karpenter-provider-azure's well-known labels (azure-aks-docs node-auto-provisioning-node-pools)
                       "karpenter.azure.com/sku-gpu-count", "karpenter.azure.com/sku-gpu-name",
                       "karpenter.azure.com/sku-gpu-manufacturer")
_AZURE_SKU_KEYS = ("karpenter.azure.com/sku-name",)


def _karpenter_requirements(props: Mapping, key: str) -> list[Mapping]:
    return [mapping(r) for r in items(get(props, "spec.template.spec.requirements")) if get(r, "key") == key]


def _karpenter_values(props: Mapping, *keys: str) -> list[str]:
    """Values a NodePool's `In` requirements on `keys` allow."""
    return [str(v) for key in keys for r in _karpenter_requirements(props, key) if get(r, "operator") == "In"
            for v in items(get(r, "values"))]


def _karpenter_gpu(props: Mapping) -> bool:
    """Requirements that select GPU instances: GPU instance types, families or categories, or any GPU count."""
    if any(_AWS_GPU_INSTANCE.match(v) for v in _karpenter_values(props, *INSTANCE_TYPE_LABELS)):
        return True
    if any(_azure_gpu_size(v) for v in _karpenter_values(props, *INSTANCE_TYPE_LABELS, *_AZURE_SKU_KEYS)):
        return True
    # Azure's N family is its GPU VM sizes.
    if any(v.upper() == "N" for v in _karpenter_values(props, "karpenter.azure.com/sku-family")):
        return True
    if any(_KARPENTER_GPU_FAMILY.match(v) for v in _karpenter_values(props, "karpenter.k8s.aws/instance-family")):
        return True
    if any(v in ("p", "g") for v in _karpenter_values(props, "karpenter.k8s.aws/instance-category")):
        return True
    for key in _KARPENTER_GPU_KEYS:
        for r in _karpenter_requirements(props, key):
            operator, values = get(r, "operator"), [str(v) for v in items(get(r, "values"))]
            if (operator == "Exists" or (operator == "In" and any(v != "0" for v in values))
                    or (operator == "Gt" and values and values[0].lstrip("-").isdigit() and int(values[0]) >= 0)):
                return True
    return False


KARPENTER = NodePoolShape(
    service="Karpenter", taint_field="spec.template.spec.taints",
    spelling=lambda t: f"{{key: {t.key}, value: {t.value}, effect: {t.effect}}}",
    instance=lambda p: (",".join(_karpenter_values(p, *INSTANCE_TYPE_LABELS, *_AZURE_SKU_KEYS))
                        or f"NodePool {get(p, 'metadata.name', '?')}"),
    gpu=_karpenter_gpu,
    taints=lambda p: [taint_from_map(t) for t in items(get(p, "spec.template.spec.taints"))],
    labels=lambda p: dict(mapping(get(p, "spec.template.metadata.labels"))),
    spot=lambda p: "spot" in _karpenter_values(p, "karpenter.sh/capacity-type"),
    # The AMI is the EC2NodeClass's (an alias or a selector), not visible on the NodePool.
    cloud_driver=lambda p: None,
    node_labels=lambda p: {**instance_type_labels(*_karpenter_values(p, *INSTANCE_TYPE_LABELS)),
                           "karpenter.sh/nodepool": {str(get(p, "metadata.name", ""))},
                           "karpenter.sh/capacity-type": set(_karpenter_values(p, "karpenter.sh/capacity-type"))},
)

SHAPES: dict[str, NodePoolShape] = {
    "aws:eks/nodeGroup:NodeGroup": EKS,
    "azure-native:containerservice:AgentPool": AKS,
    "gcp:container/nodePool:NodePool": GKE,
    "oci:ContainerEngine/nodePool:NodePool": OKE,
    "oci:Core/instanceConfiguration:InstanceConfiguration": OKE_SELF_MANAGED,
    "kubernetes:karpenter.sh/v1:NodePool": KARPENTER,
}
