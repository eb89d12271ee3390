"""Every planned Helm release rendered by a real Helm against its pinned chart package, offline.

The plan's release inputs (chart, version, namespace, values) go to `helm template`; the rendered objects are
validated (Kubernetes schemas for core kinds, the charts' and ../shared/upstream CRDs for custom kinds) and checked
against what the rest of the plan relies on: operand switches, ConfigMap names, tolerations, selectors, labels,
ClusterRole names and autoscaler flags.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from components.config.labels import FABRIC_LABEL, POOL_LABEL, pool_taints
from components.clouds import profile
from components.clouds.facts import DEFAULT_KUBERNETES_VERSION
from components.config.operands import operands, volume_mount_devices
from components.gpu.operator import VOLUME_MOUNT_TOOLKIT_ENV
from components.pins import PINS
from components.scheduling.framework_catalog import FRAMEWORKS
from components.system_pool import SYSTEM_TAINT
from gpu_platform.engine.mocks import fake_id
from gpu_platform.engine.plan import read_stack_config, stack_path, validate_stack

from support.clouds import karpenter_cluster
from support.gke_network_crds import SCHEMAS as GKE_NETWORK_SCHEMAS
from support.helm import Helm, chart_package, extract_helm, parse
from support.paths import ROOT, STACKS, UPSTREAM, strict_schema
from support.plans import shared_plan
from support.scheduling import with_frameworks
from support.stacks import with_scheduler

RELEASE = "kubernetes:helm.sh/v3:Release"
K8S_VERSION = DEFAULT_KUBERNETES_VERSION
# ClusterRoles every conformant cluster has (user-facing roles of the Kubernetes RBAC defaults).
BUILTIN_CLUSTER_ROLES = {"cluster-admin", "admin", "edit", "view"}


def scheduler_kind(stack: str) -> str:
    return (read_stack_config(stack_path(stack, None)[1]).get("gpu-platform:scheduler") or {}).get("kind", "kueue")


KUEUE_STACKS = [s for s in STACKS if scheduler_kind(s) == "kueue"]
VOLCANO_STACKS = [s for s in STACKS if scheduler_kind(s) == "volcano"]


@dataclass
class Rendered:
    """One planned release and what Helm renders from it."""

    stack: str
    chart: str  # the chart name, `oci://.../kueue` -> kueue
    release: object
    package: Path
    docs: list[dict] = field(default_factory=list)

    @property
    def values(self) -> dict:
        return self.release.inputs.get("values") or {}

    @property
    def namespace(self) -> str:
        return self.release.inputs["namespace"]

    def of_kind(self, kind: str) -> list[dict]:
        return [d for d in self.docs if d.get("kind") == kind]

    def one(self, kind: str, name: str | None = None) -> dict:
        found = [d for d in self.of_kind(kind) if name is None or d["metadata"]["name"] == name]
        assert len(found) == 1, f"{self.chart} on {self.stack}: expected one {kind} {name or ''}, got {len(found)}"
        return found[0]


@pytest.fixture(scope="session")
def helm(tmp_path_factory) -> Helm:
    home = tmp_path_factory.mktemp("helm")
    return Helm(extract_helm(home), home)


def test_helm_is_the_major_pulumi_renders_with(helm):
    """pulumi-kubernetes' helm.v3.Release embeds Helm v3's library; v4 renders some charts differently."""
    assert helm.version().startswith("v3."), helm.version()


def render_release(helm: Helm, stack: str, release) -> Rendered:
    inputs = release.inputs
    package = chart_package(inputs["chart"], inputs["version"])
    assert package.exists(), f"{stack}: release {release.name} pins {inputs['chart']} {inputs['version']}, " \
                             f"which has no package in {package.parent}"
    out = Rendered(stack, inputs["chart"].rsplit("/", 1)[-1], release, package)
    out.docs = helm.template(package, inputs["name"], out.namespace, out.values)
    return out


# Charts no example stack plans, each planned on a variant of one (stack, overrides): Karpenter instead of the
# Cluster Autoscaler, every job framework, and KAI Scheduler (on the stack whose pools share GPUs: fractions on).
VARIANTS = {
    "aws-dev+karpenter": ("aws-dev", karpenter_cluster()),
    "aws-prod+frameworks": ("aws-prod", with_frameworks(list(FRAMEWORKS))),
    "aws-prod+kai": ("aws-prod", with_scheduler("aws-prod", "kai")),
}


@pytest.fixture(scope="module")
def rendered(helm) -> dict[str, tuple[object, dict[str, Rendered]]]:
    """stack (or variant) -> (plan, {chart: rendered release}) for every example stack and VARIANTS."""
    plans = {stack: shared_plan(stack) for stack in STACKS}
    plans |= {name: shared_plan(stack, overrides) for name, (stack, overrides) in VARIANTS.items()}
    return {name: (plan, {r.chart: r for r in (render_release(helm, name, rel) for rel in plan.of_type(RELEASE))})
            for name, plan in plans.items()}


def test_every_pinned_chart_is_rendered(rendered):
    assert {chart for _, charts in rendered.values() for chart in charts} == set(PINS)


def charts_of(rendered, chart: str) -> list[Rendered]:
    return [charts[chart] for _, charts in rendered.values() if chart in charts]


# --- validation ---------------------------------------------------------------------------------------------------

UPSTREAM_CRDS = ("gpu-operator/crds", "kueue/crds", "volcano/crds", "kai-scheduler/crds", "prometheus-operator/crds")


def schemas_of(crds: list[dict]) -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> strict openAPI schema of every served version of these CRDs."""
    schemas = {}
    for crd in crds:
        if crd.get("kind") != "CustomResourceDefinition":
            continue
        spec = crd["spec"]
        for version in spec["versions"]:
            schema = version.get("schema", {}).get("openAPIV3Schema")
            if schema and version.get("served", True):
                schemas[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = strict_schema(schema)
    return schemas


def test_every_crd_file_of_a_chart_is_its_own_crd(helm):
    """`helm show crds` glued kubeflow-trainer's TrainJob to the LeaderWorkerSet of its subchart (one file ends
    without a newline, the next starts without `---`): the CRDs are read per file, as `helm install` reads them."""
    package = chart_package("kubeflow-trainer", PINS["kubeflow-trainer"].version)
    names = {crd["metadata"]["name"] for crd in helm.crds(package)}
    assert {"trainjobs.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org",
            "clustertrainingruntimes.trainer.kubeflow.org", "jobsets.jobset.x-k8s.io",
            "leaderworkersets.leaderworkerset.x-k8s.io"} == names


@pytest.fixture(scope="module")
def chart_crds(helm, rendered) -> dict[str, dict[tuple[str, str], dict]]:
    """chart -> the CRD schemas its release installs (crds/ folders, its subcharts', and rendered templates)."""
    result = {}
    for _, charts in rendered.values():
        for chart in charts.values():
            if chart.chart not in result:
                result[chart.chart] = schemas_of(helm.crds(chart.package) + chart.of_kind("CustomResourceDefinition"))
    return result


@pytest.fixture(scope="module")
def crd_schemas(chart_crds) -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> schema, from ../shared/upstream and, taking precedence as what the releases really
    install, the charts' own CRDs."""
    crds = []
    for folder in UPSTREAM_CRDS:
        if (UPSTREAM / folder).is_dir():
            for path in sorted((UPSTREAM / folder).glob("*.yaml")):
                crds += parse(path.read_text())
    schemas = schemas_of(crds)
    for installed in chart_crds.values():
        schemas.update(installed)
    return schemas


def validation_problems(doc: dict, crd_schemas: dict, validators: dict,
                        stand_ins: frozenset[str] = frozenset()) -> list[str] | None:
    """What is wrong with one object; None when no schema knows its kind. A `stand_ins` value (the offline engine's
    id for a resource the cloud names on creation, `subnet-...` in a real plan) is not held to the id's pattern."""
    key = (doc["apiVersion"], doc["kind"])
    if key in crd_schemas:
        if key not in validators:
            validators[key] = jsonschema.Draft7Validator(crd_schemas[key])
        return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validators[key].iter_errors(doc)
                if not (e.validator == "pattern" and e.instance in stand_ins)]
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        return None
    except kubernetes_validate.ValidationError as e:
        return [e.message]
    return []


