"""Tenancy as a hostile tenant meets it on a real API server (tests/support/realcluster.py).

aws-prod's objects are applied to one cluster (its A100 pool switched to a mixed MIG layout, so the team quotas cap
MIG slices as well as whole GPUs), with the CRDs of the job kinds Kueue integrates. Then, acting as a team's group
where the RBAC allows it, every case sends one compliant object and copies of it with one thing changed, and the
real admission chain answers: the GPU-pool ValidatingAdmissionPolicy, the priority-ceiling policy and quota, the GPU
and MIG ResourceQuotas, Pod Security and RBAC. Creates are server-side dry runs (every admission step runs, nothing
is stored) unless a case needs stored objects (quota usage, removing a scheduling gate, a Job's pods).

No webhook server, scheduler or kubelet runs here: Kueue's webhooks are not registered (they would refuse every
request with no server behind them), so jobs are not suspended and nothing is scheduled.
"""
from __future__ import annotations

import copy
import json
import time

import pytest
import yaml

from components.config.labels import POOL_LABEL
from components.scheduling.priorities import CEILING_POLICY, WORKLOAD_PRIORITY_LABEL
from components.tenancy.network_guard import POLICY as TEAM_NETWORK_POLICY
from components.tenancy.pool_admission import POLICY as POOL_POLICY
from components.tenancy.queue_gate import POLICY as QUEUE_GATE

from support.cluster import GROUP, OTHER_TEAM, TEAM, Tenant, as_service_account, cluster, dry_run, refusal

pytestmark = pytest.mark.cluster

OWN_POOL, OTHER_POOL = "h100-train", "l4-notebooks"
PLATFORM_NAMESPACES = ("kube-system", "kueue-system", "gpu-operator", "monitoring")


@pytest.fixture(scope="module")
def tenant(cluster) -> Tenant:
    return Tenant(cluster, GROUP)


# --- pods: GPU pools, priority ceiling, GPU and MIG quota, Pod Security ------------------------------------------

CONTAINER = {"name": "main", "image": "registry.example/train:1"}
# Kueue's pod webhook puts this gate on every pod of a team namespace it must admit, before validation. No webhook
# runs here, so a pod the team creates carries it as the webhook would leave it: a team-created GPU pod without it is
# one Kueue skipped (the queue-gate policy), the case the gate-less pods below are.
KUEUE_GATE = [{"name": "kueue.x-k8s.io/admission"}]


def gpu_pod(namespace: str = TEAM, pool: str = OWN_POOL, resources: dict | None = None) -> dict:
    """A pod the team may create: whole GPUs on its own pool at its own priority, Pod Security baseline, gated by
    Kueue's webhook."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "namespace": namespace},
            "spec": {"nodeSelector": {POOL_LABEL: pool}, "priorityClassName": "gpu-normal",
                     "schedulingGates": copy.deepcopy(KUEUE_GATE),
                     "containers": [{**CONTAINER, "resources": {"limits": resources or {"nvidia.com/gpu": "8"}}}]}}


def changed(obj: dict, change) -> dict:
    out = copy.deepcopy(obj)
    change(out)
    return out


def spec_set(**fields):
    return lambda pod: pod["spec"].update(fields)


def container_set(**fields):
    return lambda pod: pod["spec"]["containers"][0].update(fields)


def limits(resources: dict):
    return container_set(resources={"limits": resources})


def cpu_only(**fields):
    """A pod asking for no GPU (nodeSelector dropped unless given, and no gate: Kueue's webhook gates only pods that
    ask for what its queues count): what the GPU-request rule never looked at."""
    return lambda pod: (spec_set(**{"nodeSelector": None, "schedulingGates": None, **fields})(pod),
                        limits({"cpu": "1"})(pod))


def ungated(change=lambda pod: None):
    """A GPU pod Kueue's webhook did not gate, as it skips a pod whose controller owner is a kind Kueue manages."""
    return lambda pod: (spec_set(schedulingGates=None)(pod), change(pod))


TOLERATE_ALL = [{"operator": "Exists"}]  # no key: tolerates every taint, the GPU taint included


def pool_affinity(operator: str, *pools: str) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": POOL_LABEL, "operator": operator, "values": list(pools)}]}]}}}


BOTH = (POOL_POLICY, QUEUE_GATE)

