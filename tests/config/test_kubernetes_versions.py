"""Kubernetes versions: one creatable default, a per-cloud table validation enforces, and a Cluster Autoscaler of the
cluster's own minor."""
from __future__ import annotations

import copy
import tarfile

import pytest
import yaml

from components.provisioning.cluster_autoscaler.values import CHART_VERSION, IMAGE_TAGS, image_tag, shared_values
from components.clouds import PROFILES
from components.clouds.facts import DEFAULT_KUBERNETES_VERSION
from components.config import ConfigError, validate
from gpu_platform.engine import plan_stack

from support.paths import ROOT, STACKS, upstream

RELEASE = "kubernetes:helm.sh/v3:Release"
# Upstream end of life (kubernetes.io/releases) of the minors the tables may name; 1.33 ended 2026-06-28.
UPSTREAM_EOL = {"1.32": "2026-02-28", "1.33": "2026-06-28", "1.34": "2026-10-27", "1.35": "2027-02-28",
                "1.36": "2027-06-28"}


def _problems(raw) -> dict[str, str]:
    with pytest.raises(ConfigError) as err:
        validate(raw)
    return {p.path: p.message for p in err.value.problems}


def test_default_is_creatable_on_every_cloud_and_not_past_upstream_eol():
    for prof in PROFILES.values():
        assert DEFAULT_KUBERNETES_VERSION in prof.kubernetes_versions, prof.name
    assert UPSTREAM_EOL[DEFAULT_KUBERNETES_VERSION] > "2026-12-03"


def test_every_cloud_has_a_version_table_of_minors():
    for prof in PROFILES.values():
        assert prof.kubernetes_versions, prof.name
        for minor, api_version in prof.kubernetes_versions.items():
            assert minor.startswith("1.") and api_version.lstrip("v").startswith(minor), (prof.name, minor)


def test_version_defaults_to_the_creatable_one(raw):
    raw["cluster"].pop("kubernetesVersion", None)
    assert validate(raw).cluster.kubernetes_version == DEFAULT_KUBERNETES_VERSION == "1.35"


# A minor newer than the table is warned about instead (tests/clouds/test_cloud_acceptance.py): the table goes stale.
@pytest.mark.parametrize("cloud, version", [("aws", "1.31"), ("azure", "1.33"), ("gcp", "1.34"), ("oci", "1.33")])
def test_a_version_the_cloud_does_not_create_is_refused_with_the_allowed_list(raw, cloud, version):
    prof = PROFILES[cloud]
    raw["cloud"] = cloud
    raw["cluster"]["kubernetesVersion"] = version
    found = _problems(raw)
    assert found["cluster.kubernetesVersion"] == (
        f"{version!r} is not a version {prof.service} offers here; allowed: {', '.join(prof.kubernetes_versions)} "
        f"(CloudProfile.kubernetes_versions, as of 2026-12-03)")


def test_eks_extended_support_versions_stay_creatable(raw):
    raw["cluster"]["kubernetesVersion"] = "1.33"
    assert validate(raw).cluster.kubernetes_version == "1.33"


def test_an_adopted_cluster_keeps_its_own_version(raw):
    raw["cluster"].update(kubernetesVersion="1.31", existingKubeconfig="apiVersion: v1\nkind: Config\n")
    assert validate(raw).cluster.kubernetes_version == "1.31"


@pytest.mark.parametrize("stack", STACKS)
def test_stacks_pin_a_version_every_cloud_creates(stack):
    data = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    cloud = data["gpu-platform:cloud"]
    version = data.get("gpu-platform:cluster", {}).get("kubernetesVersion", DEFAULT_KUBERNETES_VERSION)
    assert version in PROFILES[cloud].kubernetes_versions
    assert UPSTREAM_EOL[version] > "2026-12-03", f"{stack} pins {version}, past upstream end of life"


def test_every_version_on_an_autoscaler_cloud_has_an_autoscaler_release():
    for prof in PROFILES.values():
        if prof.autoscaler == "cluster-autoscaler":
            missing = set(prof.kubernetes_versions) - set(IMAGE_TAGS)
            assert not missing, (prof.name, missing)


def test_autoscaler_tags_match_their_minor():
    for minor, tag in IMAGE_TAGS.items():
        assert tag.startswith(f"v{minor}.")
    with pytest.raises(ValueError, match="no Cluster Autoscaler release is pinned for Kubernetes 1.20"):
        image_tag("1.20")


@pytest.mark.parametrize("version", ["1.32", "1.34", "1.35", "1.36"])
def test_autoscaler_image_follows_the_cluster_minor(raw, version):
    raw["cluster"]["kubernetesVersion"] = version
    assert shared_values(validate(raw))["image"]["tag"] == IMAGE_TAGS[version]
    assert IMAGE_TAGS[version].startswith(f"v{version}.")


@pytest.mark.parametrize("stack, version, tag", [("aws-prod", "1.36", "v1.36.1"), ("oci-prod", "1.34", "v1.34.5")])
def test_planned_autoscaler_runs_the_cluster_minor(stack, version, tag):
    plan = plan_stack(stack, config_overrides=_with_version(stack, version))
    release = next(r for r in plan.of_type(RELEASE) if r.inputs["chart"] == "cluster-autoscaler")
    assert release.inputs["values"]["image"]["tag"] == tag
    component = next(r for r in plan.resources if r.urn == release.parent)
    assert component.inputs["imageTag"] == tag


def _with_version(stack: str, version: str) -> dict:
    data = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    cluster = copy.deepcopy(data["gpu-platform:cluster"])
    cluster["kubernetesVersion"] = version
    return {"gpu-platform:cluster": cluster}


def test_pinned_chart_takes_the_image_tag_as_given():
    """The pinned chart renders the container image straight from image.repository and image.tag, so the override
    reaches the Deployment unchanged, and nothing in it is gated on the image version."""
    with tarfile.open(upstream(f"charts/cluster-autoscaler-{CHART_VERSION}.tgz")) as chart:
        deployment = chart.extractfile("cluster-autoscaler/templates/deployment.yaml").read().decode()
        values = yaml.safe_load(chart.extractfile("cluster-autoscaler/values.yaml").read())
    assert 'image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"' in deployment
    assert deployment.count(".Values.image.tag") == 1
    assert values["image"]["repository"] == "registry.k8s.io/autoscaling/cluster-autoscaler"