def test_rendered_manifests_validate(rendered, crd_schemas):
    """Core kinds against the default Kubernetes version's schema (strict: unknown fields fail), custom kinds against their CRD.
    Identical objects from several stacks are checked once."""
    problems, unchecked, seen, validators = [], set(), set(), {}
    for chart in (r for _, charts in rendered.values() for r in charts.values()):
        for doc in chart.docs:
            text = json.dumps(doc, sort_keys=True)
            if text in seen:
                continue
            seen.add(text)
            found = validation_problems(json.loads(text), crd_schemas, validators)
            if found is None:
                unchecked.add((doc["apiVersion"], doc["kind"]))
            problems += [f"{chart.stack} {chart.chart} {doc['kind']}/{doc['metadata'].get('name')}: {p}"
                         for p in found or ()]
    assert not problems, "\n".join(problems)
    assert not unchecked, f"rendered kinds with neither a Kubernetes schema nor a CRD: {sorted(unchecked)}"
    assert len(seen) > 200


@pytest.mark.parametrize("stack", [*STACKS, *VARIANTS])
def test_planned_objects_are_served_by_kubernetes_or_the_crds_our_charts_install(stack, rendered, chart_crds):
    """Queues, flavors, monitors and rules we create are valid for the CRD versions our releases ship (not only for
    ../shared's copies); every other object we create is a core Kubernetes kind."""
    plan, charts = rendered[stack]
    # GKE serves its multi-networking kinds itself (tests/support/gke_network_crds.py).
    installed = dict(GKE_NETWORK_SCHEMAS)
    for chart in charts.values():
        installed.update(chart_crds[chart.chart])
    objects = [r for r in plan.resources if r.type.startswith("kubernetes:") and r.inputs.get("apiVersion")]
    problems, validators, custom = [], {}, 0
    stand_ins = frozenset(fake_id(r.type, r.name) for r in plan.resources)
    for resource in objects:
        obj = json.loads(json.dumps(resource.inputs))
        # The plan masks secret values as "[secret]"; their shape is the provider's business, not ours.
        obj = {k: v for k, v in obj.items() if v != "[secret]"}
        custom += (obj["apiVersion"], obj["kind"]) in installed
        found = validation_problems(obj, installed, validators, stand_ins)
        if found is None:
            problems.append(f"{resource.name}: neither Kubernetes nor a planned chart's CRD serves "
                            f"{obj['apiVersion']} {obj['kind']}")
        problems += [f"{resource.name}: {p}" for p in found or ()]
    assert not problems, "\n".join(problems)
    assert custom >= 3


# --- helpers ------------------------------------------------------------------------------------------------------

