"""Helpers the fabric tests share (moved out of the test modules that defined them)."""
from __future__ import annotations

import copy

import pytest

from components.clouds import PROFILES
from components.config import ConfigError
from components.clouds.gcp.facts import workload_pod
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import PROJECT_ROOT, read_stack_config


def errors(overrides, stack="aws-prod"):
    with pytest.raises(ConfigError) as exc:
        plan_stack(stack, config_overrides=overrides)
    return {p.path: p.message for p in exc.value.problems}


def one(plan, type_, name=None):
    """The one planned resource of `type_` (named `name`)."""
    matches = [r for r in plan.of_type(type_) if name is None or r.name == name]
    assert len(matches) == 1, f"{type_} {name}: {[r.name for r in plan.of_type(type_)]}"
    return matches[0]


TCPX = PROFILES["gcp"].fabrics["gpudirect-tcpx"]


def sidecar(pod: dict) -> dict:
    return pod["spec"]["initContainers"][0]


def main(pod: dict) -> dict:
    return pod["spec"]["containers"][0]


def other_sidecar_image(pod):
    sidecar(pod)["image"] = TCPX.pod_sidecar.image.replace("v2.0.12", "v2.0.13")


def sidecar_args(pod):
    sidecar(pod)["args"] = ["--and-then", "sh"]


def extra_host_path(pod):
    pod["spec"]["volumes"].append({"name": "etc", "hostPath": {"path": "/etc"}})
    sidecar(pod)["volumeMounts"].append({"name": "etc", "mountPath": "/host-etc"})


def extra_sidecar_capability(pod):
    sidecar(pod)["securityContext"]["capabilities"]["add"].append("SYS_ADMIN")


def main_adds_the_sidecars_capability(pod):
    main(pod)["securityContext"]["capabilities"] = {"add": ["NET_ADMIN"]}


def main_mounts_host_sys(pod):
    main(pod)["volumeMounts"].append({"name": "sys", "mountPath": "/sys-host", "readOnly": True})


def main_writes_the_plugin_directory(pod):
    next(m for m in main(pod)["volumeMounts"] if m["name"] == "libraries").pop("readOnly")


def privileged_main(pod):
    main(pod)["securityContext"]["privileged"] = True


def host_network(pod):
    pod["spec"]["hostNetwork"] = True


def host_pid(pod):
    pod["spec"]["hostPID"] = True


def host_port(pod):
    main(pod)["ports"] = [{"containerPort": 8080, "hostPort": 8080}]


def unconfined_seccomp(pod):
    main(pod)["securityContext"]["seccompProfile"] = {"type": "Unconfined"}


def unconfined_pod_seccomp(pod):
    pod["spec"]["securityContext"] = {"seccompProfile": {"type": "Unconfined"}}


def unconfined_apparmor_annotation(pod):
    pod["metadata"]["annotations"]["container.apparmor.security.beta.kubernetes.io/nccl"] = "unconfined"


def selinux_user(pod):
    pod["spec"]["securityContext"] = {"seLinuxOptions": {"user": "system_u"}}


def unmasked_proc(pod):
    # The API server takes Unmasked only in a user namespace (hostUsers: false), where baseline may allow it: the
    # policy still refuses it, stricter than baseline, since a GPU pod has no use for it.
    pod["spec"]["hostUsers"] = False
    main(pod)["securityContext"]["procMount"] = "Unmasked"


def unsafe_sysctl(pod):
    pod["spec"]["securityContext"] = {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]}


def privileged_ephemeral_container(pod):
    pod["spec"]["ephemeralContainers"] = [{"name": "debug", "image": "busybox",
                                           "securityContext": {"privileged": True}}]


# change, the control that refuses it
REFUSED = [
    (other_sidecar_image, "capabilities"),
    (sidecar_args, "capabilities"),
    (extra_host_path, "hostPath volumes"),
    (extra_sidecar_capability, "capabilities"),
    (main_adds_the_sidecars_capability, "capabilities"),
    (main_mounts_host_sys, "hostPath mounts"),
    (main_writes_the_plugin_directory, "hostPath mounts"),
    (privileged_main, "privileged"),
    (host_network, "host namespaces"),
    (host_pid, "host namespaces"),
    (host_port, "host ports"),
    (unconfined_seccomp, "seccomp"),
    (unconfined_pod_seccomp, "seccomp"),
    (unconfined_apparmor_annotation, "AppArmor"),
    (selinux_user, "SELinux"),
    (unmasked_proc, "procMount"),
    (unsafe_sysctl, "sysctls"),
    (privileged_ephemeral_container, "privileged"),
]


def good_pod() -> dict:
    """An NCCL pod on the TCPX pool as the platform builds it: baseline main container plus the exact sidecar."""
    direct = workload_pod(TCPX, gpus=8, nics=4)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "nccl", "namespace": "research", "annotations": direct["annotations"]},
            "spec": {"initContainers": [direct["sidecar"]],
                     "containers": [{"name": "nccl", "image": "example.com/train:1",
                                     "resources": {"limits": {"nvidia.com/gpu": 8}},
                                     "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                                     "volumeMounts": direct["mounts"]}],
                     "volumes": direct["volumes"]}}


TENANCY = "ocid1.tenancy.oc1..aaaaaaaaexampletenancy"
RDMA_IMAGE = "ocid1.image.oc1.iad.aaaaaaaaexamplerdma"


def raw_stack() -> dict:
    return read_stack_config(PROJECT_ROOT / "stacks" / "Pulumi.oci-prod.yaml")


def rdma_overrides(*pools, extras: bool = True) -> dict:
    raw = raw_stack()
    cluster = copy.deepcopy(raw["gpu-platform:cluster"])
    if extras:
        cluster["oci"].update({"tenancyId": TENANCY, "rdmaImageId": RDMA_IMAGE})
    pools = pools or ({"name": "h100-train", "instanceType": "BM.GPU.H100.8", "minNodes": 2, "maxNodes": 2,
                       "workload": "training", "fabric": "rdma", "taints": ["example.com/team=genai:NoSchedule"]},
                      {"name": "a10-infer", "instanceType": "VM.GPU.A10.2", "maxNodes": 2, "workload": "inference"})
    return {"gpu-platform:cluster": cluster, "gpu-platform:gpuPools": list(pools),
            "gpu-platform:teams": [{"name": "genai", "quotas": {pools[0]["name"]: 8}}]}
