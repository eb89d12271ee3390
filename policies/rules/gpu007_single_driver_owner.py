"""GPU007: each GPU pool has exactly one NVIDIA driver owner: the cloud's image or the GPU Operator."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import charts
from policies.charts import UnknownDefault
from policies.graph import Graph, Pool
from policies.rule import Pending, Report, stack_rule

# A node with this label set to "false" gets no operator driver even when the operator's driver is enabled.
DRIVER_DEPLOY_LABEL = "nvidia.com/gpu.deploy.driver"


def operator_installs(releases: list[charts.Release], pool: Pool) -> bool:
    """Whether some GPU Operator release deploys its driver onto this pool's nodes."""
    if pool.label(DRIVER_DEPLOY_LABEL) == "false":
        return False
    return any(r.value("driver.enabled") is True for r in releases)


def _owners(cloud: bool, operator: bool, service: str) -> list[str]:
    return [owner for owner, owns in ((f"{service} image", cloud), ("GPU Operator", operator)) if owns]


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    pools = graph.pools()
    if not pools:
        graph.outside_plan(args, "no GPU pools", "GPU pools and their drivers")
    releases = charts.releases(graph, charts.GPU_OPERATOR)
    pending = Pending()
    for pool in pools:
        with pending.each():
            service = pool.shape.service if pool.shape else "cloud"
            cloud = pool.cloud_driver()
            try:
                operator = operator_installs(releases, pool)
            except UnknownDefault as exc:
                report(f"pool {pool.name!r}: cannot tell whether the GPU Operator installs a driver: {exc}",
                       pool.resource.urn)
                continue
            if cloud is None:
                if not operator:
                    report(f"pool {pool.name!r}: the GPU Operator does not install a driver and nothing shows that "
                           f"the {service} image does; declare the owner (`driver: managed` on a GPU image, or "
                           "`driver: operator`)", pool.resource.urn)
                continue
            owners = _owners(cloud, operator, service)
            if len(owners) == 2:
                report(f"pool {pool.name!r}: both the {service} image and the GPU Operator install the NVIDIA "
                       f"driver; two owners crash-loop or pin a driver the operator cannot upgrade. Disable one: "
                       f"label the pool {DRIVER_DEPLOY_LABEL}=false, or stop the cloud installing it",
                       pool.resource.urn)
            elif not owners:
                report(f"pool {pool.name!r}: nobody installs the NVIDIA driver (the {service} pool is set not to "
                       "and the GPU Operator's driver is disabled or kept off these nodes): its GPUs never work",
                       pool.resource.urn)
    pending.finish()


RULE = stack_rule(
    id="GPU007", slug="single-driver-owner",
    title="Each GPU pool has exactly one driver owner (cloud image or GPU Operator, never both)",
    rationale=("Two installers of the NVIDIA driver and toolkit on one node crash-loop or leave a driver the "
               "operator can never upgrade (NVIDIA/gpu-operator#525, #666, #686); none leaves the GPUs dead. The "
               "cloud side is read from each pool: EKS `amiType` (NVIDIA/GPU AMIs ship the driver), AKS "
               "`gpuProfile.driver` (None skips it), GKE `gpuDriverInstallationConfig.gpuDriverVersion` "
               "(DEFAULT/LATEST install it, unset installs nothing), and the declared owner where the resource "
               "does not show it (OKE images). The operator side is the gpu-operator release's `driver.enabled` "
               "(chart default true) unless the pool's nodes carry `nvidia.com/gpu.deploy.driver=false`. "
               "Critical: it cannot be exempted."),
    severity=Severity.CRITICAL, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Pick one owner per pool with `gpuPools[].driver` (`managed` or `operator`, where the cloud allows it); "
        "the platform then sets the cloud field, the operator's `driver.enabled` and the per-node deploy label.",
        "For pools made elsewhere: a cloud-owned pool's nodes need `nvidia.com/gpu.deploy.driver=false` while "
        "the operator's driver is enabled; an operator-owned pool must stop the cloud installing (AKS "
        "`gpuProfile.driver: None`, GKE `INSTALLATION_DISABLED` on Ubuntu).",
    ),
    config_key="gpuPools",
    check=check,
)