POD_CASES = {
    # name: (change to the compliant pod, what refuses it (or a tuple: any of them); "" = admitted)
    "compliant": (lambda pod: None, ""),
    "mig-slices-on-own-pool": (lambda pod: (spec_set(nodeSelector={POOL_LABEL: "a100-infer"})(pod),
                                            limits({"nvidia.com/mig-1g.10gb": "4"})(pod)), ""),
    "gated-until-kueue-admits-it": (spec_set(nodeSelector=None), ""),
    "cpu-pod-anywhere": (cpu_only(), ""),
    # Ungated GPU pods come from controllers (a Job's, once Kueue admitted the Job and set its pool); the team may
    # not create one even on its own pool, whoever it names as owner.
    "ungated-on-its-own-pool": (ungated(), QUEUE_GATE),
    "ungated-owned-by-a-job": (ungated(lambda pod: pod["metadata"].update(ownerReferences=[{
        "apiVersion": "batch/v1", "kind": "Job", "name": "finished", "controller": True,
        "uid": "00000000-0000-0000-0000-000000000001"}])), QUEUE_GATE),
    "ungated-mig-slices": (ungated(lambda pod: (spec_set(nodeSelector={POOL_LABEL: "a100-infer"})(pod),
                                                limits({"nvidia.com/mig-1g.10gb": "4"})(pod))), QUEUE_GATE),
    # An ungated GPU pod off its pools breaks both policies, and the API server names whichever it evaluated first
    # (its order is not fixed: CI saw both); the pool policy's own verdict on these shapes is in the CEL tests.
    "another-teams-pool": (ungated(spec_set(nodeSelector={POOL_LABEL: OTHER_POOL})), BOTH),
    "no-pool": (ungated(spec_set(nodeSelector=None)), BOTH),
    "gpu-in-an-init-container-off-pool": (lambda pod: (
        spec_set(nodeSelector={POOL_LABEL: OTHER_POOL}, schedulingGates=None, initContainers=[
            {**CONTAINER, "name": "warmup", "resources": {"limits": {"nvidia.com/gpu": "1"}}}])(pod),
        limits({"cpu": "1"})(pod)), BOTH),
    "efa-nics-without-gpus-on-another-teams-pool": (lambda pod: (
        spec_set(nodeSelector={POOL_LABEL: OTHER_POOL}, schedulingGates=None)(pod),
        limits({"vpc.amazonaws.com/efa": "1"})(pod)), POOL_POLICY),
    # No GPU request, but able to land on GPU nodes: by tolerating the GPU taint, or by naming a node.
    "cpu-pod-tolerating-everything-on-its-own-pool": (cpu_only(tolerations=TOLERATE_ALL,
                                                               nodeSelector={POOL_LABEL: OWN_POOL}), ""),
    "cpu-pod-tolerating-everything-held-to-its-pools-by-affinity": (cpu_only(
        tolerations=TOLERATE_ALL, affinity=pool_affinity("In", OWN_POOL, "a100-infer")), ""),
    "cpu-pod-tolerating-the-gpu-taint-but-not-noschedule": (cpu_only(tolerations=[
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]), ""),
    "cpu-pod-tolerating-everything-anywhere": (cpu_only(tolerations=TOLERATE_ALL), POOL_POLICY),
    "cpu-pod-tolerating-everything-on-another-teams-pool": (cpu_only(tolerations=TOLERATE_ALL,
                                                                     nodeSelector={POOL_LABEL: OTHER_POOL}),
                                                            POOL_POLICY),
    "cpu-pod-tolerating-the-gpu-taint-affinity-to-another-teams-pool": (cpu_only(
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}], affinity=pool_affinity("In", OTHER_POOL)),
        POOL_POLICY),
    "cpu-pod-tolerating-everything-affinity-not-in-its-own-pool": (cpu_only(
        tolerations=TOLERATE_ALL, affinity=pool_affinity("NotIn", OWN_POOL)), POOL_POLICY),
    "cpu-pod-naming-a-node": (cpu_only(nodeName="ip-10-0-0-1.ec2.internal"), POOL_POLICY),
    # NVIDIA device variables: the EKS AMI's toolkit would hand over the GPUs they name.
    "nvidia-visible-devices": (container_set(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]), POOL_POLICY),
    "nvidia-visible-devices-in-a-cpu-pod": (lambda pod: (cpu_only()(pod), container_set(
        env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])(pod)), POOL_POLICY),
    "env-from-a-config-map-without-prefix": (container_set(envFrom=[{"configMapRef": {"name": "settings"}}]),
                                             POOL_POLICY),
    "env-from-a-config-map-with-a-prefix": (container_set(envFrom=[{"prefix": "APP_",
                                                                    "configMapRef": {"name": "settings"}}]), ""),
    "env-from-in-a-cpu-pod": (lambda pod: (cpu_only()(pod), container_set(
        envFrom=[{"configMapRef": {"name": "settings"}}])(pod)), ""),
    "nvidia-driver-capabilities": (container_set(env=[{"name": "NVIDIA_DRIVER_CAPABILITIES",
                                                       "value": "compute,utility,video"}]), ""),
    # The ceiling policy answers before the priority-ceiling quota (ResourceQuota is the last admission step).
    "priority-above-the-team": (spec_set(priorityClassName="gpu-high"), CEILING_POLICY),
    "system-priority": (spec_set(priorityClassName="system-node-critical"), CEILING_POLICY),
    "more-gpus-than-the-quota": (limits({"nvidia.com/gpu": "17"}), "exceeded quota: gpu-quota"),
    "more-mig-slices-than-the-quota": (lambda pod: (spec_set(nodeSelector={POOL_LABEL: "a100-infer"})(pod),
                                                    limits({"nvidia.com/mig-1g.10gb": "33"})(pod)),
                                       "exceeded quota: gpu-quota"),
    "privileged": (container_set(securityContext={"privileged": True}), "violates PodSecurity"),
    "host-network": (spec_set(hostNetwork=True), "violates PodSecurity"),
    "host-path": (lambda pod: (spec_set(volumes=[{"name": "host", "hostPath": {"path": "/"}}])(pod),
                               container_set(volumeMounts=[{"name": "host", "mountPath": "/host"}])(pod)),
                  "violates PodSecurity"),
}


