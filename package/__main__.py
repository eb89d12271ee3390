"""Entry point of the gpu-platform component package: serves GpuNodePool, GpuOperator, Team, Kueue and
GpuMonitoring to any Pulumi program (`pulumi package add <path-to-this-directory>`).

The repository root's __main__.py is the stack program; this directory is the plugin, so each has its own
manifest (Pulumi.yaml there, PulumiPlugin.yaml here).
"""
from pulumi.provider.experimental import component_provider_host

from components.provider import COMPONENTS, PACKAGE, PACKAGE_VERSION

if __name__ == "__main__":
    component_provider_host(COMPONENTS, name=PACKAGE, version=PACKAGE_VERSION)
