"""teams[].podSecurity: fabric-sidecar proven on a real API server: gcp-prod's objects applied to a real
kube-apiserver (tests/support/realcluster.py), then the research team (impersonated) creates, server-side dry run, the
platform's own GPUDirect-TCPX pod and copies with one field changed. The server compiles and runs the planned
ValidatingAdmissionPolicy's CEL itself, so this checks what tests/clouds/test_fabric_baseline.py checks with cel-python,
in the API server's CEL dialect (the first apply found a map literal it refuses to compile)."""
from __future__ import annotations

import copy
import json
import time

import pytest
import yaml

from components.config.labels import POOL_LABEL
from gpu_platform.engine import plan_stack

from support.cluster_manifests import apply_stack, manifests
from support.fabric import REFUSED, good_pod, privileged_ephemeral_container
from support.helm import Helm, extract_helm

pytestmark = pytest.mark.cluster

STACK, TEAM, GROUP, POOL = "gcp-prod", "research", "research@acme.example", "h100-train"


@pytest.fixture(scope="module")
def cluster(control_plane, tmp_path_factory):
    home = tmp_path_factory.mktemp("helm")
    stack = manifests(plan_stack(STACK), Helm(extract_helm(home), home))
    cluster = control_plane.cluster("fabric-sidecar")
    _, refused = apply_stack(cluster, stack, webhooks=False)
    assert not refused, "\n".join(refused)
    # Quota admission refuses pods until the quota controller has recorded each quota's status once.
    deadline = time.monotonic() + 60
    while any(not q.get("status", {}).get("hard") for q in cluster.get("resourcequota", "-n", TEAM)["items"]):
        assert time.monotonic() < deadline, "ResourceQuota status never set by the controller-manager"
        time.sleep(1)
    yield cluster
    cluster.close()


def on_the_pool(pod: dict) -> dict:
    """The pod as a team submits it: on its TCPX pool (the pool admission policy), at its priority, gated until
    Kueue admits it. No Kueue webhook runs here to add that gate, so the pod carries it as the webhook would leave
    it; without it the queue-gate policy (tenancy/queue_gate.py) refuses a team's GPU pod."""
    pod = copy.deepcopy(pod)
    pod["spec"]["nodeSelector"] = {POOL_LABEL: POOL}
    pod["spec"]["priorityClassName"] = "gpu-high"
    pod["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    return pod


def refusal(cluster, pod: dict) -> str:
    done = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(pod), check=False,
                           as_user=f"mallory@{TEAM}", as_groups=(GROUP, "system:authenticated"))
    return "" if done.returncode == 0 else done.stderr.strip()


def test_the_platforms_own_gpudirect_pod_is_admitted(cluster):
    assert refusal(cluster, on_the_pool(good_pod())) == ""


# The server refuses ephemeral containers on create: they come through the pods/ephemeralcontainers subresource.
ON_CREATE = [(change, control) for change, control in REFUSED if change is not privileged_ephemeral_container]


@pytest.mark.parametrize("change, control", ON_CREATE, ids=[c[0].__name__ for c in ON_CREATE])
def test_one_changed_field_is_refused_by_its_control(cluster, change, control):
    pod = on_the_pool(good_pod())
    change(pod)
    message = refusal(cluster, pod)
    assert f"Pod Security baseline ({control})" in message, message


def test_a_privileged_debug_container_is_refused_on_a_running_pod(cluster):
    """`kubectl debug` adds an ephemeral container to a stored pod through the pods/ephemeralcontainers subresource.
    The team's role may not; an identity that may (here the admin) is still held to the namespace's policy, which
    matches the subresource too."""
    tenant = dict(as_user=f"mallory@{TEAM}", as_groups=(GROUP, "system:authenticated"))
    pod = on_the_pool(good_pod())
    cluster.kubectl("create", "-f", "-", stdin=yaml.safe_dump(pod))
    try:
        stored = json.loads(cluster.kubectl("get", "pod", pod["metadata"]["name"], "-n", TEAM, "-o", "json",
                                            **tenant).stdout)
        privileged_ephemeral_container(stored)
        uri = f"/api/v1/namespaces/{TEAM}/pods/{pod['metadata']['name']}/ephemeralcontainers?dryRun=All"
        done = cluster.kubectl("replace", "--raw", uri, "-f", "-", stdin=json.dumps(stored), check=False, **tenant)
        assert done.returncode != 0 and "cannot update resource \"pods/ephemeralcontainers\"" in done.stderr
        done = cluster.kubectl("replace", "--raw", uri, "-f", "-", stdin=json.dumps(stored), check=False)
        assert done.returncode != 0 and "Pod Security baseline (privileged)" in done.stderr, done.stderr
        # The same container unprivileged passes: the refusal is the policy's.
        stored["spec"]["ephemeralContainers"][0]["securityContext"] = {"seccompProfile": {"type": "RuntimeDefault"}}
        done = cluster.kubectl("replace", "--raw", uri, "-f", "-", stdin=json.dumps(stored), check=False)
        assert done.returncode == 0, done.stderr
    finally:
        cluster.kubectl("delete", "pod", pod["metadata"]["name"], "-n", TEAM, "--wait=false")