@pytest.mark.parametrize("case", POD_CASES)
def test_a_team_pod_is_admitted_only_within_its_pools_priority_quota_and_pod_security(case, tenant):
    change, refused_by = POD_CASES[case]
    pod = changed(gpu_pod(), change)
    pod["spec"] = {k: v for k, v in pod["spec"].items() if v is not None}
    message = refusal(dry_run(tenant, pod))
    if refused_by:
        expected = refused_by if isinstance(refused_by, tuple) else (refused_by,)
        assert any(by in message for by in expected), \
            f"{case}: expected a refusal by {' or '.join(expected)}, got: {message or 'admitted'}"
    else:
        assert not message, f"{case}: refused: {message}"


def test_quota_counts_stored_pods_so_the_team_cannot_creep_past_it(cluster, tenant):
    """Dry runs test one pod against the cap; this fills the MIG quota with stored pods and asks for one more."""
    ns, pool = TEAM, "a100-infer"
    hard = cluster.get("resourcequota", "gpu-quota", "-n", ns)["spec"]["hard"]["requests.nvidia.com/mig-3g.40gb"]
    first = gpu_pod(ns, pool, {"nvidia.com/mig-3g.40gb": hard})
    second = changed(first, lambda p: (p["metadata"].update(name="one-more"),
                                       limits({"nvidia.com/mig-3g.40gb": "1"})(p)))
    try:
        assert not refusal(tenant.kubectl("create", "-f", "-", stdin=yaml.safe_dump(first)))
        assert "exceeded quota: gpu-quota" in refusal(tenant.kubectl("create", "-f", "-", stdin=yaml.safe_dump(second)))
    finally:
        cluster.kubectl("delete", "pod", "trainer", "one-more", "-n", ns, "--ignore-not-found", "--wait=false")


def test_a_team_cannot_request_more_cpu_memory_or_pods_than_its_caps(cluster, tenant):
    """The compute quota bounds the team's CPU pods (what could starve the system pool): one pod above the cap is
    refused, and a pod that asks for nothing still counts through the LimitRange's default requests."""
    hard = cluster.get("resourcequota", "compute-quota", "-n", TEAM)["spec"]["hard"]
    above = {"cpu": str(int(hard["requests.cpu"]) + 1)}
    pod = changed(gpu_pod(), cpu_only())
    pod["spec"] = {k: v for k, v in pod["spec"].items() if v is not None}
    over = changed(pod, container_set(resources={"requests": above}))
    assert "exceeded quota: compute-quota" in refusal(dry_run(tenant, over))
    bare = changed(pod, container_set(resources={}))
    done = tenant.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=yaml.safe_dump(bare))
    assert not refusal(done)
    assert json.loads(done.stdout)["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m",
                                                                                         "memory": "1Gi"}


