"""What `pulumi up` would send to a stack's Kubernetes API server, read from the offline plan: every planned
`kubernetes:*` object as its wire inputs, and every planned Helm release rendered by a real Helm against its pinned
chart package (tests/support/helm.py), with the CRDs those charts install. Grouped in the order a cluster can take them:
CRDs, then namespaces, then the objects that live in them, then admission webhooks (applied last, because no
webhook server ever runs on the test cluster: a webhook registered earlier would refuse everything after it).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from gpu_platform.engine import Plan

from support.gke_network_crds import SCHEMAS as GKE_NETWORK_SCHEMAS
from support.helm import CHARTS, Helm
from support.stacks import whole

RELEASE = "kubernetes:helm.sh/v3:Release"
WEBHOOKS = {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
# The plan masks secret values; the API server still needs a well-formed object.
MASKED = "[secret]"


@dataclass
class Manifests:
    """One stack's objects by apply phase, each with the namespace Helm installs it in when the chart leaves
    `metadata.namespace` out (its release's; planned objects carry their own)."""

    crds: list[dict] = field(default_factory=list)
    namespaces: list[dict] = field(default_factory=list)
    objects: list[tuple[dict, str]] = field(default_factory=list)  # (object, default namespace)
    webhooks: list[tuple[dict, str]] = field(default_factory=list)

    def count(self) -> int:
        return len(self.crds) + len(self.namespaces) + len(self.objects) + len(self.webhooks)


def chart_package(chart: str, version: str) -> Path:
    """A release's pinned package; chart files drop the `v` some releases pin (`network-operator-25.10.0.tgz`)."""
    name = chart.rsplit("/", 1)[-1]
    exact = CHARTS / f"{name}-{version}.tgz"
    return exact if exact.exists() else CHARTS / f"{name}-{version.removeprefix('v')}.tgz"


def planned_object(inputs: dict) -> dict:
    """A planned object as the provider sends it: whole numbers as integers, masked secret data as a placeholder."""
    obj = whole(json.loads(json.dumps(inputs)))
    for key in ("data", "stringData"):
        if obj.get(key) == MASKED:
            obj[key] = {"masked-by-the-plan": "eA==" if key == "data" else "x"}
    return obj


def structural(schema: dict) -> dict:
    """A CRD (structural, OpenAPI v3) schema from one of tests/support/gke_network_crds.py's JSON schemas: enums and
    consts
    are strings, an object without properties keeps what it is given, and unknown fields are left to the server's
    strict field validation instead of `additionalProperties: false` (which a structural schema may not set)."""
    out = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {k: structural(v) for k, v in value.items()}
        elif key == "items":
            out[key] = structural(value)
        elif key == "const":
            out["enum"] = [value]
        elif key != "additionalProperties":
            out[key] = value
    if "enum" in out:
        out.setdefault("type", "string")
    if out.get("type") == "object" and "properties" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def gke_network_crds() -> list[dict]:
    """GKE serves `networking.gke.io` Network and GKENetworkParamSet itself on multi-networking clusters; here they
    become cluster-scoped CRDs with the schemas tests/support/gke_network_crds.py keeps."""
    crds = []
    for (api, kind), schema in GKE_NETWORK_SCHEMAS.items():
        group, version = api.split("/")
        plural = kind.lower() + "s"
        crds.append({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Cluster",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                     "versions": [{"name": version, "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "properties": {"spec": structural(schema["properties"]["spec"])}}}}]},
        })
    return crds


def is_helm_test(doc: dict) -> bool:
    """`helm test` hooks: `helm template` prints them, an install never creates them."""
    hook = (doc.get("metadata", {}).get("annotations") or {}).get("helm.sh/hook", "")
    return "test" in {h.strip() for h in hook.split(",")}


def manifests(plan: Plan, helm: Helm) -> Manifests:
    """Everything the stack creates in its cluster, deduplicated by (apiVersion, kind, namespace, name)."""
    out, seen = Manifests(), set()

    def add(doc: dict, namespace: str) -> None:
        meta = doc.setdefault("metadata", {})
        key = (doc["apiVersion"], doc["kind"], meta.get("namespace") or namespace, meta["name"])
        if key in seen:
            return
        seen.add(key)
        if doc["kind"] == "CustomResourceDefinition":
            out.crds.append(doc)
        elif doc["kind"] == "Namespace":
            out.namespaces.append(doc)
        elif doc["kind"] in WEBHOOKS:
            out.webhooks.append((doc, namespace))
        else:
            out.objects.append((doc, namespace))

    planned = [r for r in plan.resources if r.type.startswith("kubernetes:") and r.type != RELEASE]
    for resource in planned:
        add(planned_object(resource.inputs), "default")
    if any(r.inputs.get("apiVersion") in {f"{g}/{v}" for g, v in
                                          (a.split("/") for a, _ in GKE_NETWORK_SCHEMAS)} for r in planned):
        for crd in gke_network_crds():
            add(crd, "")
    for release in plan.of_type(RELEASE):
        inputs = release.inputs
        namespace = inputs.get("namespace") or "default"
        package = chart_package(inputs["chart"], inputs["version"])
        if inputs.get("createNamespace"):
            add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, "")
        docs = [] if inputs.get("skipCrds") else helm.crds(package)
        docs += helm.template(package, inputs.get("name") or release.name, namespace, inputs.get("values") or {})
        for doc in docs:
            if not is_helm_test(doc):
                add(doc, namespace)
    return out


# One line per stack applied in this session, printed in pytest's terminal summary (conftest.py).
SUMMARY: list[str] = []


def apply_batch(cluster, items: list[tuple[dict, str]]) -> tuple[int, list[str]]:
    """Server-side apply (object, default namespace) pairs, one kubectl call per default namespace: how many objects
    the server took, and its refusals (kubectl applies the rest of a batch after one is refused)."""
    batches: dict[str | None, list[dict]] = {}
    for obj, namespace in items:
        batches.setdefault(None if obj["metadata"].get("namespace") else namespace, []).append(obj)
    applied, refused = 0, []
    for namespace, objs in batches.items():
        done = cluster.apply(objs, namespace=namespace, check=False)
        applied += sum(line.endswith("serverside-applied") for line in done.stdout.splitlines())
        if done.returncode:
            refused += [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("Warning:")]
    return applied, refused


def apply_stack(cluster, stack: Manifests, webhooks: bool = True) -> tuple[int, list[str]]:
    """Apply a stack phase by phase, as the provider's dependency order would: CRDs (then wait until the server
    serves them), namespaces, everything else, and admission webhooks last unless left out."""
    applied, refused = apply_batch(cluster, [(crd, "") for crd in stack.crds])
    if stack.crds:
        cluster.kubectl("wait", "--for", "condition=Established", "--timeout", "120s", "crd", "--all")
    for phase in ([(ns, "") for ns in stack.namespaces], stack.objects, stack.webhooks if webhooks else []):
        done, failed = apply_batch(cluster, phase)
        applied, refused = applied + done, refused + failed
    return applied, refused
