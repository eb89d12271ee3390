"""GCP facts: the GKE row of the cloud table, its regions and `cluster.gcp` keys, and the GPUDirect-TCPX/TCPXO
fabric records with what a pod using their NICs adds (workload_pod). Free of Pulumi and the GCP SDK (config
validation reads it)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from components.clouds.facts import (API_EFFECTS, CloudProfile, ExtraKey, Fabric, NcclTestImage, NetworkTopology,
                                     PodSidecar, PoolNaming, ipv4_network, minors, workload_mount)


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

    def sidecar(self) -> PodSidecar:
        """The RxDM sidecar as the cloud-neutral admission policy sees it."""
        return PodSidecar(image=self.rxdm_image, command=self.rxdm_command, capabilities=self.rxdm_capabilities,
                          host_paths=tuple(host for _, host, _ in self.rxdm_volumes if host),
                          workload_host_paths=tuple(host for _, host, _ in self.workload_volumes if host))


# Compact placement (GKE compact-placement): nodes of one pool close together in one zone, up to this many.
COMPACT_PLACEMENT_MAX_NODES = 150


# The names both layers agree on: the VPC and subnet of each GPU NIC, created by the cluster (gpudirect.py) and named
# by the in-cluster GKENetworkParamSets (fabric.py).
def short(fabric: str) -> str:
    """`tcpx` / `tcpxo`: keeps derived cloud and Kubernetes names short."""
    return fabric.removeprefix("gpudirect-")


def vpc_name(cluster: str, fabric: str, nic: int) -> str:
    return f"{cluster}-{short(fabric)}-net-{nic}"


def subnet_name(cluster: str, fabric: str, nic: int) -> str:
    return f"{cluster}-{short(fabric)}-sub-{nic}"


def network_name(fabric: str, nic: int) -> str:
    """The Kubernetes `Network` of GPU NIC `nic` (fabric.py creates it); pods attach it as eth<nic + 1>."""
    return f"{short(fabric)}-nic{nic}"


def pod_interfaces(fabric: str, nics: int) -> list[dict[str, str]]:
    """`networking.gke.io/interfaces`: the pod network on eth0, then every GPU NIC."""
    return [{"interfaceName": "eth0", "network": "default"},
            *({"interfaceName": f"eth{i + 1}", "network": network_name(fabric, i)} for i in range(nics))]


def _volume(name: str, host_path: str) -> dict[str, Any]:
    return {"name": name, "hostPath": {"path": host_path}} if host_path else {"name": name, "emptyDir": {}}


def workload_pod(fabric: Fabric, gpus: int, nics: int) -> dict[str, Any]:
    """What a pod using all of a node's GPU NICs adds (GKE guide "Deploy a workload", upstream nccl-test-latest.yaml):
    the multi-network annotations, the NRI device list for the RxDM sidecar, the sidecar itself and the volumes its
    containers share. The sidecar is a native sidecar (an init container restarting Always, Kubernetes 1.29+) so a
    Job's pod completes when its workload does; upstream's bare pods run it as a plain container."""
    direct = GPUDIRECT[fabric.name]
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
    net = ipv4_network(value)
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


def _google_group(value: str) -> str | None:
    return None if _EMAIL.fullmatch(value) else (
        f"must be a Google group email like ml-research@example.com (GKE puts group emails in tokens); got {value!r}")


# GCP's public regions on REGIONS_AS_OF.
_REGIONS = (
    "us-central1", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west2", "us-west3", "us-west4",
    "northamerica-northeast1", "northamerica-northeast2", "northamerica-south1", "southamerica-east1",
    "southamerica-west1", "europe-central2", "europe-north1", "europe-north2", "europe-southwest1", "europe-west1",
    "europe-west2", "europe-west3", "europe-west4", "europe-west6", "europe-west8", "europe-west9", "europe-west10",
    "europe-west12", "asia-east1", "asia-east2", "asia-northeast1", "asia-northeast2", "asia-northeast3",
    "asia-south1", "asia-south2", "asia-southeast1", "asia-southeast2", "australia-southeast1",
    "australia-southeast2", "me-central1", "me-central2", "me-west1", "africa-south1",
)


# GKE GPUDirect (container-engine-accelerators gpudirect-tcpx/nccl-test-latest.yaml and nccl-config.yaml for TCPX,
# gpudirect-tcpxo/nccl-test-latest.yaml for TCPXO; versions as GoogleCloudPlatform/cluster-toolkit
# modules/compute/gke-node-pool/gpu_direct.tf pairs them: TCPX plugin v3.1.9 with RxDM v2.0.12, TCPXO plugin
# v1.0.8-1 with RxDM v1.0.14). The NICs are eth1..ethN in pods (networking.gke.io/interfaces), eth0 the pod network.
_GKE_LIB = "/usr/local/nvidia/lib64"  # where pods mount the node's /home/kubernetes/bin/nvidia/lib64 (plugin + NCCL)
_GPUDIRECT_ALL_REDUCE = "/third_party/nccl-tests-mpi/build/all_reduce_perf"
_NCCL_LIBRARIES = ("libraries", "/home/kubernetes/bin/nvidia/lib64", _GKE_LIB)  # the node's NCCL plugin, in pods
_RXDM_HOST_SYSFS = (("sys", "/sys", "/hostsysfs"), ("proc-sys", "/proc/sys", "/hostprocsysfs"))  # NIC set-up


def _installer():
    from components.clouds.gcp.fabric import install  # Pulumi: only a stack installing the fabric loads it
    return install


def _gpudirect(name: str, env: tuple[tuple[str, str], ...]) -> Fabric:
    """A GKE GPUDirect fabric: no device plugin (multi-networking and the RxDM sidecar reach pods), the cloud's own
    driver, and the NCCL plugin installer image as the NCCL test image. Both fabrics name one installer, which
    installs their shared NRI injector once."""
    return Fabric(name=name, resource="", chart="", repository="", version="", namespace="kube-system", env=env,
                  needs_managed_driver=True, installer=_installer, workload_pod=workload_pod,
                  # The RxDM sidecar mounts /sys and /proc/sys and adds NET_ADMIN; the workload mounts the NCCL plugin.
                  pod_security="fabric-sidecar", pod_sidecar=GPUDIRECT[name].sidecar(),
                  placement_max_nodes=COMPACT_PLACEMENT_MAX_NODES,
                  nccl_test=NcclTestImage(
                      image=GPUDIRECT[name].installer_image, binary=_GPUDIRECT_ALL_REDUCE,
                      source="Google's NCCL plugin image, GoogleCloudPlatform/container-engine-accelerators "
                             f"{name}/nccl-test-latest.yaml"))


def _direct(kind: str, plugin: str, rxdm: str, **facts) -> GpuDirect:
    """Upstream names a fabric's images, installer and sidecar after it: the gce-ai-infra/gpudirect-<kind>
    repository, the nccl-<kind>-installer DaemonSet, the <kind>-daemon container."""
    images = f"us-docker.pkg.dev/gce-ai-infra/gpudirect-{kind}"
    return GpuDirect(installer=f"nccl-{kind}-installer",
                     installer_image=f"{images}/nccl-plugin-gpudirecttcpx-dev:{plugin}",
                     rxdm_image=f"{images}/tcpgpudmarxd-dev:{rxdm}", rxdm_container=f"{kind}-daemon", **facts)


_TCPX_DIRECT = _direct(
    "tcpx", plugin="v3.1.9", rxdm="v2.0.12",
    accelerator="nvidia-h100-80gb",
    rxdm_command=("/tcpgpudmarxd/build/app/tcpgpudmarxd", "--gpu_nic_preset", "a3vm", "--gpu_shmem_type", "fd",
                  "--uds_path", "/run/tcpx", "--setup_param",
                  # Upstream's YAML passes the quotes and backslashes literally; kept byte for byte.
                  '\\"--verbose 128 2 0 \\"'),
    rxdm_capabilities=("NET_ADMIN",),
    rxdm_volumes=(_NCCL_LIBRARIES, ("tcpx-socket", "", "/run/tcpx"), *_RXDM_HOST_SYSFS),
    # NCCL reaches the RxDM through its Unix socket in the shared emptyDir, mounted at /tmp as upstream does.
    workload_volumes=(_NCCL_LIBRARIES, ("tcpx-socket", "", "/tmp")),
    extra_devices=(),
    mtu=8244, subnet_offset=0)

_TCPXO_DIRECT = _direct(
    "tcpxo", plugin="v1.0.8-1", rxdm="v1.0.14",
    accelerator="nvidia-h100-mega-80gb",
    rxdm_command=("/bin/sh", "-c", "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n"
                  "/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8 --uid= --alsologtostderr"),
    rxdm_capabilities=("NET_ADMIN", "NET_BIND_SERVICE"),
    rxdm_volumes=(("nvidia-install-dir-host", "/home/kubernetes/bin/nvidia", "/usr/local/nvidia"), *_RXDM_HOST_SYSFS),
    workload_volumes=(_NCCL_LIBRARIES, ("aperture-devices", "/dev/aperture_devices", "/dev/aperture_devices")),
    extra_devices=("/dev/dmabuf_import_helper",),
    mtu=8244, subnet_offset=64, llcm=True)

# Each GPUDirect fabric's own facts, by fabric name: what the GKE package builds (gpudirect.py, fabric.py) and
# the pods using its NICs run (workload_pod).
GPUDIRECT = {"gpudirect-tcpx": _TCPX_DIRECT, "gpudirect-tcpxo": _TCPXO_DIRECT}

_TCPX = _gpudirect(
    "gpudirect-tcpx",
    env=(("LD_LIBRARY_PATH", _GKE_LIB), ("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_CROSS_NIC", "0"),
         ("NCCL_ALGO", "Ring"), ("NCCL_PROTO", "Simple"), ("NCCL_NSOCKS_PERTHREAD", "4"),
         ("NCCL_SOCKET_NTHREADS", "1"), ("NCCL_DYNAMIC_CHUNK_SIZE", "524288"), ("NCCL_P2P_NET_CHUNKSIZE", "524288"),
         ("NCCL_P2P_PCI_CHUNKSIZE", "524288"), ("NCCL_P2P_NVL_CHUNKSIZE", "1048576"), ("NCCL_BUFFSIZE", "4194304"),
         ("NCCL_NET_GDR_LEVEL", "PIX"), ("NCCL_P2P_PXN_LEVEL", "0"),
         ("NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "eth1,eth2,eth3,eth4"), ("NCCL_GPUDIRECTTCPX_CTRL_DEV", "eth0"),
         ("NCCL_GPUDIRECTTCPX_TX_BINDINGS", "eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177;eth4:60-73,164-177"),
         ("NCCL_GPUDIRECTTCPX_RX_BINDINGS", "eth1:22-35,126-139;eth2:22-35,126-139;eth3:74-87,178-191;eth4:74-87,178-191"),
         ("NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS", "500000"),
         ("NCCL_DEBUG", "INFO")))

_TCPXO = _gpudirect(
    "gpudirect-tcpxo",
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
         ("NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS", "600000"), ("NCCL_NVLS_ENABLE", "0"), ("NCCL_DEBUG", "INFO")))


# Fabric-less GKE pools: Google's NCCL/gIB diagnostic image, which Google publishes "with everything included" for NCCL
# tests (AI Hypercomputer "Run NCCL on Compute Engine instances", docs.cloud.google.com/ai-hypercomputer/docs/nccl/
# test-vms): nccl-tests with MPI at /third_party/nccl-tests/build (".../nccl/test-gke-custom" runs
# /third_party/nccl-tests/build/all_gather_perf under mpirun over sshd), unmodified NCCL and the gIB plugin. v1.1.1 is
# the tag GoogleCloudPlatform/container-engine-accelerators gpudirect-rdma/nccl-test.yaml and nccl-test-a4.yaml pin.
# Its NCCL normally comes from the node (the RDMA installer's /home/kubernetes/bin/gib); without that installer the
# image unpacks its own into /var/lib/gib, as AI-Hypercomputer/gpu-recipes src/helm-charts/a3ultra/nccl-tests does
# (`container_entry.sh install --install-nccl`, then LD_LIBRARY_PATH .../gib/lib64:/usr/local/nvidia/lib64, the
# driver GKE mounts). NCCL_NET=Socket keeps the gIB plugin unused.
_GKE_NCCL_TESTS = NcclTestImage(
    image="us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:v1.1.1",
    binary="/third_party/nccl-tests/build/all_reduce_perf",
    source="Google's NCCL/gIB diagnostic image, docs.cloud.google.com/ai-hypercomputer/docs/nccl/test-gke-custom and "
           "GoogleCloudPlatform/container-engine-accelerators gpudirect-rdma/nccl-test.yaml",
    setup="/scripts/container_entry.sh install --install-nccl",
    env=(("LD_LIBRARY_PATH", f"/var/lib/gib/lib64:{_GKE_LIB}"),))


PROFILE = CloudProfile(
    name="gcp",
    service="GKE",
    # masterAuthorizedNetworksConfig cidrBlocks take IPv6 CIDRs as well as IPv4 ones.
    authorized_networks_ipv6=True,
    cluster_resource_suffix="gke",
    taint_effects=API_EFFECTS,
    driver_owners=("managed", "operator"),
    default_driver="managed",
    pool_naming=PoolNaming(max_len=40, pattern=r"[a-z]([a-z0-9-]{0,38}[a-z0-9])?"),
    default_system_instance="e2-standard-8",
    # GKE release schedule, endoflife.date/google-kubernetes-engine: the REGULAR channel our clusters use creates only
    # minors in standard support; 1.34 ended 2026-10-01, 1.35 runs to 2027-04-11, 1.36 after it.
    kubernetes_versions=minors("1.35", "1.36"),
    # min_master_version takes a minor ("1.35") or a patch version ("1.35.2").
    kubernetes_version_form="minor-or-patch",
    regions=_REGIONS,
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
    # placement, the NCCL plugin installer and the NRI device injector (gpudirect.py, fabric.py); A3 Ultra and
    # A4 (RDMA over RoCE) are not attached.
    fabrics={"gpudirect-tcpx": _TCPX, "gpudirect-tcpxo": _TCPXO},
    nccl_test=_GKE_NCCL_TESTS,
    # GKE labels the VMs of A3 Ultra and A4 (the RDMA types) with their reservation block, sub-block and host
    # (Google Cloud AI Hypercomputer, schedule-gke-workloads-tas); A3 High/Mega nodes are not documented to get them.
    network_topology=NetworkTopology(
        levels=("cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock",
                "cloud.google.com/gce-topology-host"),
        instance_types=r"a3-ultragpu-8g|a4-highgpu-8g"),
)
