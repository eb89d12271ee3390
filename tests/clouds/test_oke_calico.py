"""OKE NetworkPolicy: Calico in policy-only mode from the pinned tigera-operator chart, rendered with the plan's
values and held to ../shared/upstream/calico/policy-only-notes.md and the v3.32.1 Installation CRD; then GPU016 on
oci-prod without any exemption, and one changed field per failing case."""
from __future__ import annotations

import jsonschema
import pytest

from components.network import calico
from components.pins import PINS
from gpu_platform.engine.plan import read_stack_config

from policy_fixtures import ids, run
from support.helm import Helm, chart_package, extract_helm
from support.paths import ROOT, strict_schema, upstream
from support.plans import shared_plan
from support.policy import base_plan, only_rule_fails

RELEASE = "kubernetes:helm.sh/v3:Release"
OKE = "oci:ContainerEngine/cluster:Cluster"


@pytest.fixture(scope="module")
def helm(tmp_path_factory) -> Helm:
    home = tmp_path_factory.mktemp("helm")
    return Helm(extract_helm(home), home)


@pytest.fixture(scope="module")
def planned_releases() -> dict[str, dict]:
    plan = shared_plan("oci-prod")
    return {r.inputs["chart"]: r.inputs for r in plan.resources if r.type == RELEASE}


@pytest.fixture(scope="module")
def installation(helm, planned_releases) -> dict:
    inputs = planned_releases[calico.OPERATOR_CHART]
    docs = helm.template(chart_package(inputs["chart"], inputs["version"]), inputs["name"], inputs["namespace"],
                         inputs["values"])
    found = [d for d in docs if d["kind"] == "Installation"]
    assert len(found) == 1 and found[0]["metadata"]["name"] == "default"  # the one the operator reconciles
    return found[0]


def test_both_charts_are_pinned_in_the_operators_namespace(planned_releases):
    for chart in (calico.CRD_CHART, calico.OPERATOR_CHART):
        inputs = planned_releases[chart]
        assert inputs["version"] == "v3.32.1" and inputs["namespace"] == "tigera-operator"
        assert inputs["repositoryOpts"]["repo"] == "https://docs.tigera.io/calico/charts"
        assert chart_package(chart, inputs["version"]).exists()


def test_the_installation_is_calico_cni_on_host_local_ipam_without_bgp_or_pools(installation):
    """The notes' policy-only knobs: Calico's CNI (the only type whose interfaces felix polices on OKE), IPAM on
    the node podCIDR (host-local, as in calico-policy-only.yaml), no BGP and no IP pools (flannel routes)."""
    notes = upstream("calico/policy-only-notes.md").read_text()
    for field in ("spec.cni.type", "spec.cni.ipam.type", "spec.calicoNetwork.bgp", "spec.calicoNetwork.ipPools"):
        assert f"`{field}`" in notes, field
    spec = installation["spec"]
    assert spec["cni"] == {"type": "Calico", "ipam": {"type": "HostLocal"}}
    assert spec["calicoNetwork"] == {"bgp": "Disabled", "ipPools": []}
    assert spec["kubernetesProvider"] == ""  # the chart's default: auto-detect, and there is no OKE value


def test_the_installation_validates_against_the_v3_32_1_crd(helm, installation):
    package = chart_package(calico.CRD_CHART, PINS[calico.CRD_CHART].version)
    crds = [d for d in helm.template(package, "calico-crds", calico.NAMESPACE, {})
            if d["kind"] == "CustomResourceDefinition" and d["metadata"]["name"] == "installations.operator.tigera.io"]
    version, = [v for v in crds[0]["spec"]["versions"] if v["name"] == "v1"]
    schema = strict_schema(version["schema"]["openAPIV3Schema"])
    schema["properties"].pop("status", None)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in jsonschema.Draft7Validator(schema).iter_errors(installation)]
    assert errors == []
    cni = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["cni"]["properties"]
    assert "Calico" in cni["type"]["enum"] and "HostLocal" in cni["ipam"]["properties"]["type"]["enum"]


def test_the_installation_schema_check_can_fail(helm, installation):
    bad = {**installation, "spec": {**installation["spec"], "cni": {"type": "Flannel"}}}
    package = chart_package(calico.CRD_CHART, PINS[calico.CRD_CHART].version)
    crd, = [d for d in helm.template(package, "calico-crds", calico.NAMESPACE, {})
            if d["kind"] == "CustomResourceDefinition" and d["metadata"]["name"] == "installations.operator.tigera.io"]
    schema = strict_schema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert list(jsonschema.Draft7Validator(schema).iter_errors(bad))


# --- GPU016 -----------------------------------------------------------------------------------------------------

def operator_values(plan: dict) -> dict:
    release, = [r for r in plan["resources"] if r["type"] == RELEASE and r["inputs"]["chart"] == calico.OPERATOR_CHART]
    return release["inputs"]["values"]["installation"]


def without_calico(plan):
    plan["resources"] = [r for r in plan["resources"]
                         if not (r["type"] == RELEASE and r["inputs"]["chart"] == calico.OPERATOR_CHART)]


def installation_disabled(plan):
    operator_values(plan)["enabled"] = False


def cni_left_to_the_operator(plan):
    del operator_values(plan)["cni"]


def cni_of_another_cloud(plan):
    operator_values(plan)["cni"]["type"] = "GKE"


def vcn_native_cluster(plan):
    cluster, = [r for r in plan["resources"] if r["type"] == OKE]
    cluster["inputs"]["clusterPodNetworkOptions"] = [{"cniType": "OCI_VCN_IP_NATIVE"}]


FAILING = [
    (without_calico, "no tigera-operator release"),
    (installation_disabled, "does not set installation.enabled: true"),
    (cni_left_to_the_operator, "installation.cni.type (unset), not Calico"),
    (cni_of_another_cloud, "installation.cni.type GKE, not Calico"),
    (vcn_native_cluster, "fits only FLANNEL_OVERLAY clusters"),
]


def test_oci_prod_passes_gpu016_without_an_exemption():
    assert "gpu-platform:policy" not in read_stack_config(ROOT / "stacks" / "Pulumi.oci-prod.yaml")
    plan = base_plan("oci-prod")
    report = run(plan, "GPU016", environment=None)
    assert ids(report) == [] and not report.findings


@pytest.mark.parametrize("change, expected", FAILING, ids=[c[0].__name__ for c in FAILING])
def test_one_changed_field_fails_gpu016_on_oci_prod(change, expected):
    plan = base_plan("oci-prod")
    change(plan)
    only_rule_fails(plan, "GPU016", expected)
