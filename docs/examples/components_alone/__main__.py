"""A Pulumi program of your own that uses two gpu-platform components on a cluster it already has."""
import pulumi
import pulumi_kubernetes as k8s

from components.gpu.operator import GpuOperator, GpuOperatorArgs
from components.tenancy.team import Team, TeamArgs

config = pulumi.Config()
cluster = k8s.Provider("existing-cluster", kubeconfig=config.require_secret("kubeconfig"))
on_cluster = pulumi.ResourceOptions(provider=cluster)

# Nodes come with the driver and toolkit (a cloud GPU image): the operator runs the device plugin and DCGM only.
operator = GpuOperator("gpu-operator", GpuOperatorArgs(
    values={
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "devicePlugin": {"enabled": True},
        "dcgmExporter": {"enabled": True},
        "daemonsets": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
    },
    driver_owners={"a100": "managed"},
    operands={"driver": False, "toolkit": False, "devicePlugin": True, "migManager": False, "dcgmExporter": True},
), opts=on_cluster)

research = Team("research", TeamArgs(
    team="research",
    priority="normal",
    gpu_quota={"requests.nvidia.com/gpu": "8"},
    # CPU, memory and pod caps, so the team's CPU work cannot starve the cluster's controllers (GPU020).
    compute_quota={"requests.cpu": "64", "requests.memory": "256Gi", "pods": "100"},
    groups=["research-engineers"],
    protect=True,
), opts=on_cluster)

pulumi.export("teamNamespace", research.namespace.metadata.name)