KUEUE_SA = ("kueue-system", "kueue-controller-manager")  # the chart's controller: what lifts the gate it admits


def test_only_kueue_lifts_the_gate_and_only_onto_the_teams_pool(cluster, tenant):
    """A gated pod is admitted so Kueue can place it. The team may not lift the gate itself, even with its own pool
    set (it would run without the queue's per-pool quota); Kueue may, once the pod names one of the team's pools."""
    pinned = changed(gpu_pod(), lambda p: p["metadata"].update(name="pinned"))
    unpinned = changed(gpu_pod(), lambda p: (p["metadata"].update(name="unpinned"), p["spec"].pop("nodeSelector")))
    ungate = ("--type=json", "-p", json.dumps([{"op": "remove", "path": "/spec/schedulingGates"}]))
    kueue = as_service_account(cluster, *KUEUE_SA)
    try:
        for pod in (pinned, unpinned):
            assert not refusal(tenant.kubectl("create", "-f", "-", stdin=yaml.safe_dump(pod)))
        assert QUEUE_GATE in refusal(tenant.kubectl("patch", "pod", "pinned", "-n", TEAM, *ungate))
        assert POOL_POLICY in refusal(kueue("patch", "pod", "unpinned", "-n", TEAM, *ungate))
        assert not refusal(kueue("patch", "pod", "pinned", "-n", TEAM, *ungate))
    finally:
        cluster.kubectl("delete", "pod", "pinned", "unpinned", "-n", TEAM, "--ignore-not-found", "--wait=false")


