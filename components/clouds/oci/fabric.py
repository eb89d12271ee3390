"""A fabric device plugin that ships no Helm chart (Mellanox's shared RDMA plugin, OKE RDMA pools): its ConfigMap and
DaemonSet, as Mellanox/k8s-rdma-shared-dev-plugin deployment/k8s/base lays them out, on the fabric's pools only."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.clouds.facts import Fabric

CONFIG_DIR = "/k8s-rdma-shared-dev-plugin"  # where the plugin reads config.json
# The kubelet's device-plugin and plugin-registration sockets, and /dev for the HCAs the plugin hands to pods.
HOST_PATHS = {"device-plugin": "/var/lib/kubelet/device-plugins", "plugins-registry": "/var/lib/kubelet/plugins_registry",
              "devs": "/dev/"}


def daemonset_spec(name: str, fabric: Fabric, values: dict[str, Any]) -> dict[str, Any]:
    """The DaemonSet spec: upstream's pod (host network, privileged, system-node-critical) pinned by `values`."""
    labels = {"app.kubernetes.io/name": name}
    mounts = [{"name": vol, "mountPath": path} for vol, path in HOST_PATHS.items() if vol != "devs"]
    mounts += [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}, {"name": "devs", "mountPath": "/dev/"}]
    return {
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "hostNetwork": True,
                "priorityClassName": "system-node-critical",
                "nodeSelector": values["nodeSelector"],
                "tolerations": values["tolerations"],
                "containers": [{
                    "name": "rdma-shared-dp", "image": fabric.image, "imagePullPolicy": "IfNotPresent",
                    # It creates device nodes' cgroup rules and registers with the kubelet: upstream runs it privileged.
                    "securityContext": {"privileged": True},
                    "volumeMounts": mounts,
                }],
                "volumes": [*({"name": vol, "hostPath": {"path": path}} for vol, path in HOST_PATHS.items()),
                            {"name": "config", "configMap": {"name": name,
                                                             "items": [{"key": "config.json", "path": "config.json"}]}}],
            },
        },
    }


def install(name: str, config: Any, fabrics: tuple[Fabric, ...], values: dict[str, dict[str, Any]],
            opts: pulumi.ResourceOptions) -> None:
    """The record's installer: each fabric's plugin (the stack config adds nothing to them)."""
    for fabric in fabrics:
        plugin(f"{name}-{fabric.name}", fabric, values[fabric.name], opts)


def plugin(name: str, fabric: Fabric, values: dict[str, Any], opts: pulumi.ResourceOptions) -> k8s.apps.v1.DaemonSet:
    """The plugin's ConfigMap and DaemonSet, both called `name`."""
    config_map = k8s.core.v1.ConfigMap(
        f"{name}-config", metadata={"name": name, "namespace": fabric.namespace},
        data={"config.json": fabric.plugin_config}, opts=opts)
    return k8s.apps.v1.DaemonSet(
        name,
        # Its pools may have no node yet (bare metal takes long to boot): waiting for the rollout would block `up`.
        metadata={"name": name, "namespace": fabric.namespace, "annotations": {"pulumi.com/skipAwait": "true"}},
        spec=daemonset_spec(name, fabric, values),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[config_map])))