def selects(selector: dict | None, labels: dict[str, str]) -> bool:
    """A Kubernetes LabelSelector applied to `labels` (an empty selector selects everything)."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {"In": key in labels and labels[key] in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}[op]
        if not ok:
            return False
    return True


def tolerates(tolerations: list[dict], key: str, effect: str) -> bool:
    """Whether a toleration list lets a pod onto a node tainted (key, effect), whatever the taint's value."""
    return any((t.get("operator") == "Exists" and t.get("key") in (None, key))
               and t.get("effect") in (None, "", effect) for t in tolerations)


def _kubelet_spelling(taint: str) -> tuple[str, str]:
    """`key=value:Effect` or `key:Effect` -> (key, Effect)."""
    key_value, _, effect = taint.rpartition(":")
    return key_value.partition("=")[0], effect


def planned_node_taints(plan) -> set[tuple[str, str]]:
    """(key, Kubernetes effect) of every taint a planned node pool puts on its nodes, read from the cloud resources
    in each provider's own spelling (EKS/GKE taint lists, AKS nodeTaints, OKE kubelet --register-with-taints)."""
    to_k8s = {api: k8s for k8s, api in profile(plan.config.cloud).taint_effects.items()}
    taints = set()
    for r in plan.of_type("aws:eks/nodeGroup:NodeGroup"):
        taints |= {(t["key"], to_k8s[t["effect"]]) for t in r.inputs.get("taints") or ()}
    for r in plan.of_type("gcp:container/nodePool:NodePool"):
        taints |= {(t["key"], to_k8s[t["effect"]]) for t in r.inputs["nodeConfig"].get("taints") or ()}
    for r in plan.of_type("azure-native:containerservice:AgentPool"):
        taints |= {_kubelet_spelling(t) for t in r.inputs.get("nodeTaints") or ()}
    for r in plan.of_type("azure-native:containerservice:ManagedCluster"):  # the system pool is a cluster entry
        taints |= {_kubelet_spelling(t) for profile_ in r.inputs.get("agentPoolProfiles") or ()
                   for t in profile_.get("nodeTaints") or ()}
    for r in plan.of_type("oci:ContainerEngine/nodePool:NodePool"):
        for arg in ((r.inputs.get("nodeMetadata") or {}).get("kubelet-extra-args") or "").split():
            if arg.startswith("--register-with-taints="):
                taints |= {_kubelet_spelling(t) for t in arg.partition("=")[2].split(",")}
    return taints


def planned(plan, kind: str) -> list:
    """Planned Kubernetes objects of one kind (`ConfigMap`, `RoleBinding`, ...)."""
    return [r for r in plan.resources if r.type.startswith("kubernetes:") and r.type.rsplit(":", 1)[-1] == kind]


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env") or ()}


def containers(doc: dict) -> dict[str, dict]:
    return {c["name"]: c for c in doc["spec"]["template"]["spec"]["containers"]}


# --- GPU Operator ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stack", STACKS)
def test_cluster_policy_matches_the_cloud_profile_and_the_pools(stack, rendered):
    plan, charts = rendered[stack]
    config, chart = plan.config, charts["gpu-operator"]
    prof, ops = profile(config.cloud), operands(config)
    spec = chart.one("ClusterPolicy")["spec"]
    assert spec["driver"]["enabled"] is ops.driver
    assert spec["toolkit"]["enabled"] is ops.toolkit
    assert spec["devicePlugin"]["enabled"] is ops.device_plugin
    assert spec["migManager"]["enabled"] is ops.mig_manager
    # The RuntimeClass the operator creates and runs its operands with names a handler the GPU nodes define.
    assert spec["operator"]["runtimeClass"] == (prof.operator_runtime_class or "nvidia")
    toolkit_env = {e["name"]: e["value"] for e in spec["toolkit"].get("env") or ()}
    mounts = volume_mount_devices(config)
    assert toolkit_env == ({**dict(prof.toolkit_env), **(dict(VOLUME_MOUNT_TOOLKIT_ENV) if mounts else {})}
                           if ops.toolkit else {})
    # The toolkit reads device lists only from volume mounts exactly where the plugin writes them there.
    plugin_env = {e["name"]: e["value"] for e in spec["devicePlugin"].get("env") or ()}
    assert (plugin_env.get("DEVICE_LIST_STRATEGY") == "volume-mounts") is mounts
    assert (toolkit_env.get("ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED") == "false") is mounts
    # Every taint the config gives a GPU pool, and every taint the planned cloud node pools really carry.
    taints = {(t.key, t.effect) for pool in config.gpu_pools for t in pool_taints(pool, prof)}
    taints |= planned_node_taints(plan)
    assert ("nvidia.com/gpu", "NoSchedule") in taints
    # The system pool's taint keeps GPU operands (and NFD workers, which only GPU nodes need) off it.
    taints.discard((SYSTEM_TAINT.key, SYSTEM_TAINT.effect))
    nfd_workers = [d for d in chart.of_kind("DaemonSet") if "node-feature-discovery" in d["metadata"]["name"]]
    assert nfd_workers, "the bundled NFD worker is not rendered"
    for key, effect in taints:
        assert tolerates(spec["daemonsets"]["tolerations"], key, effect), (key, effect)
        assert tolerates(nfd_workers[0]["spec"]["template"]["spec"]["tolerations"], key, effect), (key, effect)
    ours = {r.inputs["metadata"]["name"]: r for r in planned(plan, "ConfigMap")
            if r.inputs["metadata"].get("namespace") == chart.namespace}
    chart_maps = {d["metadata"]["name"]: d for d in chart.of_kind("ConfigMap")}
    if ops.mig_manager:
        # mig-manager reads the layouts from our ConfigMap; the chart must not render one of that name too.
        name = spec["migManager"]["config"]["name"]
        assert name in ours and name not in chart_maps
        assert spec["migManager"]["config"]["default"] in yaml.safe_load(
            next(iter(ours[name].inputs["data"].values())))["mig-configs"]
    if config.observability.dcgm:
        assert spec["dcgmExporter"]["config"]["name"] in ours
    plugin_config = spec["devicePlugin"].get("config")
    if plugin_config:
        # The chart renders the device plugin ConfigMap; every pool label that selects an entry finds it.
        rendered_map = chart_maps[plugin_config["name"]]
        assert plugin_config["default"] in rendered_map["data"]
        for labels in plan.outputs["gpuNodeLabels"].values():
            entry = labels.get("nvidia.com/device-plugin.config")
            assert entry is None or entry in rendered_map["data"]