def test_a_team_service_account_is_a_team_identity(cluster, tenant):
    """`edit` lets a team make service accounts, run pods as them and impersonate them: one of the team's own
    namespace gets no more than the team, even granted `edit` by a RoleBinding."""
    assert tenant.can_i("impersonate", "serviceaccounts", TEAM)
    grant = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "runner-edit", "namespace": TEAM},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
             "subjects": [{"kind": "ServiceAccount", "name": "runner", "namespace": TEAM}]}
    runner = as_service_account(cluster, TEAM, "runner")
    try:
        cluster.apply([grant])
        ungated_pod = changed(gpu_pod(), ungated())
        assert QUEUE_GATE in refusal(runner("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(ungated_pod)))
        assert not refusal(runner("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(gpu_pod())))
    finally:
        cluster.kubectl("delete", "rolebinding", "runner-edit", "-n", TEAM, "--ignore-not-found")


def test_a_job_on_its_pools_gets_its_pods(cluster, tenant):
    """The Job controller creates a Kueue-admitted Job's pods ungated (Kueue queued the Job, set its pool and
    unsuspended it): the queue gate leaves them, as it does every pod of nccl-test's Jobs."""
    job = job_of({"restartPolicy": "Never", "nodeSelector": {POOL_LABEL: OWN_POOL}, "containers": [
        {**CONTAINER, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]})
    job["metadata"]["name"] = "on-pool"
    try:
        assert not refusal(tenant.kubectl("create", "-f", "-", stdin=yaml.safe_dump(job)))
        deadline = time.monotonic() + 60
        while not cluster.get("pods", "-n", TEAM, "-l", "job-name=on-pool")["items"]:
            events = cluster.kubectl("get", "events", "-n", TEAM, "--field-selector",
                                     "involvedObject.name=on-pool", "-o", "json").stdout
            assert time.monotonic() < deadline, f"the Job controller created no pod; events:\n{events}"
            time.sleep(2)
    finally:
        cluster.kubectl("delete", "job", "on-pool", "-n", TEAM, "--ignore-not-found", "--wait=false",
                        "--cascade=background")


def test_a_pending_pod_cannot_gain_a_toleration_onto_other_teams_gpu_nodes(cluster, tenant):
    """Tolerations are the one scheduling field an ungated pod may still gain (nothing binds it here, as on a full
    cluster): added, they are checked like a new pod's."""
    pods = {"unpinned": changed(gpu_pod(), cpu_only()), "pinned": changed(gpu_pod(), cpu_only(
        nodeSelector={POOL_LABEL: OWN_POOL}))}
    # Appended: the API server already gave every pod its not-ready and unreachable tolerations.
    add = json.dumps([{"op": "add", "path": "/spec/tolerations/-", "value": TOLERATE_ALL[0]}])
    try:
        for name, pod in pods.items():
            pod["metadata"]["name"] = name
            pod["spec"] = {k: v for k, v in pod["spec"].items() if v is not None}
            assert not refusal(tenant.kubectl("create", "-f", "-", stdin=yaml.safe_dump(pod)))
        assert POOL_POLICY in refusal(tenant.kubectl("patch", "pod", "unpinned", "-n", TEAM, "--type=json", "-p", add))
        assert not refusal(tenant.kubectl("patch", "pod", "pinned", "-n", TEAM, "--type=json", "-p", add))
    finally:
        cluster.kubectl("delete", "pod", *pods, "-n", TEAM, "--ignore-not-found", "--wait=false")


def test_an_ephemeral_container_cannot_bring_nvidia_device_variables(cluster, tenant):
    """`kubectl debug` adds a container to a running pod through the ephemeralcontainers subresource: its env is
    held like the pod's own containers'. `edit` does not grant the subresource; whoever is granted it (the admin
    here) is held in a team namespace all the same."""
    assert not tenant.can_i("patch", "pods/ephemeralcontainers", TEAM)
    pod = changed(gpu_pod(), lambda p: p["metadata"].update(name="debugged"))
    debug = {"name": "debug", "image": "registry.example/debug:1", "targetContainerName": "main"}
    try:
        assert not refusal(tenant.kubectl("create", "-f", "-", stdin=yaml.safe_dump(pod)))
        for env, refused in (([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}], True), ([], False)):
            patch = {"spec": {"ephemeralContainers": [{**debug, "env": env}]}}
            done = cluster.kubectl("patch", "pod", "debugged", "-n", TEAM, "--subresource=ephemeralcontainers",
                                   "--type=strategic", "--dry-run=server", "-p", json.dumps(patch), check=False)
            assert (POOL_POLICY in refusal(done)) is refused, refusal(done) or "admitted"
            assert refused or not refusal(done), refusal(done)
    finally:
        cluster.kubectl("delete", "pod", "debugged", "-n", TEAM, "--ignore-not-found", "--wait=false")


def test_a_job_off_its_pools_is_stored_but_its_pods_are_refused(cluster, tenant):
    """The pool policy matches pods, wherever they come from: the Job controller's pods are refused too."""
    job = job_of({"restartPolicy": "Never", "containers": [
        {**CONTAINER, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]})
    job["metadata"]["name"] = "off-pool"
    try:
        assert not refusal(tenant.kubectl("create", "-f", "-", stdin=yaml.safe_dump(job)))
        deadline, events = time.monotonic() + 60, ""
        while POOL_POLICY not in events:
            assert time.monotonic() < deadline, f"no refused pod creation for the Job; events:\n{events}"
            time.sleep(2)
            events = cluster.kubectl("get", "events", "-n", TEAM, "--field-selector",
                                     "involvedObject.name=off-pool,reason=FailedCreate", "-o", "json").stdout
        assert not cluster.get("pods", "-n", TEAM, "-l", "job-name=off-pool")["items"]
    finally:
        cluster.kubectl("delete", "job", "off-pool", "-n", TEAM, "--ignore-not-found", "--wait=false")


# --- workload kinds: the priority ceiling on pod templates and Kueue priority labels -----------------------------

def template(priority: str = "gpu-normal") -> dict:
    return {"spec": {"priorityClassName": priority, "restartPolicy": "Never", "containers": [CONTAINER]}}


def job_of(pod_spec: dict) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": TEAM},
            "spec": {"template": {"spec": pod_spec}}}


def workloads() -> dict[str, dict]:
    """A compliant object of each kind, every pod template at the team's own priority."""
    pod = template()["spec"]
    return {
        "Job": job_of(pod),
        "JobSet": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                   "metadata": {"name": "train", "namespace": TEAM},
                   "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1,
                                                "template": {"spec": {"template": {"spec": pod}}}}]}},
        "LeaderWorkerSet": {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                            "metadata": {"name": "serve", "namespace": TEAM},
                            "spec": {"leaderWorkerTemplate": {"size": 2, "leaderTemplate": {"spec": pod},
                                                              "workerTemplate": {"spec": pod}}}},
        "RayCluster": {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "ray", "namespace": TEAM},
                       "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": pod}},
                                "workerGroupSpecs": [{"groupName": "gpu", "replicas": 1, "minReplicas": 0,
                                                      "maxReplicas": 1, "rayStartParams": {},
                                                      "template": {"spec": pod}}]}},
        "TrainJob": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                     "metadata": {"name": "train", "namespace": TEAM},
                     "spec": {"runtimeRef": {"name": "torch-distributed"}}},
        "AppWrapper": {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                       "metadata": {"name": "wrapped", "namespace": TEAM},
                       "spec": {"components": [{"template": {**job_of(pod), "metadata": {"name": "train"}}}]}},
    }


