"""GKE GPUDirect-TCPX/TCPXO inside the cluster, the two fabric records' installer: one `Network` + `GKENetworkParamSet`
per GPU NIC (networking.gke.io/v1), the NCCL plugin installer DaemonSet per fabric and the NRI device injector, as
GoogleCloudPlatform/container-engine-accelerators ships them (gpudirect-tcpx/, gpudirect-tcpxo/, nri_device_injector/),
selected to the fabric's pools by their node label instead of every H100 node.

The Network objects are the ones pods name in `networking.gke.io/interfaces` (facts.workload_pod); the VPCs and
subnets they stand for are the cluster layer's (gpudirect.py), named in facts.py."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes.apps.v1 as apps
import pulumi_kubernetes.meta.v1 as meta
from pulumi_kubernetes.apiextensions import CustomResource

from components import namespaces
from components.config.labels import FABRIC_LABEL
from components.clouds.facts import Fabric
from components.clouds.gcp.facts import GPUDIRECT, network_name, short, subnet_name, vpc_name
from components.clouds.gcp.gpudirect import nic_counts
from components.config.model import PlatformConfig

API = "networking.gke.io/v1"
NAMESPACE = namespaces.KUBE_SYSTEM
# Upstream's pause image for the installer's long-running container, pinned by digest there.
PAUSE_IMAGE = "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"
NRI_INJECTOR_IMAGE = ("gcr.io/gke-release/nri-device-injector"
                      "@sha256:6e79483d52abdc28454bf186320b10a56b0f117a10e8d65d5c74dbb821a76970")
# Upstream runs TCPXO's host preparation from an unpinned `ubuntu` (it only needs nsenter); pinned here.
HOST_SETUP_IMAGE = "ubuntu:24.04"
# TCPXO (nccl-tcpxo-installer.yaml "pre-installation"): open TCP on the host, load import-helper and expose the NICs'
# aperture devices (PCI 1ae0:0084) under /dev/aperture_devices for NCCL's low-latency control messages.
APERTURE_SETUP = """/sbin/iptables -I INPUT -p tcp -m tcp -j ACCEPT && modprobe import-helper
sudo mkdir -p /dev/aperture_devices
while IFS= read -r line; do
  BDF=$( echo "$line" | awk '{print $1}' );
  target_aperture_path="/dev/aperture_devices/$BDF"
  host_aperture_device=$(readlink -f "/sys/bus/pci/devices/$BDF");
  sudo mkdir -p $target_aperture_path;
  sudo umount -R $target_aperture_path;
  sudo mount --bind $host_aperture_device $target_aperture_path;
