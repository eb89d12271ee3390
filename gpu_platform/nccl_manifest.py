"""A multi-node NCCL all-reduce smoke test for one GPU pool: an indexed Job admitted whole by the team's Kueue queue,
a headless Service naming its pods, and a Secret with a key pair made for this run, so rank 0 can start the other
ranks over SSH with Open MPI (nccl-tests' all_reduce_perf is an MPI program)."""
from __future__ import annotations

import shlex
from typing import Any

from components.config.labels import POOL_LABEL, pool_taints
from components.clouds import profile
from components.clouds.facts import Fabric, NcclTestImage
from components.config.model import GpuPool, PlatformConfig, Team, looser_pod_security, pod_security_admits
from components.scheduling.kinds import scheduler_kind
from components.scheduling.kueue.component import LOCAL_QUEUE
from components.scheduling.topology import pool_levels

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
SSH_PORT = 2222  # not 22: nothing else on the pod network expects it, and no privileged port is needed
SSH_DIR = "/etc/nccl-ssh"
# 8 bytes to 8 GiB, doubling: small sizes show latency, large ones bus bandwidth.
SIZES = ("-b", "8", "-e", "8G", "-f", "2", "-g", "1", "-c", "1", "-n", "20")
# The test's pods run sshd as root, which `restricted` refuses.
POD_SECURITY = "baseline"


class ManifestError(Exception):
    """The pool cannot run the test as asked."""


def ssh_key_pair() -> tuple[str, str]:
    """A fresh ed25519 key pair (private, public) in OpenSSH format; it exists only in this manifest."""
    # Imported here: only this command needs it, and plan/check start-up stays lean.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return private, f"{public} nccl-test\n"


def check_pool(config: PlatformConfig, pool: GpuPool, nodes: int) -> None:
    kind = scheduler_kind(config.scheduler.kind)
    if not kind.workloads:  # the Job is queued by Kueue's queue-name label and admitted as one Workload
        raise ManifestError(f"the test Job is admitted by Kueue; this stack schedules with {kind.title}")
    if pool.sharing.mode != "none":
        raise ManifestError(f"pool {pool.name!r} shares its GPUs ({pool.sharing.mode}); an all-reduce test needs "
                            "whole GPUs: pick a pool with sharing.mode none")
    if not 2 <= nodes <= pool.max_nodes:
        raise ManifestError(f"--nodes must be 2..{pool.max_nodes} (pool {pool.name!r} maxNodes); got {nodes}"
                            if pool.max_nodes >= 2 else
                            f"pool {pool.name!r} has maxNodes {pool.max_nodes}: a multi-node test needs 2 or more")


def pool_fabric(config: PlatformConfig, pool: GpuPool) -> Fabric | None:
    """The fabric the platform attaches to the pool, from its cloud's table; None: the pool has none."""
    return profile(config.cloud).fabrics.get(pool.fabric)


def pick_team(config: PlatformConfig, pool: GpuPool, name: str | None) -> Team:
    """The team whose queue admits the Job: the one named, else the first with quota on the pool whose namespace
    admits the test's pods (root sshd; GKE GPUDirect's also need Pod Security privileged)."""
    with_quota = [t for t in config.teams if t.quotas.get(pool.name)]
    fabric = pool_fabric(config, pool)
    needed = looser_pod_security(POD_SECURITY, fabric.pod_security) if fabric else POD_SECURITY
    admits = [t for t in with_quota if pod_security_admits(t.pod_security, needed)]
    if name is None:
        if not with_quota:
            raise ManifestError(f"no team has quota on pool {pool.name!r}; give --team")
        if not admits:
            raise ManifestError(_refused(pool, needed, with_quota))
        return admits[0]
    team = next((t for t in config.teams if t.name == name), None)
    if team is None:
        raise ManifestError(f"--team {name!r} is not a team of this stack; teams: "
                            f"{', '.join(t.name for t in config.teams)}")
    if team not in with_quota:
        raise ManifestError(f"team {name!r} has no quota on pool {pool.name!r}; teams with quota: "
                            f"{', '.join(t.name for t in with_quota) or '(none)'}")
    if team not in admits:
        raise ManifestError(_refused(pool, needed, [team]))
    return team


