"""Job frameworks for multi-node training: one pinned Helm release per framework the stack opts into
(`scheduler.frameworks`), from the catalog in framework_catalog.py."""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi_kubernetes.helm.v3 import Release, ReleaseArgs, RepositoryOptsArgs

from components.scheduling.framework_catalog import FRAMEWORKS, Framework
from components.system_pool import tolerating

if TYPE_CHECKING:
    from components.config.model import PlatformConfig


def chart_values(framework: Framework) -> dict[str, Any]:
    """The row's values plus the system pool's toleration where its chart takes the operator's tolerations."""
    values = copy.deepcopy(framework.values)
    *parents, leaf = framework.tolerations_at.split(".")
    at = values
    for key in parents:
        at = at.setdefault(key, {})
    at[leaf] = tolerating()
    return values


class Frameworks(pulumi.ComponentResource):
    """The job framework operators the stack opts into, one Helm release each."""

    TYPE = "gpu-platform:scheduling:Frameworks"

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        chosen = [FRAMEWORKS[n] for n in config.scheduler.frameworks]
        super().__init__(self.TYPE, name, {"frameworks": {f.name: f.version for f in chosen}}, opts)
        self.releases: dict[str, Release] = {}
        for framework in chosen:
            needs = [self.releases[n] for n in framework.needs]  # config order puts what it needs first
            self.releases[framework.name] = Release(
                f"{name}-{framework.name}",
                ReleaseArgs(
                    name=framework.release_name, chart=framework.chart, version=framework.version,
                    namespace=framework.namespace, create_namespace=True, values=chart_values(framework),
                    repository_opts=RepositoryOptsArgs(repo=framework.repository) if framework.repository else None,
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=needs),
            )
        self.register_outputs({})
