"""Pod Security baseline with exactly one exception, for teams whose pods use a fabric whose pods run a sidecar
(`teams[].podSecurity: fabric-sidecar`; GKE GPUDirect's is the receive-datapath manager, RxDM).

Such a sidecar mounts host directories and adds capabilities (GKE's RxDM: /sys, /proc/sys and NET_ADMIN), and the
workload mounts host paths too (GKE's: the node's NCCL plugin directory). Pod Security admission has no
per-container exception: its only level admitting that is `privileged`, which would admit anything. So such a team's namespace enforces
`privileged` (and says why in a label) and this ValidatingAdmissionPolicy, bound to that namespace only, does the
baseline checks itself (Kubernetes "Pod Security Standards", baseline profile) with one allowance: a container
whose image and command are exactly a fabric's documented sidecar may add the sidecar's capabilities and mount its
host paths, and other containers may mount the fabric's documented workload host paths (read-only, except device
directories). The sidecar's facts are read from the fabric record's `pod_sidecar`, which its cloud package derives
from the same facts its workload_pod builds pods from, so they have one source.
"""
from __future__ import annotations

import json
from typing import Any

import pulumi

from components.clouds import profile
from components.clouds.facts import PodSidecar, writable_host_path
from components.config.model import PlatformConfig, Team
from components.tenancy.deny_policy import deny_policy

