"""GKE GPUDirect-TCPX/TCPXO inside the cluster: one `Network` + `GKENetworkParamSet` per GPU NIC (networking.gke.io/v1),
the NCCL plugin installer DaemonSet per fabric and the NRI device injector, as GoogleCloudPlatform/
container-engine-accelerators ships them (gpudirect-tcpx/, gpudirect-tcpxo/, nri_device_injector/), selected to the
fabric's pools by their node label instead of every H100 node.

Also the Network objects pods name in `networking.gke.io/interfaces` (gpu_platform/nccl_manifest.py); the VPCs and
subnets they stand for are the cluster layer's (components/clouds/gcp/gpudirect.py), named in components/clouds/gcp/facts.py."""
from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_kubernetes.apps.v1 as apps
import pulumi_kubernetes.meta.v1 as meta
from pulumi_kubernetes.apiextensions import CustomResource

from components import namespaces
from components.config.labels import FABRIC_LABEL
from components.clouds import profile
from components.clouds.facts import Fabric
from components.clouds.gcp.facts import short, subnet_name, vpc_name
from components.config.fabric import nic_counts
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


def network_name(fabric: str, nic: int) -> str:
    """The Kubernetes `Network` of GPU NIC `nic`; pods attach it as eth<nic + 1>."""
    return f"{short(fabric)}-nic{nic}"


def pod_interfaces(fabric: str, nics: int) -> list[dict[str, str]]:
    """`networking.gke.io/interfaces`: the pod network on eth0, then every GPU NIC."""
    return [{"interfaceName": "eth0", "network": "default"},
            *({"interfaceName": f"eth{i + 1}", "network": network_name(fabric, i)} for i in range(nics))]


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
    direct = fabric.gpudirect
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

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        nics = nic_counts(config)
        fabrics = [profile(config.cloud).fabrics[kind] for kind in nics]
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
            apps.DaemonSet(f"{name}-{short(fabric.name)}-installer", metadata=meta.ObjectMetaArgs(
                name=fabric.gpudirect.installer, namespace=NAMESPACE, labels={"k8s-app": fabric.gpudirect.installer}),
                spec=installer_spec(fabric), opts=child)
        apps.DaemonSet(f"{name}-device-injector", metadata=meta.ObjectMetaArgs(
            name="device-injector", namespace=NAMESPACE, labels={"k8s-app": "device-injector"}),
            spec=injector_spec(sorted(f.name for f in fabrics)), opts=child)
        self.register_outputs({"networks": self.networks})


def _volume(name: str, host_path: str) -> dict[str, Any]:
    return _host_path(name, host_path) if host_path else {"name": name, "emptyDir": {}}


def workload_pod(fabric: Fabric, gpus: int, nics: int) -> dict[str, Any]:
    """What a pod using all of a node's GPU NICs adds (GKE guide "Deploy a workload", upstream nccl-test-latest.yaml):
    the multi-network annotations, the NRI device list for the RxDM sidecar, the sidecar itself and the volumes its
    containers share. The sidecar is a native sidecar (an init container restarting Always, Kubernetes 1.29+) so a
    Job's pod completes when its workload does; upstream's bare pods run it as a plain container."""
    direct = fabric.gpudirect
    devices = [*(f"/dev/nvidia{i}" for i in range(gpus)), "/dev/nvidiactl", "/dev/nvidia-uvm", *direct.extra_devices]
    annotations = {
        f"devices.gke.io/container.{direct.rxdm_container}": "".join(f"- path: {d}\n" for d in devices),
        "networking.gke.io/default-interface": "eth0",
        "networking.gke.io/interfaces": json.dumps(pod_interfaces(fabric.name, nics)),
    }
    sidecar = {
        "name": direct.rxdm_container, "image": direct.rxdm_image, "restartPolicy": "Always",
        "command": list(direct.rxdm_command),
        "securityContext": {"capabilities": {"add": list(direct.rxdm_capabilities)}},
        "env": [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}],
        "volumeMounts": [{"name": v, "mountPath": mount} for v, _, mount in direct.rxdm_volumes],
    }
    volumes = {v: _volume(v, host) for v, host, _ in (*direct.rxdm_volumes, *direct.workload_volumes)}
    return {"annotations": annotations, "sidecar": sidecar, "volumes": list(volumes.values()),
            "mounts": [workload_mount(v, host, mount) for v, host, mount in direct.workload_volumes]}


def writable_host_path(host_path: str) -> bool:
    """Device directories (NCCL maps their files read-write); every other host directory a workload mounts, such as
    the node's NCCL plugin that every pod on it shares, is mounted read-only."""
    return host_path.startswith("/dev/")


def workload_mount(volume: str, host_path: str, mount_path: str) -> dict[str, Any]:
    """A workload container's mount; the team's admission policy (tenancy/fabric_baseline.py) holds it to this."""
    mount: dict[str, Any] = {"name": volume, "mountPath": mount_path}
    if host_path and not writable_host_path(host_path):
        mount["readOnly"] = True
    return mount