def _refused(pool: GpuPool, needed: str, teams: list[Team]) -> str:
    why, after = ((f"{pool.fabric} pods mount host paths and add NET_ADMIN", " (GPU014 then needs an exemption, "
                   "docs/fabric.md)") if needed == "privileged" else ("the test's pods run sshd as root", ""))
    return (f"{why}, which Pod Security {teams[0].pod_security} refuses in {', '.join(repr(t.name) for t in teams)}; "
            f"set teams[].podSecurity: {needed} on the team that trains on the pool{after}, or test another team")


def test_image(config: PlatformConfig, pool: GpuPool) -> NcclTestImage:
    """The image the test runs: the fabric's own, else the cloud's (from its cloud package, never another cloud's)."""
    fabric = pool_fabric(config, pool)
    return (fabric.nccl_test if fabric else None) or profile(config.cloud).nccl_test


def environment(config: PlatformConfig, pool: GpuPool) -> dict[str, str]:
    """What the image needs, then NCCL and libfabric settings: the pool's fabric, or plain TCP sockets where the
    platform attaches none."""
    fabric = pool_fabric(config, pool)
    # Without an attached fabric the image's network plugin would go looking for one: the socket transport is the
    # baseline a fabric is measured against.
    # The instance type's own settings (OCI: which RDMA NICs) come after the fabric's.
    network = {**dict(fabric.env), **dict(pool.instance.fabric_env)} if fabric else {"NCCL_NET": "Socket",
                                                                                     "NCCL_DEBUG": "INFO"}
    return {**dict(test_image(config, pool).env), **network}


def socket_note(config: PlatformConfig, pool: GpuPool) -> str:
    """What a test of a pool without a fabric measures, and with which image, or "" for a fabric pool: a TCP number
    read as the fabric's would send someone hunting for a slow network."""
    if pool_fabric(config, pool):
        return ""
    test = test_image(config, pool)
    idle = pool.instance.interconnect
    unused = (f"; {pool.instance.name}'s {idle} is not attached (gpuPools[].fabric: none), so this is not its "
              "bandwidth") if idle else ""
    return (f"pool {pool.name!r} has no fabric: this test measures NCCL over TCP sockets on the pod network "
            f"(NCCL_NET=Socket), the baseline a fabric is compared with{unused}; image {test.image} ({test.source})")


# MPI's own traffic stays on the pod network; with GPU NICs in the pod (GKE GPUDirect) it must not wander onto them.
MPI_INTERFACES = "--mca btl_tcp_if_exclude lo,docker0"
MPI_POD_NETWORK_ONLY = "--mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0"


def script(job: str, service: str, nodes: int, gpus: int, env: dict[str, str], test: NcclTestImage,
           mpi_interfaces: str = MPI_INTERFACES) -> str:
    """Every rank prepares the image and runs sshd; index 0 waits for the others, runs mpirun over them, then tells
    them to stop."""
    hosts = [f"{job}-{i}.{service}" for i in range(nodes)]
    workers = " ".join(hosts[1:])
    forwarded = " ".join(f"-x {k}" for k in dict.fromkeys(("PATH", "LD_LIBRARY_PATH", *env)))
    mpirun = (f"{test.mpirun} --allow-run-as-root --tag-output -np {nodes * gpus} -H "
              f"{','.join(f'{h}:{gpus}' for h in hosts)} --bind-to none {forwarded} "
              f"--mca pml ^cm --mca btl tcp,self {mpi_interfaces} "
              f"{test.binary} {shlex.join(SIZES)}")
    return "\n".join([
        "set -eu",
        *([test.setup] if test.setup else []),
        f"mkdir -p /root/.ssh /run/sshd && cp {SSH_DIR}/* /root/.ssh/ && chmod 700 /root/.ssh && chmod 600 /root/.ssh/*",
        f"ssh-keygen -A && /usr/sbin/sshd -p {SSH_PORT}",
        'if [ "$JOB_COMPLETION_INDEX" != 0 ]; then',
        "  while [ ! -e /tmp/done ]; do sleep 5; done",
        "  exit 0",
        "fi",
        f"for h in {workers}; do until ssh $h true 2>/dev/null; do sleep 5; done; done",
        "rc=0",
        f"{mpirun} || rc=$?",
        f"for h in {workers}; do ssh $h touch /tmp/done || true; done",
        "exit $rc",
    ])


