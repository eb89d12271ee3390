"""The gpu-platform program as the real-engine tests run it (tests/cluster/test_pulumi_cli.py): the repo's __main__.py,
unchanged, with one stack transformation for a cluster that has no network and no kubelet.

Every Helm release installs from the chart package of the same name and version in $GPU_PLATFORM_CHART_DIR
(../shared/upstream/charts) instead of its remote repository, and does not wait for workloads that no kubelet will
start (skipAwait). The offline plan the tests compare against gets the same edit (test_pulumi_cli.local_charts).
"""
import os
import runpy
import sys

import pulumi

ROOT = os.environ["GPU_PLATFORM_ROOT"]
CHARTS = os.environ["GPU_PLATFORM_CHART_DIR"]
sys.path.insert(0, ROOT)


def chart_package(chart: str, version: str) -> str:
    """`<chart>-<version>.tgz` in the chart folder, by the chart's last path segment (`oci://.../kueue` -> kueue)."""
    base = chart.rstrip("/").rsplit("/", 1)[-1]
    path = os.path.join(CHARTS, f"{base}-{version}.tgz")
    if not os.path.isfile(path):
        raise pulumi.RunError(f"no chart package {path} for Helm chart {chart} {version}")
    return path


def local_charts(args: pulumi.ResourceTransformationArgs):
    if args.type_ != "kubernetes:helm.sh/v3:Release":
        return None
    props = dict(args.props)
    props["chart"] = chart_package(props["chart"], props["version"])
    props["repository_opts"] = None
    props["skip_await"] = True
    return pulumi.ResourceTransformationResult(props, args.opts)


pulumi.runtime.register_stack_transformation(local_charts)
runpy.run_path(os.path.join(ROOT, "__main__.py"), run_name="__main__")