def at(path: str, value):
    """A change setting one field: `path` is dotted, list items by index."""
    def change(obj):
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        node = obj
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
    return change


ABOVE = "gpu-high"  # the team is `normal`
WORKLOAD_CASES = {
    **{f"{kind}-compliant": (kind, lambda obj: None) for kind in
       ("Job", "JobSet", "LeaderWorkerSet", "RayCluster", "TrainJob", "AppWrapper")},
    **{f"{kind}-kueue-priority-label-above-the-team": (kind, at("metadata.labels", {WORKLOAD_PRIORITY_LABEL: ABOVE}))
       for kind in ("Job", "JobSet", "LeaderWorkerSet", "RayCluster", "TrainJob", "AppWrapper")},
    "Job-template": ("Job", at("spec.template.spec.priorityClassName", ABOVE)),
    "JobSet-template": ("JobSet", at("spec.replicatedJobs.0.template.spec.template.spec.priorityClassName", ABOVE)),
    "LeaderWorkerSet-leader": ("LeaderWorkerSet", at("spec.leaderWorkerTemplate.leaderTemplate.spec.priorityClassName",
                                                     ABOVE)),
    "LeaderWorkerSet-worker": ("LeaderWorkerSet", at("spec.leaderWorkerTemplate.workerTemplate.spec.priorityClassName",
                                                     ABOVE)),
    "RayCluster-head": ("RayCluster", at("spec.headGroupSpec.template.spec.priorityClassName", ABOVE)),
    "RayCluster-worker": ("RayCluster", at("spec.workerGroupSpecs.0.template.spec.priorityClassName", ABOVE)),
    "AppWrapper-wrapped-job-template": ("AppWrapper", at(
        "spec.components.0.template.spec.template.spec.priorityClassName", ABOVE)),
    "AppWrapper-wrapped-pod": ("AppWrapper", at("spec.components.0.template", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {**template(ABOVE)["spec"]}})),
    "AppWrapper-a-kind-the-policy-cannot-read": ("AppWrapper", at("spec.components.0.template", {
        "apiVersion": "example.com/v1", "kind": "Trainer", "metadata": {"name": "t"}, "spec": {}})),
}


@pytest.mark.parametrize("case", WORKLOAD_CASES)
def test_workloads_are_held_to_the_team_priority_ceiling(case, tenant, cluster):
    kind, change = WORKLOAD_CASES[case]
    obj = changed(workloads()[kind], change)
    # The team creates every kind itself: `edit` covers Jobs, the planned kueue-batch-user binding the others.
    # No planned role grants AppWrappers: the admin sends them, held by the same policy in a team namespace.
    message = refusal(dry_run(cluster if kind == "AppWrapper" else tenant, obj))
    if case.endswith("-compliant"):
        assert not message, f"{case}: refused: {message}"
    else:
        assert CEILING_POLICY in message, f"{case}: expected the ceiling policy to refuse, got: {message or 'admitted'}"


def test_a_trainjob_runtime_patch_cannot_carry_a_priority_class(tenant):
    """TrainJob's only pod templates are its runtimePatches', whose schema has no priorityClassName: the server
    refuses the field (kubectl's strict field validation), so a TrainJob's priority is its Kueue label (held above)
    or its runtime's, which teams cannot write (DENIED_IN_OWN)."""
    patch = {"manager": "mallory", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{
        "name": "node", "template": {"spec": {"template": {"spec": {"priorityClassName": ABOVE}}}}}]}}}}
    obj = changed(workloads()["TrainJob"], at("spec.runtimePatches", [patch]))
    assert 'unknown field "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec' \
           '.template.spec.priorityClassName"' in refusal(dry_run(tenant, obj))


