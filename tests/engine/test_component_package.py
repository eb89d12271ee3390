"""The reusable components: typed Args, the Pulumi component package that serves them, and one used alone."""
import dataclasses
import json
import runpy

import pytest
import yaml
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.errors import InputPropertyError

from components.clouds.base import GpuNodePoolArgs
from components.gpu.operator import GpuOperatorArgs
from components.observability.monitoring import GpuMonitoringArgs
from components.provider import COMPONENTS, PACKAGE, PACKAGE_VERSION, schema
from components.scheduling.kueue.component import KueueArgs
from components.tenancy.team import TeamArgs
from gpu_platform.engine.plan import run_program, validate_stack

from support.paths import ROOT

PACKAGE_DIR = ROOT / "package"
EXAMPLE_DIR = ROOT / "docs" / "examples" / "components_alone"
EXAMPLE = EXAMPLE_DIR / "__main__.py"
REGENERATE = "python -m components.provider > package/schema.json"


def test_inferred_schema_matches_checked_in_schema():
    """A component's public shape changes only together with package/schema.json (and its users' SDKs)."""
    checked_in = json.loads((PACKAGE_DIR / "schema.json").read_text())
    assert schema() == checked_in, f"the components' Args changed: regenerate with `{REGENERATE}`"


def test_schema_has_every_component_under_the_package_token():
    names = {c.__name__ for c in COMPONENTS}
    assert names == {"GpuNodePool", "GpuOperator", "Team", "Kueue", "GpuMonitoring"}
    assert set(schema()["resources"]) == {f"{PACKAGE}:index:{n}" for n in names}
    assert all(c.TYPE == f"{PACKAGE}:index:{c.__name__}" for c in COMPONENTS)


@pytest.mark.parametrize("args_type", [GpuNodePoolArgs, GpuOperatorArgs, TeamArgs, KueueArgs, GpuMonitoringArgs])
def test_every_args_field_is_documented_and_in_the_schema(args_type):
    token = f"{PACKAGE}:index:{args_type.__name__.removesuffix('Args')}"
    properties = schema()["resources"][token]["inputProperties"]
    camel = {f.name: f.name.split("_")[0] + "".join(w.title() for w in f.name.split("_")[1:])
             for f in dataclasses.fields(args_type)}
    assert set(properties) == set(camel.values())
    undocumented = [name for name, p in properties.items() if not p.get("description")]
    assert not undocumented, f"{args_type.__name__}: no docstring line for {undocumented}"
    required = set(schema()["resources"][token].get("requiredInputs", []))
    # Fields with a default are optional in the schema, so YAML users may leave them out like Python users.
    assert required == {camel[f.name] for f in dataclasses.fields(args_type)
                        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}