POLICY_PREFIX = "gpu-platform-fabric-baseline"
# The namespace label naming the policy that enforces what its `privileged` Pod Security label no longer does.
POLICY_LABEL = "gpu-platform.io/pod-security-policy"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# Pod Security Standards, baseline profile (Kubernetes v1.35): what it lets containers add, the SELinux types, the
# sysctls it calls safe.
BASELINE_CAPABILITIES = ("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                         "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT")
SELINUX_TYPES = ("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t")
SAFE_SYSCTLS = ("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def policy_name(team: str) -> str:
    return f"{POLICY_PREFIX}-{team}"


def team_sidecars(config: PlatformConfig, team: Team) -> list[PodSidecar]:
    """The sidecars of the fabrics of the pools the team has quota on, in pool order."""
    fabrics = profile(config.cloud).fabrics
    found: dict[str, PodSidecar] = {}
    for pool in config.gpu_pools:
        fabric = fabrics.get(pool.fabric)
        if pool.name in team.quotas and fabric and fabric.pod_sidecar:
            found.setdefault(fabric.name, fabric.pod_sidecar)
    return list(found.values())


def _lit(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _sidecar_table(sidecars: list[PodSidecar]) -> list[dict[str, Any]]:
    # The API server's CEL checks a map literal's values share one type, so the image is a one-element list too.
    return [{"image": [s.image], "command": list(s.command), "caps": list(s.capabilities),
             "hostPaths": sorted(set(s.host_paths))} for s in sidecars]


def _workload_paths(sidecars: list[PodSidecar]) -> tuple[list[str], list[str]]:
    """Host paths workload containers may mount: read-only ones, and device directories (written through mmap)."""
    paths = {host for s in sidecars for host in s.workload_host_paths}
    return sorted(p for p in paths if not writable_host_path(p)), sorted(p for p in paths if writable_host_path(p))


POD = "object.spec"


def _unset_or(path: str, expr: str, root: str = "c") -> str:
    """`expr` on the optional field at dotted `path` below `root` (a container, or `object.spec`); true when any
    step is absent, as Pod Security treats unset fields."""
    steps = path.split(".")
    guards = " && ".join(f"has({root}.{'.'.join(steps[:i + 1])})" for i in range(len(steps)))
    return f"(!({guards}) || {expr})"


def baseline_rules(sidecars: list[PodSidecar]) -> dict[str, Any]:
    """The policy spec: variables, then one validation per baseline control, each with its own message."""
    read_only, devices = _workload_paths(sidecars)
    all_paths = sorted({*read_only, *devices, *(p for s in _sidecar_table(sidecars) for p in s["hostPaths"])})
    variables = [
        {"name": "sidecars", "expression": _lit(_sidecar_table(sidecars))},
        {"name": "containers", "expression": "object.spec.containers"
                                             " + (has(object.spec.initContainers) ? object.spec.initContainers : [])"
                                             " + (has(object.spec.ephemeralContainers) ? "
                                             "object.spec.ephemeralContainers : [])"},
        {"name": "hostVolumes", "expression": "has(object.spec.volumes) ? "
                                              "object.spec.volumes.filter(v, has(v.hostPath)) : []"},
    ]
    def sidecar_may(field: str, value: str) -> str:
        """`value` in the `field` list of a sidecar `c` is exactly (image and command; no args to change what the
        command runs)."""
        return (f"variables.sidecars.exists(s, c.image in s.image && has(c.command) && c.command == s.command "
                f"&& !has(c.args) && {value} in s.{field})")

    host_mount = "variables.hostVolumes.filter(v, v.name == m.name)"
    mounts_ok = (
        "!has(c.volumeMounts) || c.volumeMounts.all(m, !variables.hostVolumes.exists(v, v.name == m.name) || "
        f"{sidecar_may('hostPaths', host_mount + '[0].hostPath.path')} || "
        f"({host_mount}[0].hostPath.path in {_lit(devices)}) || "
        f"({host_mount}[0].hostPath.path in {_lit(read_only)} && has(m.readOnly) && m.readOnly))")
    apparmor = ("!has(object.metadata.annotations) || object.metadata.annotations.all(k, "
                f"!k.startsWith({_lit(APPARMOR_ANNOTATION)}) || object.metadata.annotations[k] == 'runtime/default' "
                "|| object.metadata.annotations[k].startsWith('localhost/'))")
    checks = [
        ("host namespaces", "!(has(object.spec.hostNetwork) && object.spec.hostNetwork) && "
                            "!(has(object.spec.hostPID) && object.spec.hostPID) && "
                            "!(has(object.spec.hostIPC) && object.spec.hostIPC)",
         "hostNetwork, hostPID and hostIPC must be unset or false"),
        ("privileged", "variables.containers.all(c, " + _unset_or("securityContext.privileged",
                                                             "!c.securityContext.privileged") + ")",
         "containers may not be privileged"),
        ("capabilities", "variables.containers.all(c, " + _unset_or(
            "securityContext.capabilities.add",
            f"c.securityContext.capabilities.add.all(a, a in {_lit(list(BASELINE_CAPABILITIES))} || "
            f"{sidecar_may('caps', 'a')})") + ")",
         "containers may add only the baseline capabilities; the fabric sidecar also its documented ones"),
        ("hostPath volumes", f"variables.hostVolumes.all(v, v.hostPath.path in {_lit(all_paths)})",
         f"hostPath volumes are limited to the fabric's documented paths {', '.join(all_paths)}"),
        ("hostPath mounts", f"variables.containers.all(c, {mounts_ok})",
         "only the fabric sidecar mounts its host paths; other containers mount the fabric's workload host paths, "
         "read-only except device directories"),
        ("host ports", "variables.containers.all(c, " + _unset_or(
            "ports", "c.ports.all(p, !has(p.hostPort) || p.hostPort == 0)") + ")",
         "containers may not use host ports"),
        ("SELinux", _unset_or("securityContext.seLinuxOptions", "object.spec.securityContext.seLinuxOptions.all("
                             f"k, k == 'level' || (k == 'type' && object.spec.securityContext.seLinuxOptions.type in "
                             f"{_lit(list(SELINUX_TYPES))}))", POD) + " && variables.containers.all(c, " + _unset_or(
            "securityContext.seLinuxOptions", "c.securityContext.seLinuxOptions.all(k, k == 'level' || "
            f"(k == 'type' && c.securityContext.seLinuxOptions.type in {_lit(list(SELINUX_TYPES))}))") + ")",
         "SELinux options may set only level and a container type"),
        ("seccomp", _unset_or("securityContext.seccompProfile",
                             "object.spec.securityContext.seccompProfile.type != 'Unconfined'", POD) +
         " && variables.containers.all(c, " + _unset_or("securityContext.seccompProfile",
                                                   "c.securityContext.seccompProfile.type != 'Unconfined'") + ")",
         "seccomp profiles may not be Unconfined"),
        ("AppArmor", _unset_or("securityContext.appArmorProfile",
                              "object.spec.securityContext.appArmorProfile.type != 'Unconfined'", POD) +
         " && variables.containers.all(c, " + _unset_or("securityContext.appArmorProfile",
                                                   "c.securityContext.appArmorProfile.type != 'Unconfined'") +
         f") && ({apparmor})",
         "AppArmor profiles may not be Unconfined"),
        ("procMount", "variables.containers.all(c, " + _unset_or("securityContext.procMount",
                                                            "c.securityContext.procMount == 'Default'") + ")",
         "procMount must be Default"),
        ("sysctls", _unset_or("securityContext.sysctls", "object.spec.securityContext.sysctls.all(s, s.name in "
                                                        f"{_lit(list(SAFE_SYSCTLS))})", POD),
         "only the baseline's safe sysctls"),
        ("hostProcess", _unset_or("securityContext.windowsOptions.hostProcess",
                                 "!object.spec.securityContext.windowsOptions.hostProcess", POD) +
         " && variables.containers.all(c, " + _unset_or("securityContext.windowsOptions.hostProcess",
                                                   "!c.securityContext.windowsOptions.hostProcess") + ")",
         "Windows hostProcess containers are not allowed"),
    ]
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{
            "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": ["pods", "pods/ephemeralcontainers"], "scope": "Namespaced"}]},
        "variables": variables,
        "validations": [{"expression": expr, "message": f"Pod Security baseline ({name}): {why}",
                         "reason": "Forbidden"} for name, expr, why in checks],
    }


class FabricBaseline(pulumi.ComponentResource):
    """One team's baseline-plus-fabric-sidecar admission policy, bound to its namespace only."""

    TYPE = "gpu-platform:tenancy:FabricBaseline"

    def __init__(self, name: str, config: PlatformConfig, team: Team, opts: pulumi.ResourceOptions | None = None):
        policy_name_ = policy_name(team.name)
        super().__init__(self.TYPE, name, {"policy": policy_name_, "namespace": team.name}, opts)
        deny_policy(name, policy_name_, baseline_rules(team_sidecars(config, team)), self,
                    {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: team.name}}})
        self.register_outputs({"policy": policy_name_})
