"""Helpers the cluster tests share (moved out of the test modules that defined them)."""
from __future__ import annotations

import time

import pytest
import yaml

from gpu_platform.engine import plan_stack

from support.cluster_manifests import apply_stack, manifests
from support.helm import CHARTS, Helm, extract_helm
from support.stacks import stack_config


TEAM, GROUP = "applied", "applied-ml"  # priority normal; pools h100-train and a100-infer (teams[].quotas)


OTHER_TEAM = "research"


STACK = "aws-prod"

# Charts whose CRDs give the job kinds the ceiling policy names (jobset and lws also ship inside the trainer chart).
JOB_KIND_CHARTS = ("jobset-0.12.0", "lws-0.9.0", "kuberay-operator-1.6.2", "kubeflow-trainer-2.2.1")

# AppWrapper (CodeFlare, workload.codeflare.dev/v1beta2) ships in no chart the platform pins: written here as far as
# the ceiling policy reads it, each component's template an embedded object of any kind.
APPWRAPPER_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "appwrappers.workload.codeflare.dev"},
    "spec": {"group": "workload.codeflare.dev", "scope": "Namespaced",
             "names": {"kind": "AppWrapper", "listKind": "AppWrapperList", "plural": "appwrappers",
                       "singular": "appwrapper"},
             "versions": [{"name": "v1beta2", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {
                     "type": "object", "required": ["components"], "properties": {
                         "suspend": {"type": "boolean"},
                         "components": {"type": "array", "items": {
                             "type": "object", "required": ["template"], "properties": {
                                 "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                                              "x-kubernetes-preserve-unknown-fields": True}}}}}}}}}}]},
}


def mixed_mig_overrides() -> dict:
    """aws-prod with `a100-infer` cut into a mixed MIG layout: quotas then carry requests.nvidia.com/mig-* caps.
    Its team quotas shrink to what 2 nodes of that layout offer."""
    config = stack_config(STACK)
    pools, teams = config["gpu-platform:gpuPools"], config["gpu-platform:teams"]
    (a100,) = [p for p in pools if p["name"] == "a100-infer"]
    a100["sharing"] = {"mode": "mig", "migProfile": "all-balanced"}
    for team in teams:
        if "a100-infer" in team["quotas"]:
            team["quotas"]["a100-infer"] = 8
    return {"gpu-platform:gpuPools": pools, "gpu-platform:teams": teams}


class Tenant:
    """kubectl as a member of the team's group (every authenticated user is also in system:authenticated)."""

    def __init__(self, cluster, group: str):
        self.cluster, self.group = cluster, group

    def kubectl(self, *args: str, **kw):
        return self.cluster.kubectl(*args, as_user=f"mallory@{self.group}",
                                    as_groups=(self.group, "system:authenticated"), **{"check": False, **kw})

    def can_i(self, verb: str, resource: str, namespace: str) -> bool:
        resource, _, subresource = resource.partition("/")
        extra = (f"--subresource={subresource}",) if subresource else ()
        return self.kubectl("auth", "can-i", verb, resource, *extra, "-n", namespace).stdout.strip() == "yes"


@pytest.fixture(scope="module")
def cluster(control_plane, tmp_path_factory):
    home = tmp_path_factory.mktemp("helm")
    helm = Helm(extract_helm(home), home)
    stack = manifests(plan_stack(STACK, config_overrides=mixed_mig_overrides()), helm)
    names = {crd["metadata"]["name"] for crd in stack.crds}
    for chart in JOB_KIND_CHARTS:
        for crd in helm.crds(CHARTS / f"{chart}.tgz"):
            if crd["metadata"]["name"] not in names:
                names.add(crd["metadata"]["name"])
                stack.crds.append(crd)
    stack.crds.append(APPWRAPPER_CRD)
    cluster = control_plane.cluster("tenancy")
    applied, refused = apply_stack(cluster, stack, webhooks=False)
    assert not refused, "\n".join(refused)
    # Quota admission refuses pods until the quota controller has recorded each quota's status once.
    deadline = time.monotonic() + 60
    while any(not q.get("status", {}).get("hard") for q in cluster.get("resourcequota", "-A")["items"]):
        assert time.monotonic() < deadline, "ResourceQuota status never set by the controller-manager"
        time.sleep(1)
    yield cluster
    cluster.close()


def as_service_account(cluster, namespace: str, name: str):
    """kubectl as a service account, with the groups the API server gives one."""
    return lambda *args, **kw: cluster.kubectl(
        *args, as_user=f"system:serviceaccount:{namespace}:{name}",
        as_groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
        **{"check": False, **kw})


def dry_run(who, obj: dict):
    """Create `obj` as `who` (a Tenant or the admin Cluster) through every admission step, storing nothing."""
    return who.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(obj), check=False)


def refusal(done) -> str:
    """The server's refusal message, or "" when it admitted the request."""
    return "" if done.returncode == 0 else done.stderr.strip()