# --- RBAC: a team reaches only its own namespace, and cannot widen its own rights --------------------------------

OWN_RIGHTS = [("create", "pods"), ("create", "jobs.batch"), ("get", "secrets"), ("delete", "pods")]
# TrainingRuntimes are namespaced and carry pod templates the ceiling policy does not read: teams must not write them.
DENIED_IN_OWN = [("create", "rolebindings"), ("update", "resourcequotas"), ("delete", "resourcequotas"),
                 ("delete", "limitranges"), ("patch", "namespaces"), ("create", "trainingruntimes.trainer.kubeflow.org"),
                 # A Binding places a pod on a node past the scheduler and its taints, as spec.nodeName does.
                 ("create", "pods/binding")]
DENIED_ELSEWHERE = [("get", "pods"), ("list", "secrets"), ("create", "pods"), ("create", "rolebindings"),
                    ("delete", "networkpolicies")]
DENIED_CLUSTER = [("create", "validatingadmissionpolicies"), ("delete", "validatingadmissionpolicybindings"),
                  ("create", "priorityclasses"), ("create", "clusterrolebindings"), ("update", "namespaces")]


@pytest.mark.parametrize("verb, resource", OWN_RIGHTS)
def test_a_team_works_in_its_own_namespace(verb, resource, tenant):
    assert tenant.can_i(verb, resource, TEAM)


@pytest.mark.parametrize("verb, resource", DENIED_IN_OWN)
def test_a_team_cannot_loosen_its_own_namespace(verb, resource, tenant):
    assert not tenant.can_i(verb, resource, TEAM)


@pytest.mark.parametrize("namespace", [OTHER_TEAM, *PLATFORM_NAMESPACES])
@pytest.mark.parametrize("verb, resource", DENIED_ELSEWHERE)
def test_a_team_cannot_reach_another_namespace(verb, resource, namespace, tenant):
    assert not tenant.can_i(verb, resource, namespace)


@pytest.mark.parametrize("verb, resource", DENIED_CLUSTER)
def test_a_team_cannot_change_cluster_wide_guards(verb, resource, tenant):
    assert not tenant.can_i(verb, resource, TEAM)


@pytest.mark.parametrize("namespace", [OTHER_TEAM, "monitoring"])
def test_real_attempts_on_another_namespace_are_forbidden(namespace, tenant):
    """Not only what can-i answers: the requests themselves, reading secrets (the Grafana admin's lives in
    monitoring) and creating a pod and a binding there."""
    assert "Forbidden" in refusal(tenant.kubectl("get", "secrets", "-n", namespace))
    assert "Forbidden" in refusal(dry_run(tenant, gpu_pod(namespace)))
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "let-me-in", "namespace": namespace},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": GROUP}]}
    assert "Forbidden" in refusal(dry_run(tenant, binding))


def test_a_team_cannot_bind_itself_more_than_it_has(tenant):
    """RBAC's escalation check: even a binding in the team's own namespace to cluster-admin is refused."""
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "root", "namespace": TEAM},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": GROUP}]}
    assert "Forbidden" in refusal(dry_run(tenant, binding))


# --- NetworkPolicies: `edit` may write them, the team-network guard refuses the team ------------------------------

METADATA_EGRESS = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                   "metadata": {"name": "allow-metadata", "namespace": TEAM},
                   "spec": {"podSelector": {}, "policyTypes": ["Egress"],
                            "egress": [{"to": [{"ipBlock": {"cidr": "169.254.169.254/32"}}]}]}}


def test_a_team_cannot_rewrite_its_own_network_policies(tenant):
    """RBAC lets `edit` write NetworkPolicies; the team-network guard refuses the team opening egress to the cloud
    metadata address or dropping its default-deny."""
    assert tenant.can_i("create", "networkpolicies", TEAM)  # what the guard is for
    assert TEAM_NETWORK_POLICY in refusal(dry_run(tenant, METADATA_EGRESS))
    assert TEAM_NETWORK_POLICY in refusal(tenant.kubectl("delete", "networkpolicy", "default-deny", "-n", TEAM,
                                                         "--dry-run=server"))


def test_the_platform_still_manages_team_network_policies(cluster):
    assert not refusal(dry_run(cluster, METADATA_EGRESS))
