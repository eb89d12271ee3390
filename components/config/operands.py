"""Which GPU Operator operands run, and the per-node labels that switch them per pool.

Pure and import-light: node pools (labels.py) and the operator's Helm values read the same decisions.
"""
from __future__ import annotations

from dataclasses import dataclass

from components.clouds import profile
from components.clouds.facts import CloudProfile, GpuImage
from components.config.model import GpuPool, PlatformConfig

DEPLOY_LABEL = "nvidia.com/gpu.deploy.{}"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_DISABLED = "all-disabled"
SHARED_MODES = ("mps", "time-slicing")


@dataclass(frozen=True)
class Operands:
    """Cluster-wide operator switches; a pool opts out of an enabled one with `nvidia.com/gpu.deploy.<x>=false`."""

    driver: bool
    toolkit: bool
    device_plugin: bool
    mig_manager: bool


def gpu_image(config: PlatformConfig, prof: CloudProfile) -> GpuImage | None:
    """The GPU node image the stack chose (or the cloud's default), when the cloud offers a choice."""
    if not prof.gpu_images:
        return None
    name = config.cluster.extras.get(prof.gpu_image_key, next(iter(prof.gpu_images)))
    return prof.gpu_images.get(name)


def operator_mig(prof: CloudProfile, pool: GpuPool) -> bool:
    """The operator's mig-manager partitions this pool (not the cloud's pool API)."""
    return prof.mig_via == "operator" and pool.sharing.mode == "mig"


def operator_shared(prof: CloudProfile, pool: GpuPool) -> bool:
    """The operator's device plugin time-slices or runs MPS on this pool (not the cloud's pool API)."""
    return prof.sharing_via == "operator" and pool.sharing.mode in SHARED_MODES


def sharing_entry(pool: GpuPool) -> str:
    """The device plugin config entry a shared pool selects: one per pool, named after it."""
    return pool.name


def operands(config: PlatformConfig) -> Operands:
    """The operands this stack's pools need, with exactly one driver and one toolkit owner per node."""
    prof = profile(config.cloud)
    any_operator_driver = any(p.driver == "operator" for p in config.gpu_pools)
    return Operands(
        driver=any_operator_driver,
        # A managed image without the container toolkit (GKE COS) still needs the operator's.
        toolkit=any_operator_driver or not prof.image_ships_toolkit,
        # Where the cloud's device plugin serves managed pools, the operator's is needed only for operator-owned ones.
        device_plugin=any_operator_driver or not prof.cloud_device_plugin,
        mig_manager=any(operator_mig(prof, p) for p in config.gpu_pools),
    )


def image_toolkit(prof: CloudProfile, pool: GpuPool) -> bool:
    """The pool's nodes run their image's container toolkit, not the operator's (mixed owners label it off them)."""
    return pool.driver == "managed" and prof.image_ships_toolkit


def volume_mount_devices(config: PlatformConfig) -> bool:
    """The operator's toolkit and device plugin hand every GPU node its devices as volume mounts, so the toolkit can
    ignore NVIDIA_VISIBLE_DEVICES in unprivileged containers. Both ends must agree on every node the plugin serves:
    an image's own toolkit would find no devices in mounts, a cloud's plugin and CDI pass devices their own way."""
    prof = profile(config.cloud)
    ops = operands(config)
    return (ops.toolkit and ops.device_plugin and not prof.cloud_device_plugin and not prof.needs_cdi
            and not any(image_toolkit(prof, p) for p in config.gpu_pools))


def node_labels(config: PlatformConfig, pool: GpuPool) -> dict[str, str]:
    """`nvidia.com/*` (and cloud) labels one pool's nodes need so the operator does exactly its share on them."""
    prof = profile(config.cloud)
    ops = operands(config)
    labels: dict[str, str] = {}
    if pool.driver == "managed":
        # Mixed owners: the operator's driver (and toolkit, where the image has one) stays off cloud-owned nodes.
        if ops.driver:
            labels[DEPLOY_LABEL.format("driver")] = "false"
        if ops.toolkit and image_toolkit(prof, pool):
            labels[DEPLOY_LABEL.format("container-toolkit")] = "false"
    else:
        labels.update(prof.operator_driver_labels)
    image = gpu_image(config, prof)
    if image is not None:
        labels.update(image.labels)
    if prof.mig_via == "operator" and pool.instance.gpu.supports_mig:
        # Explicit all-disabled keeps a MIG-capable pool whole, whatever a node was left with.
        labels[MIG_CONFIG_LABEL] = pool.sharing.mig_config_name if operator_mig(prof, pool) else MIG_DISABLED
    if operator_shared(prof, pool):
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = sharing_entry(pool)
    return dict(sorted(labels.items()))
