"""Every Kubernetes object of every example stack, applied to a real API server (tests/support/realcluster.py).

The offline tests validate planned and rendered objects against JSON schemas; this sends them to kube-apiserver
itself, server-side with strict field validation, so what only the server checks is checked too: CEL in CRD schemas
and in ValidatingAdmissionPolicies (compiled and type-checked at creation), defaulting, immutable and
cross-field rules, names, RBAC escalation checks on the roles the charts bind. One fresh cluster per stack.
"""
from __future__ import annotations

import pytest

from gpu_platform.engine import plan_stack

from support.cluster_manifests import SUMMARY, apply_batch, apply_stack, manifests, planned_object
from support.helm import Helm, extract_helm
from support.paths import STACKS

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def helm(tmp_path_factory) -> Helm:
    home = tmp_path_factory.mktemp("helm")
    return Helm(extract_helm(home), home)


@pytest.mark.parametrize("stack", STACKS)
def test_every_object_the_stack_creates_is_accepted_by_a_real_api_server(stack, control_plane, helm):
    stack_objects = manifests(plan_stack(stack), helm)
    # No controllers: this is about what the API server accepts, and no Deployment needs its pods made here.
    cluster = control_plane.cluster(f"apply-{stack}", controllers=False)
    try:
        applied, refused = apply_stack(cluster, stack_objects)
    finally:
        cluster.close()
    assert not refused, f"{stack}: the API server refused:\n" + "\n".join(refused)
    assert applied == stack_objects.count()
    SUMMARY.append(f"cluster apply {stack}: {applied} objects ({len(stack_objects.crds)} CRDs, "
                   f"{len(stack_objects.namespaces)} namespaces, {len(stack_objects.webhooks)} webhooks)")


def test_the_server_refuses_what_the_schema_checks_let_through(control_plane):
    """So a clean apply means something: strict field validation refuses a misspelled field, and the server compiles
    an admission policy's CEL at creation, refusing an expression that names a variable the policy does not have."""
    plan = plan_stack("aws-prod")
    quota = next(r.inputs for r in plan.resources if r.type == "kubernetes:core/v1:ResourceQuota")
    policy = next(r.inputs for r in plan.resources
                  if r.type == "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy")
    misspelled = planned_object(quota)
    misspelled["spec"]["hardd"] = misspelled["spec"].pop("hard")
    miscompiled = planned_object(policy)
    rule = miscompiled["spec"]["validations"][0]
    rule["expression"] = rule["expression"].replace("variables.", "variables.no_such_", 1)
    cluster = control_plane.cluster("apply-refusals", controllers=False)
    try:
        cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": quota["metadata"]["namespace"]}}])
        applied, refused = apply_batch(cluster, [(misspelled, ""), (miscompiled, "")])
    finally:
        cluster.close()
    assert applied == 0
    text = "\n".join(refused)
    assert ".spec.hardd: field not declared in schema" in text, text
    assert "no_such_" in text and "compilation failed" in text, text