def test_aks_operands_run_with_the_aks_runtime_handler(rendered):
    """AKS GPU nodes define only the containerd handler `nvidia-container-runtime`: the rendered ClusterPolicy names
    it; every other cloud keeps the chart default `nvidia`."""
    chart = rendered["azure-prod"][1]["gpu-operator"]
    assert chart.one("ClusterPolicy")["spec"]["operator"]["runtimeClass"] == "nvidia-container-runtime"
    other = [c for c in charts_of(rendered, "gpu-operator") if c.stack != "azure-prod"]
    assert {c.one("ClusterPolicy")["spec"]["operator"]["runtimeClass"] for c in other} == {"nvidia"}


def test_gke_toolkit_reads_the_containerd_config_file(rendered):
    """GKE 1.33+: the toolkit must read containerd's config.toml, on every GKE stack that runs the toolkit."""
    gke = [c for c in charts_of(rendered, "gpu-operator") if c.stack.startswith("gcp")]
    assert gke
    for chart in gke:
        toolkit = chart.one("ClusterPolicy")["spec"]["toolkit"]
        assert toolkit["enabled"] is True
        assert {"name": "RUNTIME_CONFIG_SOURCE", "value": "file"} in toolkit["env"]


GKE_NO_PLUGIN_LABEL = "gke-no-default-nvidia-gpu-device-plugin"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"


def gke_operator_driver_overrides(stack: str) -> dict:
    """The stack with every GPU pool's driver owned by the GPU Operator (GKE's other supported path)."""
    pools = validate_stack(stack)[3].gpu_pools
    raw = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    gpu_pools = [{**p, "driver": "operator"} for p in raw["config"]["gpu-platform:gpuPools"]]
    assert len(gpu_pools) == len(pools)
    return {"gpu-platform:gpuPools": gpu_pools}


def device_plugins_per_pool(plan, cluster_policy: dict) -> dict[str, list[str]]:
    """pool -> the device plugins that would run on its nodes: GKE's (unless the node opts out by label) and the
    operator's (when the ClusterPolicy enables it and the node does not opt out)."""
    operator_plugin = cluster_policy["spec"]["devicePlugin"]["enabled"]
    result = {}
    for pool in plan.of_type(GKE_NODE_POOL):
        node_config = pool.inputs["nodeConfig"]
        if not node_config.get("guestAccelerators"):
            continue
        labels = node_config.get("labels") or {}
        plugins = []
        if labels.get(GKE_NO_PLUGIN_LABEL) != "true":
            plugins.append("gke")
        if operator_plugin and labels.get("nvidia.com/gpu.deploy.device-plugin") != "false":
            plugins.append("operator")
        result[labels["gpu-platform.io/pool"]] = plugins
    return result


# gcp-dev also with driver: operator (gcp-prod partitions and shares GPUs, which on GKE needs GKE's driver).
GKE_CASES = [(s, "as-written") for s in STACKS if s.startswith("gcp")] + [("gcp-dev", "operator")]


@pytest.mark.parametrize("stack, driver", GKE_CASES)
def test_gke_pools_run_exactly_one_device_plugin(stack, driver, helm):
    """GKE-installed driver: GKE's device plugin (it implements gpuPartitionSize and gpuSharingConfig), the operator's
    off. Operator-installed driver: the operator's plugin, GKE's opted out by node label."""
    plan = shared_plan(stack, gke_operator_driver_overrides(stack) if driver == "operator" else None)
    (release,) = [r for r in plan.of_type(RELEASE) if r.inputs["chart"] == "gpu-operator"]
    policy = next(d for d in render_release(helm, stack, release).docs if d["kind"] == "ClusterPolicy")
    plugins = device_plugins_per_pool(plan, policy)
    assert plugins and all(len(p) == 1 for p in plugins.values()), plugins
    for pool in plan.of_type(GKE_NODE_POOL):
        for accelerator in pool.inputs["nodeConfig"].get("guestAccelerators") or ():
            owner = plugins[pool.inputs["nodeConfig"]["labels"]["gpu-platform.io/pool"]]
            version = accelerator["gpuDriverInstallationConfig"]["gpuDriverVersion"]
            # GKE's plugin needs GKE's driver; the operator's plugin pairs with the operator's driver.
            assert (version == "INSTALLATION_DISABLED") is (owner == ["operator"])
            assert policy["spec"]["driver"]["enabled"] is (owner == ["operator"])


