"""The KAI queue gate (tenancy/queue_gate.py, scheduler_rules) as a hostile tenant meets it on a real API server.

aws-prod planned with `scheduler.kind: kai` is applied to one cluster with KAI's PodGroup CRD (../shared/upstream),
no KAI controller and no webhook: the ValidatingAdmissionPolicy alone decides, so each case is a server-side dry
run as a member of the team's group (or a controller's service account) and the refusal must name the gate.
"""
from __future__ import annotations

import copy

import pytest
import yaml

from components.config.labels import POOL_LABEL
from components.tenancy.queue_gate import POLICY as QUEUE_GATE
from gpu_platform.engine import plan_stack

from support.cluster import GROUP, OTHER_TEAM, TEAM, Tenant, as_service_account, dry_run, refusal
from support.cluster_manifests import apply_stack, manifests
from support.helm import Helm, extract_helm
from support.paths import upstream
from support.stacks import with_scheduler

pytestmark = pytest.mark.cluster

STACK = "aws-prod"
QUEUE = "kai.scheduler/queue"


@pytest.fixture(scope="module")
def stack():
    plan = plan_stack(STACK, config_overrides=with_scheduler(STACK, "kai"))
    return plan, TEAM, OTHER_TEAM


@pytest.fixture(scope="module")
def cluster(control_plane, tmp_path_factory, stack):
    plan, _, _ = stack
    home = tmp_path_factory.mktemp("helm")
    built = manifests(plan, Helm(extract_helm(home), home))
    names = {crd["metadata"]["name"] for crd in built.crds}
    podgroups = yaml.safe_load(upstream("kai-scheduler/crds/scheduling.run.ai_podgroups.yaml").read_text())
    if podgroups["metadata"]["name"] not in names:
        built.crds.append(podgroups)
    cluster = control_plane.cluster("kai-gate")
    _, refused = apply_stack(cluster, built, webhooks=False)
    assert not refused, "\n".join(refused)
    yield cluster
    cluster.close()


def pod(team: str, pool: str, resources: dict | None = None, **spec) -> dict:
    """A GPU pod placed by KAI in the team's queue."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "trainer", "namespace": team, "labels": {QUEUE: team}},
            "spec": {"schedulerName": "kai-scheduler", "nodeSelector": {POOL_LABEL: pool},
                     "priorityClassName": "gpu-low",
                     "containers": [{"name": "main", "image": "registry.example/train:1",
                                     "resources": {"limits": resources or {"nvidia.com/gpu": "1"}}}], **spec}}


def own_pool(plan, team: str) -> str:
    table = next(r.inputs["teamPools"] for r in plan.of_type("gpu-platform:tenancy:GpuPoolAdmission"))
    return table[team][0]


def test_a_gpu_pod_must_name_kai_and_its_own_queue(cluster, stack):
    plan, team, other = stack
    tenant, base = Tenant(cluster, GROUP), pod(team, own_pool(plan, team))
    assert not refusal(dry_run(tenant, base))
    cases = {
        "default scheduler": lambda p: p["spec"].pop("schedulerName"),
        "another scheduler": lambda p: p["spec"].update(schedulerName="default-scheduler"),
        "no queue label": lambda p: p["metadata"].pop("labels"),
        "another team's queue": lambda p: p["metadata"]["labels"].update({QUEUE: other}),
        "shared GPU without KAI": lambda p: (p["spec"].pop("schedulerName"), p["spec"]["containers"][0].update(
            resources={"limits": {"nvidia.com/gpu.shared": "1"}})),
        "init container MIG slice": lambda p: (p["spec"].pop("schedulerName"), p["spec"].update(initContainers=[{
            "name": "prep", "image": "registry.example/prep:1",
            "resources": {"limits": {"nvidia.com/mig-1g.5gb": "1"}}}])),
    }
    for case, change in cases.items():
        changed = copy.deepcopy(base)
        change(changed)
        assert QUEUE_GATE in refusal(dry_run(tenant, changed)), case


def test_controllers_are_held_to_it_too_and_cpu_pods_are_not(cluster, stack):
    """The Job controller writes a Job's pods from the team's template: a template without KAI is refused as the
    controller creates its pod. A pod asking for no GPU is nobody's concern here."""
    plan, team, _ = stack
    job_controller = as_service_account(cluster, "kube-system", "job-controller")
    unplaced = pod(team, own_pool(plan, team))
    unplaced["spec"].pop("schedulerName")
    done = job_controller("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(unplaced))
    assert QUEUE_GATE in refusal(done)
    cpu = pod(team, own_pool(plan, team), {"cpu": "1"})
    cpu["spec"].pop("schedulerName"), cpu["metadata"].pop("labels"), cpu["spec"].pop("nodeSelector")
    cpu["spec"].pop("priorityClassName")
    assert not refusal(dry_run(Tenant(cluster, GROUP), cpu))


def test_a_top_owner_or_podgroup_cannot_name_another_teams_queue(cluster, stack):
    """KAI's pod-grouper takes the queue from the pod's top owner before the pod, and a hand-made PodGroup's from its
    spec: neither may name another team's queue."""
    plan, team, other = stack
    tenant = Tenant(cluster, GROUP)
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "train", "namespace": team, "labels": {QUEUE: other}},
           "spec": {"template": {"metadata": {"labels": {QUEUE: team}},
                                 "spec": {**pod(team, own_pool(plan, team))["spec"], "restartPolicy": "Never"}}}}
    assert QUEUE_GATE in refusal(dry_run(tenant, job))
    job["metadata"]["labels"][QUEUE] = team
    assert not refusal(dry_run(tenant, job))
    group = {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
             "metadata": {"name": "gang", "namespace": team}, "spec": {"minMember": 2, "queue": other}}
    assert QUEUE_GATE in refusal(dry_run(cluster, group))
    group["spec"]["queue"] = team
    assert not refusal(dry_run(cluster, group))