done < <(lspci -nn -D | grep '1ae0:0084')
if [ -d /dev/aperture_devices ]; then
    chmod -R a+r /dev/aperture_devices/
    chmod a+rw /dev/aperture_devices/*/resource*
fi
"""

def param_set(cluster: str, fabric: str, nic: int) -> dict[str, Any]:
    return {"vpc": vpc_name(cluster, fabric, nic), "vpcSubnet": subnet_name(cluster, fabric, nic),
            # The NIC is handed to the pod as a kernel net device (GPUDirect-TCPX/TCPXO), not DPDK or RDMA.
            "deviceMode": "NetDevice"}

def network_spec(fabric: str, nic: int) -> dict[str, Any]:
    return {"type": "Device", "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet",
                                                "name": network_name(fabric, nic)}}

def _host_path(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "hostPath": {"path": path}}

def installer_spec(fabric: Fabric) -> dict[str, Any]:
    """The NCCL plugin installer DaemonSet: copies the plugin (and its NCCL) next to GKE's driver libraries, where
    pods mount them; upstream's manifest with our node selector."""
    direct = GPUDIRECT[fabric.name]
    lib = f"/var/lib/{short(fabric.name)}/lib64"
    init = [{
        "name": direct.installer, "image": direct.installer_image,
        "resources": {"requests": {"cpu": "150m"}}, "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "var-lib", "mountPath": "/var/lib"},
                         {"name": "library-dir-host", "mountPath": "/usr/local"}],
        "command": ["/bin/sh", "-c"],
        "args": [f"set -ex\nchmod 755 /scripts/container_entry.sh\n/scripts/container_entry.sh install --install-nccl\n"
                 f"mkdir -p /usr/local/nvidia/lib64\ncp -r {lib}/. /usr/local/nvidia/lib64\n"
                 "echo \"installation finishes\"\n"],
    }]
    if direct.llcm:
        init.insert(0, {"name": "pre-installation", "image": HOST_SETUP_IMAGE, "securityContext": {"privileged": True},
                        "command": ["nsenter", "-at", "1", "--", "sh", "-c", APERTURE_SETUP]})
    labels = {"k8s-app": direct.installer}
    return {
        "selector": {"matchLabels": labels}, "updateStrategy": {"type": "RollingUpdate"},
        "template": {"metadata": {"labels": {"name": direct.installer, **labels}}, "spec": {
            "priorityClassName": "system-node-critical",
            "nodeSelector": {FABRIC_LABEL: fabric.name},
            # Upstream tolerates everything: the plugin must be on every node of the pool whatever its taints.
            "tolerations": [{"operator": "Exists"}],
            "hostNetwork": True, "hostPID": True,
            "volumes": [_host_path("var-lib", "/var/lib"), _host_path("library-dir-host", "/home/kubernetes/bin")],
            "initContainers": init,
            "containers": [{"name": "pause", "image": PAUSE_IMAGE}],
        }},
    }

def injector_spec(fabrics: list[str]) -> dict[str, Any]:
    """The NRI device injector: gives the RxDM sidecar the GPU devices its pod annotation lists
    (`devices.gke.io/container.<name>`) without a privileged container."""
    labels = {"k8s-app": "device-injector"}
    return {
        "selector": {"matchLabels": labels}, "updateStrategy": {"type": "RollingUpdate"},
        "template": {"metadata": {"labels": {"name": "device-injector", **labels}}, "spec": {
            "priorityClassName": "system-node-critical",
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": FABRIC_LABEL, "operator": "In", "values": fabrics}]}]}}},
            "tolerations": [{"operator": "Exists"}],
            "hostNetwork": True, "hostPID": True,
            "containers": [{"name": "device-injector", "image": NRI_INJECTOR_IMAGE,
                            "resources": {"requests": {"cpu": "150m"}}, "securityContext": {"privileged": True},
                            "volumeMounts": [{"name": "dev", "mountPath": "/dev"},
                                             {"name": "nri", "mountPath": "/var/run/nri"}]}],
            "volumes": [_host_path("nri", "/var/run/nri"), _host_path("dev", "/dev")],
        }},
    }

class GpuDirectFabrics(pulumi.ComponentResource):
    """What pods on GPUDirect pools need from the cluster: their GPU NICs as `Network`s, the NCCL plugin on the
    nodes, and the NRI device injector."""

    TYPE = "gpu-platform:gpu:GpuDirectFabrics"

    def __init__(self, name: str, config: PlatformConfig, fabrics: tuple[Fabric, ...],
                 opts: pulumi.ResourceOptions | None = None):
        nics = nic_counts(config)
        super().__init__(self.TYPE, name, {"fabrics": [f.name for f in fabrics]}, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.networks: list[str] = []
        for fabric in fabrics:
            # On an adopted cluster the platform created no GPU NIC VPCs, so there is nothing to name here.
            if not config.cluster.adopted:
                for nic in range(nics[fabric.name]):
                    object_name = network_name(fabric.name, nic)
                    params = CustomResource(f"{name}-{object_name}-params", api_version=API,
                                            kind="GKENetworkParamSet", metadata={"name": object_name},
                                            spec=param_set(config.cluster.name, fabric.name, nic), opts=child)
                    CustomResource(f"{name}-{object_name}", api_version=API, kind="Network",
                                   metadata={"name": object_name}, spec=network_spec(fabric.name, nic),
                                   opts=pulumi.ResourceOptions(parent=self, depends_on=[params]))
                    self.networks.append(object_name)
            installer = GPUDIRECT[fabric.name].installer
            apps.DaemonSet(f"{name}-{short(fabric.name)}-installer", metadata=meta.ObjectMetaArgs(
                name=installer, namespace=NAMESPACE, labels={"k8s-app": installer}),
                spec=installer_spec(fabric), opts=child)
        apps.DaemonSet(f"{name}-device-injector", metadata=meta.ObjectMetaArgs(
            name="device-injector", namespace=NAMESPACE, labels={"k8s-app": "device-injector"}),
            spec=injector_spec(sorted(f.name for f in fabrics)), opts=child)
        self.register_outputs({"networks": self.networks})

def install(name: str, config: PlatformConfig, fabrics: tuple[Fabric, ...], values: dict[str, dict[str, Any]],
            opts: pulumi.ResourceOptions) -> None:
    """The records' installer, once for both fabrics (they share the injector). No chart values: the DaemonSets select
    the fabrics' pools by label and, as upstream's, tolerate every taint."""
    GpuDirectFabrics(f"{name}-gpudirect", config, fabrics, opts=opts)