# --- Kueue, Volcano and the ClusterRoles we bind ------------------------------------------------------------------

def planned_kueue_config(chart: Rendered) -> dict:
    return yaml.safe_load(chart.values["managerConfig"]["controllerManagerConfigYaml"])


@pytest.mark.parametrize("stack", KUEUE_STACKS)
def test_kueue_manager_runs_our_configuration(stack, rendered):
    plan, charts = rendered[stack]
    chart = charts["kueue"]
    config_map = chart.one("ConfigMap", "kueue-manager-config")
    running = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])
    ours = planned_kueue_config(chart)
    # Ours verbatim; the chart adds only its internal certificate settings (webhook Service and Secret names).
    assert {k: v for k, v in running.items() if k in ours} == ours
    assert set(running) - set(ours) <= {"internalCertManagement"}
    assert running["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and running["kind"] == "Configuration"
    # Built-in workloads always; the others only with the stack's frameworks installed (scheduler.frameworks).
    assert {"batch/job", "pod"} <= set(running["integrations"]["frameworks"])
    # The manager mounts that ConfigMap.
    manager = chart.one("Deployment", "kueue-controller-manager")
    volumes = manager["spec"]["template"]["spec"]["volumes"]
    assert any((v.get("configMap") or {}).get("name") == "kueue-manager-config" for v in volumes)
    # Kueue manages exactly the team namespaces (jobs without a queue name there still get one: the default).
    selector = running["managedJobsNamespaceSelector"]
    namespaces = {r.inputs["metadata"]["name"]: r.inputs["metadata"].get("labels") or {}
                  for r in planned(plan, "Namespace")}
    teams = {t.name for t in plan.config.teams}
    assert {n for n, labels in namespaces.items() if selects(selector, labels)} == teams
    assert not selects(selector, {}), "namespaces we do not create (kube-system, kueue-system) must stay unmanaged"


@pytest.mark.parametrize("stack", STACKS)
def test_every_cluster_role_we_bind_exists(stack, rendered):
    """RoleBindings to ClusterRoles a chart creates (kueue-batch-user-role) need that chart to render them."""
    plan, charts = rendered[stack]
    available = BUILTIN_CLUSTER_ROLES | {r.inputs["metadata"]["name"] for r in planned(plan, "ClusterRole")}
    by_chart = {c.chart: {d["metadata"]["name"] for d in c.of_kind("ClusterRole")} for c in charts.values()}
    available |= set().union(*by_chart.values())
    bound = {r.inputs["roleRef"]["name"] for r in planned(plan, "RoleBinding") + planned(plan, "ClusterRoleBinding")
             if r.inputs["roleRef"]["kind"] == "ClusterRole"}
    assert bound <= available, bound - available
    if "kueue" in charts and any(t.groups for t in plan.config.teams):
        assert "kueue-batch-user-role" in bound
        granted = aggregated_grants(charts["kueue"], "kueue-batch-user-role")
        # Team members see their LocalQueue and the Workloads their jobs became.
        assert {("kueue.x-k8s.io", "localqueues", "list"), ("kueue.x-k8s.io", "workloads", "get")} <= granted


def aggregated_grants(chart: Rendered, name: str) -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) a rendered ClusterRole grants, following its aggregationRule within the chart."""
    role = chart.one("ClusterRole", name)
    rules = list(role.get("rules") or ())
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or ():
        for other in chart.of_kind("ClusterRole"):
            if other is not role and selects(selector, other["metadata"].get("labels") or {}):
                rules += other.get("rules") or ()
    return {(g, r, v) for rule in rules for g in rule.get("apiGroups", ()) for r in rule.get("resources", ())
            for v in rule.get("verbs", ())}


@pytest.mark.parametrize("stack", VOLCANO_STACKS)
def test_volcano_scheduler_runs_our_configuration(stack, rendered):
    chart = rendered[stack][1]["volcano"]
    config_map = chart.one("ConfigMap", "volcano-scheduler-configmap")
    running = yaml.safe_load(config_map["data"]["volcano-scheduler.conf"])
    assert running == yaml.safe_load(chart.values["custom"]["scheduler_config_override"])
    assert {"enqueue", "allocate", "reclaim"} <= {a.strip() for a in running["actions"].split(",")}
    plugins = {p["name"] for tier in running["tiers"] for p in tier["plugins"]}
    assert {"gang", "capacity", "binpack"} <= plugins
    scheduler = chart.one("Deployment", "volcano-scheduler")
    volumes = scheduler["spec"]["template"]["spec"]["volumes"]
    assert any((v.get("configMap") or {}).get("name") == "volcano-scheduler-configmap" for v in volumes)


# --- Prometheus and Grafana -----------------------------------------------------------------------------------------

MONITOR_SELECTORS = {"ServiceMonitor": "serviceMonitor", "PodMonitor": "podMonitor", "PrometheusRule": "rule"}


@pytest.mark.parametrize("stack", STACKS)
def test_prometheus_selects_every_monitor_and_rule_we_create(stack, rendered):
    plan, charts = rendered[stack]
    spec = charts["kube-prometheus-stack"].one("Prometheus")["spec"]
    objects = [(kind, r.inputs["metadata"]) for kind in MONITOR_SELECTORS for r in planned(plan, kind)]
    # The operator creates dcgm-exporter's ServiceMonitor in its namespace, with the labels from our values.
    dcgm = charts["gpu-operator"].one("ClusterPolicy")["spec"]["dcgmExporter"]
    if dcgm.get("enabled"):
        objects.append(("ServiceMonitor", {"namespace": charts["gpu-operator"].namespace,
                                           "labels": dcgm["serviceMonitor"]["additionalLabels"]}))
    assert len(objects) >= 4
    namespaces = {r.inputs["metadata"]["name"]: r.inputs["metadata"].get("labels") or {}
                  for r in planned(plan, "Namespace")}
    for kind, metadata in objects:
        field_ = MONITOR_SELECTORS[kind]
        assert selects(spec[f"{field_}Selector"], metadata.get("labels") or {}), (kind, metadata)
        # An empty namespace selector is every namespace; nil would be Prometheus' own only.
        assert spec[f"{field_}NamespaceSelector"] == {} or selects(
            spec[f"{field_}NamespaceSelector"], namespaces.get(metadata["namespace"], {})), (kind, metadata)


@pytest.mark.parametrize("stack", [*STACKS, *VARIANTS])
def test_our_service_monitors_find_the_charts_services(stack, rendered):
    """Kueue's and Volcano's ServiceMonitors (and any a scheduler's monitoring.SCRAPE adds) select exactly their
    chart's metrics Service, by a port it has."""
    plan, charts = rendered[stack]
    for monitor in planned(plan, "ServiceMonitor"):
        spec = monitor.inputs["spec"]
        (namespace,) = spec["namespaceSelector"]["matchNames"]
        services = [d for c in charts.values() if c.namespace == namespace for d in c.of_kind("Service")]
        assert services, f"{monitor.name}: no chart renders Services in {namespace}"
        matched = [s for s in services if selects(spec["selector"], s["metadata"].get("labels") or {})]
        assert len(matched) == 1, (monitor.name, [s["metadata"]["name"] for s in matched])
        ports = {p.get("name") for p in matched[0]["spec"]["ports"]}
        assert {e["port"] for e in spec["endpoints"]} <= ports


def test_kai_chart_renders_no_service_for_a_monitor_to_select(rendered):
    """Why KAI is not scraped (components/scheduling/kai/monitoring.py): at the pinned version its chart renders only
    the operator Deployment, whose metrics port no Service fronts, and no monitor of its own; the operator creates the
    scheduler, its Services and (with KAI's own Prometheus on) ServiceMonitors at run time. A chart version that
    renders a metrics Service or a monitor fails here, and is then wired like Kueue's."""
    plan, charts = rendered["aws-prod+kai"]
    kai = charts["kai-scheduler"]
    assert [d["kind"] for d in kai.docs if d["kind"] in ("Service", *MONITOR_SELECTORS)] == []
    ports = {(d["metadata"]["name"], port.get("name")) for d in kai.of_kind("Deployment")
             for c in d["spec"]["template"]["spec"]["containers"] for port in c.get("ports", [])}
    assert ports == {("kai-operator", "metrics"), ("kai-operator", "probe")}
    # prometheus.enabled would have the operator run a second Prometheus (for time-based fairshare) with its RBAC.
    assert "prometheus" not in kai.values and not [d for d in kai.docs if d["metadata"]["name"] == "kai-prometheus"]
    assert [m.name for m in planned(plan, "ServiceMonitor")
            if m.inputs["spec"]["namespaceSelector"]["matchNames"] == [kai.namespace]] == []


@pytest.mark.parametrize("stack", STACKS)
def test_grafana_sidecar_loads_our_dashboard(stack, rendered):
    plan, charts = rendered[stack]
    chart = charts["kube-prometheus-stack"]
    grafana = next(d for d in chart.of_kind("Deployment") if d["metadata"]["name"].endswith("grafana"))
    sidecar = env_of(containers(grafana)["grafana-sc-dashboard"])
    dashboards = [r.inputs["metadata"] for r in planned(plan, "ConfigMap")
                  if "dashboard" in r.inputs["metadata"]["name"]]
    assert dashboards
    for metadata in dashboards:
        assert (metadata.get("labels") or {}).get(sidecar["LABEL"]) == sidecar["LABEL_VALUE"]
        assert sidecar.get("NAMESPACE") in ("ALL", metadata["namespace"]) or (
            "NAMESPACE" not in sidecar and metadata["namespace"] == chart.namespace)


# --- Cluster Autoscaler ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stack", [s for s in STACKS if s.startswith(("aws", "oci"))])
def test_cluster_autoscaler_runs_with_our_flags(stack, rendered):
    plan, charts = rendered[stack]
    chart = charts["cluster-autoscaler"]
    (container,) = containers(chart.one("Deployment")).values()
    args = container["command"][1:] + (container.get("args") or [])
    flags = {}
    for arg in args:
        key, _, value = arg.removeprefix("--").partition("=")
        flags.setdefault(key, []).append(value)
    assert flags["cloud-provider"] == [chart.values["cloudProvider"]]
    for key, value in chart.values["extraArgs"].items():
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        assert shown in flags[key.split("_")[0]], (key, value, flags.get(key.split("_")[0]))
    assert flags["expander"] == ["priority,least-waste"]
    assert set(flags) >= {"scale-down-unneeded-time", "scale-down-delay-after-add",
                          "scale-down-gpu-utilization-threshold", "skip-nodes-with-local-storage"}
    # The priority expander reads its tiers from the ConfigMap the chart renders from our values.
    priorities = yaml.safe_load(chart.one("ConfigMap", "cluster-autoscaler-priority-expander")["data"]["priorities"])
    assert {str(k): v for k, v in priorities.items()} == chart.values["expanderPriorities"]
    config = plan.config
    if config.cloud == "aws":
        # EKS tags every managed node group's ASG with these two keys: discovery finds exactly our node groups.
        (cluster,) = plan.of_type("aws:eks/cluster:Cluster")
        assert flags["node-group-auto-discovery"] == [
            f"asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/{cluster.inputs['name']}"]
        assert "nodes" not in flags
    else:
        bounds = sorted(tuple(n.split(":")[:2]) for n in flags["nodes"])
        expected = [(str(p.min_nodes), str(p.max_nodes)) for p in config.gpu_pools]
        expected.append((str(config.cluster.system_pool.min_nodes), str(config.cluster.system_pool.max_nodes)))
        assert bounds == sorted(expected)


# --- every values leaf we set is read by a template -----------------------------------------------------------------

# (chart, leaf path) -> why a leaf that changes nothing when changed alone is still set. Compared exactly, so an
# entry that no longer applies fails too.
UNREAD_LEAVES = {
    ("gpu-operator", ("migManager", "config", "create")):
        "mig_config.yaml renders a ConfigMap only with create and data both set; we give no data (our own "
        "ConfigMap holds the layouts) and pin create: false so a changed chart default cannot make Helm own that "
        "ConfigMap",
}


def leaves(value, path: tuple = ()) -> Iterator[tuple[tuple, object]]:
    """(path, value) of every scalar, null or empty container in a values tree; list items by index."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


def with_leaf(values: dict, path: tuple, new) -> dict:
    changed = copy.deepcopy(values)
    node = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return changed


def sentinel(n: int):
    return f"zzleaf{n}zz"


def changed_leaf(value, n: int):
    """A different value of the same kind: a flipped bool, another number, a sentinel string or list."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return 900000 + n
    if isinstance(value, list):
        return [sentinel(n)]
    return sentinel(n)


@dataclass
class LeafReport:
    checked: dict[tuple[str, tuple], str] = field(default_factory=dict)  # (chart, path) -> "sentinel" | "changed"
    unread: dict[tuple[str, tuple], str] = field(default_factory=dict)  # (chart, path) -> what happened


def check_leaves(helm: Helm, chart: Rendered, report: LeafReport) -> None:
    """Every leaf of the chart's values: one render with a unique sentinel in every non-bool leaf (found in the
    output: read); then each leaf not yet shown read (bools, sentinels a template transforms or branches on),
    changed alone: read when the output differs from the planned values' output."""
    name, namespace, values = chart.release.inputs["name"], chart.namespace, chart.values
    all_leaves = [leaf for leaf in leaves(values) if leaf[0]]  # a release setting no values has no leaf
    base = helm.template_text(chart.package, name, namespace, values)
    marked = values
    for n, (path, value) in enumerate(all_leaves):
        if not isinstance(value, bool):
            marked = with_leaf(marked, path, changed_leaf(value, n))
    try:
        text = helm.template_text(chart.package, name, namespace, marked)
    except RuntimeError:
        text = ""
    for n, (path, value) in enumerate(all_leaves):
        key = (chart.chart, path)
        if key in report.checked:
            continue
        if not isinstance(value, bool) and str(changed_leaf(value, n)).strip("[]'") in text:
            report.checked[key] = "sentinel"
            continue
        try:
            changed = helm.template_text(chart.package, name, namespace, with_leaf(values, path, changed_leaf(value, n)))
        except RuntimeError as e:
            if "values don't meet the specifications" in str(e):
                report.unread.setdefault(key, f"{chart.stack}: only the values schema looked at it: {e}")
                continue
            changed = f"a template failed on it: {e}"  # which means a template read it
        if changed != base:
            report.checked[key] = "changed"
            report.unread.pop(key, None)
        else:
            report.unread.setdefault(key, f"{chart.stack}: output unchanged when {value!r} -> "
                                          f"{changed_leaf(value, n)!r}")


@pytest.fixture(scope="module")
def leaf_report(helm, rendered) -> LeafReport:
    report = LeafReport()
    for _, charts in rendered.values():
        for chart in charts.values():
            check_leaves(helm, chart, report)
    return report


def test_every_values_leaf_we_set_is_read_by_a_template(leaf_report, rendered, helm):
    unexpected = {k: v for k, v in leaf_report.unread.items() if k not in UNREAD_LEAVES}
    assert not unexpected, "\n".join(f"{chart} {'.'.join(map(str, path))}: {why}"
                                     for (chart, path), why in unexpected.items())
    assert set(leaf_report.unread) == set(UNREAD_LEAVES), "an UNREAD_LEAVES entry no longer applies"
    charts = {chart for _, charts in rendered.values() for chart in charts}
    # A release that sets no values (the Calico CRD chart) has no leaf to check.
    setting = {name for _, charts in rendered.values() for name, chart in charts.items() if chart.values}
    assert {chart for chart, _ in leaf_report.checked} == setting
    print(f"\n{len(leaf_report.checked)} distinct values leaves over {len(charts)} charts: "
          f"{sum(v == 'sentinel' for v in leaf_report.checked.values())} by sentinel, "
          f"{sum(v == 'changed' for v in leaf_report.checked.values())} by changed output; "
          f"{helm.renders} helm template runs this session")


# --- objects the rendered workloads mount or read -------------------------------------------------------------------

WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet", "Job")


def referenced_objects(doc: dict) -> Iterator[tuple[str, str, bool]]:
    """(kind, name, optional) of every ConfigMap and Secret a workload's pods mount or read."""
    pod = doc["spec"]["template"]["spec"]
    for volume in pod.get("volumes") or ():
        for kind, source, name_key in (("ConfigMap", "configMap", "name"), ("Secret", "secret", "secretName")):
            if source in volume:
                yield kind, volume[source][name_key], bool(volume[source].get("optional"))
        for projected in (volume.get("projected") or {}).get("sources") or ():
            for kind, source in (("ConfigMap", "configMap"), ("Secret", "secret")):
                if source in projected:
                    yield kind, projected[source]["name"], bool(projected[source].get("optional"))
    for container in [*pod.get("containers", ()), *pod.get("initContainers", ())]:
        for env in container.get("env") or ():
            for kind, ref in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                if ref in (env.get("valueFrom") or {}):
                    yield kind, env["valueFrom"][ref]["name"], bool(env["valueFrom"][ref].get("optional"))
        for source in container.get("envFrom") or ():
            for kind, ref in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                if ref in source:
                    yield kind, source[ref]["name"], bool(source[ref].get("optional"))


def pre_install_hook_names(chart: Rendered) -> set[str]:
    """Words in the command lines of the chart's pre-install hook Jobs (`--secret X`, `--secret-name=X`)."""
    words = set()
    for job in chart.of_kind("Job"):
        if "pre-install" in (job["metadata"].get("annotations") or {}).get("helm.sh/hook", ""):
            for container in job["spec"]["template"]["spec"]["containers"]:
                for word in [*(container.get("command") or ()), *(container.get("args") or ())]:
                    words |= {word, word.partition("=")[2]}
    return words


@pytest.mark.parametrize("stack", STACKS)
def test_every_configmap_and_secret_a_chart_workload_needs_exists(stack, rendered):
    """A pod whose ConfigMap or Secret is missing never starts: each is rendered by the chart, planned by us in the
    release namespace, or written by a pre-install hook Job of the chart that names it (webhook certificates;
    helm.v3.Release runs hooks)."""
    plan, charts = rendered[stack]
    missing = set()
    for chart in charts.values():
        present = {(d["kind"], d["metadata"]["name"]) for d in chart.docs}
        present |= {("Secret", name) for name in pre_install_hook_names(chart)}
        present |= {(r.type.rsplit(":", 1)[-1], r.inputs["metadata"]["name"]) for r in plan.resources
                    if r.type.startswith("kubernetes:core/v1:")
                    and (r.inputs.get("metadata") or {}).get("namespace") == chart.namespace}
        for doc in chart.docs:
            if doc["kind"] in WORKLOADS:
                for kind, name, optional in referenced_objects(doc):
                    if not optional and (kind, name) not in present:
                        missing.add((chart.chart, kind, name))
    assert not missing, sorted(missing)


# --- the system pool ----------------------------------------------------------------------------------------------

POD_OWNERS = ("Deployment", "StatefulSet", "Job", "CronJob", "DaemonSet")


def pod_spec(doc: dict) -> dict:
    """The pod spec a workload (or a Prometheus/Alertmanager the operator turns into one) runs its pods with."""
    if doc["kind"] in ("Prometheus", "Alertmanager"):
        return doc["spec"]
    spec = doc["spec"]["jobTemplate"]["spec"] if doc["kind"] == "CronJob" else doc["spec"]
    return spec["template"]["spec"]


def gpu_nodes_only(kind: str, spec: dict) -> bool:
    """A pod that selects GPU pool nodes (our pool or fabric label), or a GPU node agent (a DaemonSet tolerating the
    GPU taint, such as the NFD worker): it has nothing to do on the system pool."""
    affinity = json.dumps(spec.get("affinity") or {})
    return (bool({POOL_LABEL, FABRIC_LABEL} & set(spec.get("nodeSelector") or {})) or FABRIC_LABEL in affinity
            or kind == "DaemonSet" and tolerates(spec.get("tolerations") or [], "nvidia.com/gpu", "NoSchedule"))


@pytest.mark.parametrize("stack", [*STACKS, *VARIANTS])
def test_every_platform_pod_tolerates_the_system_pool(stack, rendered):
    # Every cloud's system pool is tainted (EKS node group taints, AKS nodeTaints, GKE node pool taints, OKE
    # --register-with-taints): each workload every chart renders, and each the plan creates itself, must tolerate it
    # or it never schedules (a DaemonSet: never covers those nodes), unless it has GPU nodes only to run on.
    plan, charts = rendered[stack]
    assert (SYSTEM_TAINT.key, SYSTEM_TAINT.effect) in planned_node_taints(plan)
    docs = [(chart, doc) for chart, r in charts.items() for doc in r.docs]
    docs += [("plan", r.inputs) for r in plan.resources if r.type.startswith(("kubernetes:apps/", "kubernetes:batch/"))]
    docs = [(chart, {"kind": doc.get("kind") or "", **doc}) for chart, doc in docs]
    missing = []
    for chart, doc in docs:
        if doc["kind"] not in (*POD_OWNERS, "Prometheus", "Alertmanager"):
            continue
        spec = pod_spec(doc)
        if not gpu_nodes_only(doc["kind"], spec) and not tolerates(spec.get("tolerations") or [], SYSTEM_TAINT.key,
                                                                 SYSTEM_TAINT.effect):
            missing.append(f"{chart}: {doc['kind']} {doc['metadata']['name']}")
    assert missing == []