def test_plugin_manifest_and_entry_point():
    manifest = yaml.safe_load((PACKAGE_DIR / "PulumiPlugin.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    main = (PACKAGE_DIR / "__main__.py").read_text()
    assert "component_provider_host(COMPONENTS" in main
    assert "-e .." in (PACKAGE_DIR / "requirements.txt").read_text()


def test_package_constructs_a_component_from_engine_inputs():
    """What the host does on `Construct`, minus gRPC: camelCase inputs mapped to the Args, defaults filled in."""
    provider = ComponentProvider(COMPONENTS, PACKAGE, version=PACKAGE_VERSION)
    constructed = []

    def program():
        constructed.append(provider.construct("ml", f"{PACKAGE}:index:Team", {
            "team": "ml", "priority": "high", "gpuQuota": {"requests.nvidia.com/gpu": "4"}}, None))

    registrations, _ = run_program("hosted", {}, program)
    by_name = {r.name: r for r in registrations}
    assert by_name["ml"].type == f"{PACKAGE}:index:Team"
    assert by_name["ml-gpu-quota"].inputs["spec"]["hard"] == {"requests.nvidia.com/gpu": "4"}
    assert by_name["ml-namespace"].inputs["metadata"]["name"] == "ml"
    # Defaults filled in: internet egress, nothing protected, no RoleBinding without groups.
    assert by_name["ml"].inputs["egress"] == "internet"
    assert not any(r.protect for r in registrations)
    assert "ml-edit" not in by_name
    assert len(constructed) == 1


def test_package_refuses_a_component_without_its_required_inputs():
    provider = ComponentProvider(COMPONENTS, PACKAGE, version=PACKAGE_VERSION)
    with pytest.raises(InputPropertyError, match="gpuQuota"):
        provider.map_inputs({"team": "ml", "priority": "high"}, provider._component_defs["Team"])


def test_from_config_gives_what_the_stack_program_passes():
    config = validate_stack("aws-prod")[3]
    team = config.teams[0]
    args = TeamArgs.from_config(config, team, {})
    assert (args.team, args.priority, args.protect) == (team.name, team.priority, config.protected)
    assert args.labels["gpu-platform.io/team"] == team.name
    kueue = KueueArgs.from_config(config, {t.name: t.name for t in config.teams})
    assert list(kueue.cluster_queues) == [t.name for t in config.teams]
    assert list(kueue.flavors) == [p.name for p in config.gpu_pools]


def run_example():
    return run_program("my-stack", {"gpu-platform:kubeconfig": "apiVersion: v1\nkind: Config\n"},
                       lambda: runpy.run_path(str(EXAMPLE), run_name="__main__"))


def test_component_used_alone_in_a_users_program():
    """docs/components.md's Python example, run through the offline engine: the components, nothing else."""
    registrations, outputs = run_example()
    types = [r.type for r in registrations]
    print(f"components used alone: {len(registrations)} resources")
    assert len(registrations) == 16  # the compute quota included
    assert types.count("gpu-platform:gpu:GpuOperator") == types.count("gpu-platform:tenancy:Team") == 1
    assert not any(t.startswith(("aws:", "azure-native:", "gcp:", "oci:")) for t in types), "no cluster created"
    provider = next(r for r in registrations if r.type == "pulumi:providers:kubernetes")
    kubernetes_objects = [r for r in registrations if r.type.startswith("kubernetes:")]
    # The user's provider reaches every child through the component's opts.
    assert kubernetes_objects and all(r.provider.startswith(provider.urn) for r in kubernetes_objects)
    team_objects = {r.name: r for r in kubernetes_objects if r.parent.endswith("::research")}
    # The Team isolates by default, as the stack program's teams do: NetworkPolicies and Pod Security labels.
    assert set(team_objects) == {"research-namespace", "research-gpu-quota", "research-compute-quota",
                                 "research-priority-ceiling", "research-defaults", "research-edit", "research-default-deny",
                                 "research-allow-same-namespace", "research-allow-dns",
                                 "research-allow-prometheus-scrape", "research-allow-internet-egress"}
    labels = team_objects["research-namespace"].inputs["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    assert labels["gpu-platform.io/team"] == "research"
    assert all(r.protect for r in team_objects.values())
    assert team_objects["research-gpu-quota"].inputs["spec"]["hard"] == {"requests.nvidia.com/gpu": "8"}
    release = next(r for r in kubernetes_objects if r.type == "kubernetes:helm.sh/v3:Release")
    assert release.inputs["chart"] == "gpu-operator"
    assert outputs == {"teamNamespace": "research"}


def test_docs_show_the_tested_example():
    page = (ROOT / "docs" / "components.md").read_text()
    assert EXAMPLE.read_text().strip() in page


def test_none_means_the_default_for_optional_fields():
    args = TeamArgs(team="ml", priority="low", gpu_quota={}, groups=None, egress=None, protect=None)
    assert (args.groups, args.egress, args.protect) == ([], "internet", False)
    assert list(args.network_policies) == ["default-deny", "allow-same-namespace", "allow-dns",
                                           "allow-prometheus-scrape", "allow-internet-egress"]
    closed = TeamArgs(team="ml", priority="low", gpu_quota={}, egress="none")
    assert "allow-internet-egress" not in closed.network_policies
    # Said explicitly, none at all: the default is only for what the caller leaves unset.
    assert TeamArgs(team="ml", priority="low", gpu_quota={}, network_policies={}).network_policies == {}
    assert GpuNodePoolArgs("a", "aws", "a", "p5.48xlarge", "H100", 8, 0, 2, "cloud", sharing_mode=None,
                           taints=None).sharing_mode == "none"


OUTPUTS = {"GpuNodePool": {"advertisedResources", "nodeLabels"}, "GpuOperator": {"namespaceName", "releaseName"},
           "Team": {"namespaceName"}, "Kueue": {"releaseName"}, "GpuMonitoring": {"namespaceName"}}


@pytest.mark.parametrize("component", sorted(OUTPUTS))
def test_every_component_declares_typed_documented_outputs(component):
    resource = schema()["resources"][f"{PACKAGE}:index:{component}"]
    assert set(resource["properties"]) == set(resource["required"]) == OUTPUTS[component]
    assert all(p.get("type") and p.get("description") for p in resource["properties"].values())


def test_package_returns_a_components_outputs():
    """What another language's program reads back: the Team's namespace, resolved."""
    provider = ComponentProvider(COMPONENTS, PACKAGE, version=PACKAGE_VERSION)
    states = []

    def program():
        result = provider.construct("ml", f"{PACKAGE}:index:Team", {
            "team": "ml", "priority": "high", "gpuQuota": {"requests.nvidia.com/gpu": "4"}}, None)
        result.state["namespaceName"].apply(states.append)

    run_program("hosted", {}, program)
    assert states == ["ml"]