def manifest(config: PlatformConfig, pool: GpuPool, nodes: int, team: Team,
             key_pair: tuple[str, str]) -> list[dict[str, Any]]:
    """Secret, Service and Job, in apply order."""
    check_pool(config, pool, nodes)
    prof = profile(config.cloud)
    name, ns = f"nccl-test-{pool.name}"[:52].rstrip("-"), team.name  # room for the pods' "-<index>" hostnames
    labels = {"app.kubernetes.io/name": "nccl-test", POOL_LABEL: pool.name}
    env = environment(config, pool)
    limits = {"nvidia.com/gpu": str(pool.instance.gpus)}
    fabric = pool_fabric(config, pool)
    if fabric and fabric.resource:
        # A shared plugin hands every HCA to the pod for one unit; EFA counts one unit per interface.
        limits[fabric.resource] = str(fabric.pod_units or pool.instance.fabric_interfaces)
    # A fabric without a device plugin (GKE GPUDirect): the NICs come through pod annotations and a sidecar.
    direct = fabric.workload_pod(fabric, pool.instance.gpus, pool.instance.fabric_interfaces) \
        if fabric and fabric.workload_pod else None
    test = test_image(config, pool)
    private, public = key_pair
    ssh_config = f"Host *\n  Port {SSH_PORT}\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"{name}-ssh", "namespace": ns, "labels": labels},
              "type": "Opaque",
              "stringData": {"id_ed25519": private, "id_ed25519.pub": public, "authorized_keys": public,
                             "config": ssh_config}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns, "labels": labels},
               # Headless, and published before the pods are ready, so rank 0 finds every rank by name.
               "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                        "selector": {"batch.kubernetes.io/job-name": name}}}
    levels = pool_levels(config, pool)
    # On a TAS pool with network levels, ask for the narrowest block above the host: the number the test reports is
    # then the fabric's best, not a spread across the data center.
    annotations = {PREFERRED_TOPOLOGY: levels[-2]} if len(levels) > 1 else {}
    if direct:
        annotations.update(direct["annotations"])
    pod = {
        "metadata": {"labels": labels, **({"annotations": annotations} if annotations else {})},
        "spec": {
            "subdomain": name, "restartPolicy": "Never",
            "nodeSelector": {POOL_LABEL: pool.name},
            "tolerations": [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
                            for t in pool_taints(pool, prof)],
            "containers": [{
                "name": "nccl", "image": test.image, "command": ["/bin/bash", "-c", script(
                    name, name, nodes, pool.instance.gpus, env, test,
                    MPI_POD_NETWORK_ONLY if direct else MPI_INTERFACES)],
                "env": [{"name": k, "value": v} for k, v in env.items()],
                "resources": {"limits": limits, "requests": dict(limits)},
                "volumeMounts": [{"name": "ssh", "mountPath": SSH_DIR, "readOnly": True},
                                 {"name": "shm", "mountPath": "/dev/shm"}, *(direct["mounts"] if direct else ())],
            }],
            "volumes": [{"name": "ssh", "secret": {"secretName": f"{name}-ssh", "defaultMode": 0o400}},
                        # NCCL's intra-node transport uses shared memory; the container default of 64 MiB is too small.
                        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
                        *(direct["volumes"] if direct else ())],
        },
    }
    if direct:
        pod["spec"]["initContainers"] = [direct["sidecar"]]
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": name, "namespace": ns, "labels": {**labels, QUEUE_LABEL: LOCAL_QUEUE}},
           "spec": {
               # Kueue admits the whole Job (every rank) or none of it, and unsuspends it then.
               "suspend": True, "completionMode": "Indexed", "completions": nodes, "parallelism": nodes,
               # One failed rank fails the collective: no retries, and the result is kept an hour for reading.
               "backoffLimit": 0, "ttlSecondsAfterFinished": 3600,
               # Ranks wait for rank 0 to release them; if it dies first, the deadline ends the Job.
               "activeDeadlineSeconds": 3600, "template": pod}}
    return [secret, service, job]
