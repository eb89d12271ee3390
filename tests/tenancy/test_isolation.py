"""Tenant isolation and least privilege in the plan: Pod Security labels, default-deny NetworkPolicies, the per-pool
GPU admission policy, pod-template priority ceilings, the Grafana admin Secret's namespace, and every role we grant."""
from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from components.clouds.facts import DEFAULT_KUBERNETES_VERSION
from components.config import ConfigError, validate
from components.scheduling.framework_catalog import BUILT_IN, FRAMEWORKS
from components.config.priority_levels import forbidden_classes
from components.scheduling.priorities import CEILING_POLICY, TEMPLATE_PRIORITY_PATHS, uses_forbidden, wrapped_rule
from components.tenancy.isolation import PRIVATE_V4, network_policies, team_pod_security
from components.tenancy.network_guard import POLICY as NETWORK_POLICY_GUARD
from components.tenancy.pool_admission import POLICY as POOL_POLICY, team_pools
from components.tenancy.queue_gate import POLICY as QUEUE_GATE
from gpu_platform.engine import plan_stack

from support.paths import STACKS, upstream
from support.validation import problems
from support.stacks import by_name, planned, stack_config, whole

PSA = "pod-security.kubernetes.io"
NETPOL = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
K8S_SCHEMAS = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / f"v{DEFAULT_KUBERNETES_VERSION}.0-local-strict"


def teams_of(stack: str) -> list[dict]:
    return stack_config(stack)["gpu-platform:teams"]


def namespaces(plan) -> dict[str, dict]:
    return {r.inputs["metadata"]["name"]: r.inputs["metadata"] for r in plan.of_type("kubernetes:core/v1:Namespace")}


def with_reclaim(stack: str) -> dict:
    teams = [{**t, "reclaim": True} for t in teams_of(stack)]
    return {"gpu-platform:teams": teams, "gpu-platform:observability": {"reclaim": {"enabled": True}}}


# --- Pod Security Admission -------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_team_namespaces_enforce_baseline_and_audit_restricted_at_the_cluster_minor(stack):
    plan = planned(stack, "kueue")
    version = "v" + str((stack_config(stack)["gpu-platform:cluster"]).get("kubernetesVersion", DEFAULT_KUBERNETES_VERSION))
    for team in teams_of(stack):
        labels = namespaces(plan)[team["name"]]["labels"]
        # fabric-sidecar: PSA admits all, the team's own admission policy holds baseline (test_fabric_baseline.py).
        level = team.get("podSecurity", "baseline").replace("fabric-sidecar", "privileged")
        assert {k: v for k, v in labels.items() if k.startswith(PSA)} == {
            f"{PSA}/enforce": level, f"{PSA}/enforce-version": version,
            f"{PSA}/audit": "restricted", f"{PSA}/audit-version": version,
            f"{PSA}/warn": "restricted", f"{PSA}/warn-version": version}


def test_pod_security_version_follows_the_cluster_version(raw):
    raw["cluster"]["kubernetesVersion"] = "1.32"
    config = validate(raw)
    labels = team_pod_security(config, config.teams[0])
    assert {labels[f"{PSA}/{mode}-version"] for mode in ("enforce", "audit", "warn")} == {"v1.32"}


def test_pod_security_level_is_per_team_and_privileged_is_warned(raw):
    raw["teams"] = [{**raw["teams"][0], "podSecurity": "restricted"},
                    *({**t, "podSecurity": "privileged"} for t in raw["teams"][1:])]
    config = validate(raw)
    assert [team_pod_security(config, t)[f"{PSA}/enforce"] for t in config.teams] == [
        "restricted", *["privileged"] * (len(config.teams) - 1)]
    assert all(team_pod_security(config, t)[f"{PSA}/audit"] == "restricted" for t in config.teams)
    warned = [w for w in config.warnings if ".podSecurity: " in w]
    assert [w.split(":")[0] for w in warned] == [f"teams[{i}].podSecurity" for i in range(1, len(config.teams))]
    assert all("GPU014 fails the namespace unless an exemption" in w for w in warned)


def test_unknown_pod_security_level_lists_the_allowed(raw):
    raw["teams"] = [{**raw["teams"][0], "podSecurity": "none"}, *raw["teams"][1:]]
    with pytest.raises(ConfigError) as exc:
        validate(raw)
    (problem,) = [p for p in exc.value.problems if p.path == "teams[0].podSecurity"]
    assert "allowed: baseline, restricted, fabric-sidecar, privileged" in problem.message


def test_platform_namespaces_say_what_they_allow_and_are_not_team_namespaces():
    plan = plan_stack("aws-prod", config_overrides=with_reclaim("aws-prod"))
    found = namespaces(plan)
    # Host agents (GPU driver, device plugin, node-exporter) need privilege; the reclaimer runs restricted.
    assert found["gpu-operator"]["labels"][f"{PSA}/enforce"] == "privileged"
    assert found["monitoring"]["labels"] == {f"{PSA}/enforce": "privileged"}
    assert found["gpu-platform-system"]["labels"][f"{PSA}/enforce"] == "restricted"
    for platform in ("gpu-operator", "monitoring", "gpu-platform-system"):
        assert "gpu-platform.io/team" not in found[platform].get("labels", {})


# --- NetworkPolicies --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_team_namespaces_deny_by_default_and_allow_only_what_is_listed(stack):
    plan = planned(stack, "kueue")
    policies = by_name(plan, "NetworkPolicy")
    prometheus = (stack_config(stack).get("gpu-platform:observability") or {}).get("prometheus", {}).get(
        "namespace", "monitoring")
    for team in teams_of(stack):
        name = team["name"]
        assert {k.split("/")[1] for k in policies if k.startswith(f"{name}/")} == {
            "default-deny", "allow-same-namespace", "allow-dns", "allow-prometheus-scrape", "allow-internet-egress"}
        assert policies[f"{name}/default-deny"]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
        dns = whole(policies[f"{name}/allow-dns"]["spec"])
        assert dns["egress"] == [{
            "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]
        same = policies[f"{name}/allow-same-namespace"]["spec"]
        assert same["ingress"] == [{"from": [{"podSelector": {}}]}]
        assert same["egress"] == [{"to": [{"podSelector": {}}]}]
        scrape = policies[f"{name}/allow-prometheus-scrape"]["spec"]
        assert scrape["ingress"] == [{"from": [{"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": prometheus}}}]}] and scrape["policyTypes"] == ["Ingress"]


def test_internet_egress_never_reaches_private_or_metadata_addresses():
    spec = by_name(planned("aws-prod", "kueue"), "NetworkPolicy")["research/allow-internet-egress"]["spec"]
    (rule,) = spec["egress"]
    v4, v6 = (peer["ipBlock"] for peer in rule["to"])
    assert v4["cidr"] == "0.0.0.0/0" and set(v4["except"]) == set(PRIVATE_V4)
    assert "169.254.0.0/16" in v4["except"] and "10.0.0.0/8" in v4["except"]
    assert v6 == {"cidr": "::/0", "except": ["fc00::/7", "fe80::/10"]}
    assert "ports" not in rule and spec["policyTypes"] == ["Egress"]


def test_egress_none_drops_only_the_internet_allowance(raw):
    raw["teams"][0]["egress"] = "none"
    config = validate(raw)
    assert "allow-internet-egress" not in network_policies(config, config.teams[0])
    assert "allow-internet-egress" in network_policies(config, config.teams[1])
    assert set(network_policies(config, config.teams[0])) == {
        "default-deny", "allow-same-namespace", "allow-dns", "allow-prometheus-scrape"}


def test_egress_must_be_one_of_the_choices(raw):
    raw["teams"][1]["egress"] = "everywhere"
    raw["teams"][0]["egress"] = 3
    found = problems(raw)
    assert found["teams[1].egress"] == "'everywhere' is not allowed; allowed: internet, none"
    assert found["teams[0].egress"] == "must be a string; allowed: internet, none; got 3"


def test_scrape_allowance_follows_the_configured_prometheus_namespace(raw):
    raw["observability"] = {"prometheus": {"namespace": "obs"}}
    config = validate(raw)
    scrape = network_policies(config, config.teams[0])["allow-prometheus-scrape"]
    assert scrape["ingress"][0]["from"][0]["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "obs"}}


@pytest.mark.parametrize("stack", STACKS)
def test_network_policies_are_valid_kubernetes_1_33(stack):
    plan = planned(stack, "volcano")
    found = plan.of_type(NETPOL)
    assert len(found) == 5 * len(teams_of(stack))
    for policy in found:
        kubernetes_validate.validate(whole(policy.inputs), DEFAULT_KUBERNETES_VERSION, strict=True)


# --- per-pool GPU caps ------------------------------------------------------------------------------------------


def pool_policy(plan) -> tuple[dict, dict]:
    return (by_name(plan, "ValidatingAdmissionPolicy")[POOL_POLICY]["spec"],
            by_name(plan, "ValidatingAdmissionPolicyBinding")[POOL_POLICY]["spec"])


@pytest.mark.parametrize("kind", ["kueue", "volcano"])
def test_gpu_pods_must_be_gated_or_pinned_to_their_teams_pools(kind):
    plan = planned("aws-prod", kind)
    spec, binding = pool_policy(plan)
    assert binding == {"policyName": POOL_POLICY, "validationActions": ["Deny"]}
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"] == {
        "namespaceSelector": {"matchExpressions": [{"key": "gpu-platform.io/team", "operator": "Exists"}]},
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                           "resources": ["pods", "pods/ephemeralcontainers"], "scope": "Namespaced"}]}
    variables = {v["name"]: v["expression"] for v in spec["variables"]}
    # The table is the teams' quotas: research may use h100-train and l4-notebooks, serving only a100-infer.
    assert json.loads(variables["teamPools"]) == {"applied": ["a100-infer", "h100-train"],
                                                  "research": ["h100-train", "l4-notebooks"],
                                                  "serving": ["a100-infer"]}
    assert variables["team"] == 'namespaceObject.metadata.labels["gpu-platform.io/team"]'
    assert variables["pools"] == "variables.team in variables.teamPools ? variables.teamPools[variables.team] : []"
    # GPU means any nvidia.com/ resource (GPUs, replicas, MIG slices) in limits or requests, init containers too.
    assert "object.spec.initContainers" in variables["containers"]
    assert variables["gpu"].count('r.startsWith("nvidia.com/")') == 2
    assert "c.resources.limits" in variables["gpu"] and "c.resources.requests" in variables["gpu"]
    # So does any fabric NIC in use (aws-prod's EFA pool): Kueue does not count them, so a NIC-only pod is held too.
    assert variables["nics"].count('r in ["vpc.amazonaws.com/efa"]') == 2
    assert variables["gated"] == "has(object.spec.schedulingGates) && size(object.spec.schedulingGates) > 0"
    assert variables["pool"] == ('has(object.spec.nodeSelector) && "gpu-platform.io/pool" in object.spec.nodeSelector'
                                 ' ? object.spec.nodeSelector["gpu-platform.io/pool"] : ""')
    # Checked when the pod becomes schedulable: created ungated, or its last scheduling gate removed.
    assert variables["becomesSchedulable"] == ('request.operation == "CREATE" || (has(oldObject.spec.schedulingGates) '
                                               "&& size(oldObject.spec.schedulingGates) > 0)")
    rule, reach, env = spec["validations"]
    assert rule["expression"] == ("!(variables.gpu || variables.nics || variables.hostAccess) || variables.gated || "
                                  "!variables.becomesSchedulable || variables.pool in variables.pools")
    assert variables["hostAccess"] == "variables.team in []"  # aws-prod has no privileged team
    assert rule["reason"] == "Forbidden" and "teams[].quotas" in rule["message"]
    # Every pod that can land on GPU nodes without asking for GPUs (tests/scheduling/test_pool_admission.py evaluates
    # these).
    assert json.loads(variables["gpuPools"]) == ["a100-infer", "h100-train", "l4-notebooks"]
    assert reach["expression"] == ("!variables.reachesGpuNodes || variables.gated || "
                                   "!(variables.becomesSchedulable || variables.tolerationsChanged) || "
                                   "!variables.reachesOtherPool")
    # The EKS AMI's toolkit honours NVIDIA_VISIBLE_DEVICES: envFrom is held too.
    assert env["expression"] == ("!variables.deviceEnv && "
                                 "!((variables.gpu || variables.reachesGpuNodes) && variables.openEnvFrom)")


@pytest.mark.parametrize("stack, nics", [("aws-dev", []), ("azure-prod", ["rdma/ib"]), ("gcp-prod", [])])
def test_fabric_nics_a_pod_may_not_take_outside_its_pools(stack, nics):
    spec, _ = pool_policy(planned(stack, "kueue"))
    variables = {v["name"]: v["expression"] for v in spec["variables"]}
    # GKE GPUDirect NICs come through multi-networking, not a requested resource: nothing to list there.
    assert variables["nics"].count(f"r in {json.dumps(nics)}") == 2


def test_every_pod_of_a_privileged_team_is_held_to_its_pools():
    # gcp-prod's research runs GPUDirect pods at podSecurity privileged: none of its pods may reach the system pool.
    spec, _ = pool_policy(planned("gcp-prod", "kueue"))
    variables = {v["name"]: v["expression"] for v in spec["variables"]}
    assert variables["hostAccess"] == 'variables.team in ["research"]'
    assert "variables.hostAccess" in spec["validations"][0]["expression"]


def test_the_pool_table_is_every_pool_a_team_has_a_share_of(raw):
    raw["teams"][0]["quotas"] = {"h100-train": 16, "a100-infer": 0}
    assert team_pools(validate(raw)) == {"research": ["a100-infer", "h100-train"], "serving": ["a100-infer"]}


def test_kueue_already_caps_each_pool_separately():
    """What the admission policy relies on: Kueue's per-flavor quota is the per-pool cap for admitted work."""
    queues = by_name(planned("aws-prod", "kueue"), "ClusterQueue")
    flavors = {f["name"]: f["resources"] for g in queues["research"]["spec"]["resourceGroups"] for f in g["flavors"]}
    assert set(flavors) == {"h100-train", "l4-notebooks"}
    assert {r["nominalQuota"] for r in flavors["h100-train"]} == {16}


# --- priority ceiling on pod templates --------------------------------------------------------------------------


def _framework_kind(framework: str) -> tuple[str, str]:
    builtin = {"pod": ("", "pod"), "deployment": ("apps", "deployment"), "statefulset": ("apps", "statefulset")}
    if framework in builtin:
        return builtin[framework]
    group, kind = framework.split("/")
    return group, kind


def test_every_kueue_framework_with_pod_templates_is_held_to_the_ceiling():
    covered = {(group, kind.lower()) for group, kind in TEMPLATE_PRIORITY_PATHS}
    integrations = [*BUILT_IN, *(i for f in FRAMEWORKS.values() for i in f.integrations)]
    missing = [f for f in integrations if _framework_kind(f) not in covered]
    # TrainJob has no pod template of its own: its cluster-scoped runtime has, which teams cannot write.
    assert missing == ["trainer.kubeflow.org/trainjob"]
    assert ("batch.volcano.sh", "Job") in TEMPLATE_PRIORITY_PATHS
    assert ("scheduling.volcano.sh", "PodGroup") in TEMPLATE_PRIORITY_PATHS


def test_template_rules_guard_every_step_and_search_lists_and_maps():
    assert uses_forbidden("spec.template.spec.priorityClassName") == (
        "has(object.spec) && has(object.spec.template) && has(object.spec.template.spec) && "
        "has(object.spec.template.spec.priorityClassName) && object.spec.template.spec.priorityClassName in "
        "variables.forbidden")
    assert uses_forbidden("spec.tasks.[].template.spec.priorityClassName") == (
        "has(object.spec) && has(object.spec.tasks) && object.spec.tasks.exists(x0, has(x0.template) && "
        "has(x0.template.spec) && has(x0.template.spec.priorityClassName) && x0.template.spec.priorityClassName in "
        "variables.forbidden)")
    assert uses_forbidden("spec.r.{}.template.spec.priorityClassName") == (
        "has(object.spec) && has(object.spec.r) && object.spec.r.exists(x0, has(object.spec.r[x0].template) && "
        "has(object.spec.r[x0].template.spec) && has(object.spec.r[x0].template.spec.priorityClassName) && "
        "object.spec.r[x0].template.spec.priorityClassName in variables.forbidden)")


def test_ceiling_policy_has_one_rule_per_kind_matched_by_group_and_kind():
    policy = by_name(planned("aws-prod", "kueue"), "ValidatingAdmissionPolicy")[CEILING_POLICY]["spec"]
    _, *template_rules, wrapped = policy["validations"]
    assert wrapped == wrapped_rule()
    assert len(template_rules) == len(TEMPLATE_PRIORITY_PATHS)
    for rule, ((group, kind), paths) in zip(template_rules, TEMPLATE_PRIORITY_PATHS.items()):
        assert rule["expression"].startswith(f'request.kind.group != "{group}" || request.kind.kind != "{kind}" || !(')
        for path in paths:
            assert uses_forbidden(path) in rule["expression"]
        assert kind in rule["message"]
    pytorch = next(r["expression"] for r in template_rules if '"PyTorchJob"' in r["expression"])
    assert "object.spec.runPolicy.schedulingPolicy.priorityClass in variables.forbidden" in pytorch


def _wrapper(*templates: dict) -> dict:
    return {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "spec": {"components": [{"template": t} for t in templates]}}


def _pod_spec(priority: str) -> dict:
    return {"priorityClassName": priority, "containers": [{"name": "main", "image": "registry.example/train:1"}]}


APPWRAPPER_CASES = {
    # name: (components' templates, admitted for a `normal` team)
    "job-at-its-priority": ([{"apiVersion": "batch/v1", "kind": "Job",
                              "spec": {"template": {"spec": _pod_spec("gpu-normal")}}}], True),
    "job-above": ([{"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"spec": _pod_spec("gpu-high")}}}],
                  False),
    "pod-above": ([{"apiVersion": "v1", "kind": "Pod", "spec": _pod_spec("system-node-critical")}], False),
    "second-component-above": ([{"apiVersion": "v1", "kind": "Pod", "spec": _pod_spec("gpu-low")},
                                {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {
                                    "pytorchReplicaSpecs": {"Worker": {"template": {"spec": _pod_spec("gpu-high")}}}}}],
                               False),
    "same-kind-name-other-group": ([{"apiVersion": "example.com/v1", "kind": "Job",
                                     "spec": {"template": {"spec": _pod_spec("gpu-high")}}}], False),
    "unknown-kind": ([{"apiVersion": "example.com/v1", "kind": "Trainer", "spec": {}}], False),
    "nested-appwrapper": ([_wrapper({"apiVersion": "v1", "kind": "Pod", "spec": _pod_spec("gpu-high")})], False),
}


@pytest.mark.parametrize("case", APPWRAPPER_CASES)
def test_appwrapper_components_are_read_as_the_kinds_they_wrap(case):
    celpy = pytest.importorskip("celpy", reason="cel-python (pyproject test extra) evaluates the policy's CEL")
    templates, admitted = APPWRAPPER_CASES[case]
    env = celpy.Environment()
    activation = {"object": celpy.json_to_cel(_wrapper(*templates)),
                  "request": celpy.json_to_cel({"kind": {"group": "workload.codeflare.dev", "kind": "AppWrapper"}}),
                  "variables": celpy.json_to_cel({"forbidden": forbidden_classes("normal")})}
    result = env.program(env.compile(wrapped_rule()["expression"])).evaluate(activation)
    assert bool(result) is admitted


def _resolve(schema: dict, definitions: dict) -> dict:
    while "$ref" in schema:
        schema = definitions[schema["$ref"].split("/")[-1]]
    return schema


def _walk(schema: dict, path: str, definitions: dict) -> dict:
    for step in path.split("."):
        schema = _resolve(schema, definitions)
        if step == "[]":
            schema = schema["items"]
        elif step == "{}":
            schema = schema["additionalProperties"]
        else:
            schema = schema["properties"][step]
    return _resolve(schema, definitions)


CORE_SCHEMAS = {("", "Pod"): "pod-v1", ("batch", "Job"): "job-batch-v1", ("batch", "CronJob"): "cronjob-batch-v1",
                **{("apps", k): f"{k.lower()}-apps-v1" for k in ("Deployment", "StatefulSet", "ReplicaSet",
                                                                  "DaemonSet")}}


@pytest.mark.parametrize("kind", sorted(CORE_SCHEMAS))
def test_core_template_paths_exist_in_the_kubernetes_1_33_schema(kind):
    definitions = json.loads((K8S_SCHEMAS / "_definitions.json").read_text())["$defs"]
    schema = json.loads((K8S_SCHEMAS / f"{CORE_SCHEMAS[kind]}.json").read_text())
    for path in TEMPLATE_PRIORITY_PATHS[kind]:
        assert "string" in _walk(schema, path, definitions)["type"]


@pytest.mark.parametrize("kind, crd", [(("batch.volcano.sh", "Job"), "volcano/crds/batch.volcano.sh_jobs.yaml"),
                                       (("scheduling.volcano.sh", "PodGroup"),
                                        "volcano/crds/scheduling.volcano.sh_podgroups.yaml")])
def test_volcano_template_paths_exist_in_the_upstream_crds(kind, crd):
    doc = yaml.safe_load(upstream(crd).read_text())
    (version,) = [v for v in doc["spec"]["versions"] if v.get("storage")]
    for path in TEMPLATE_PRIORITY_PATHS[kind]:
        assert _walk(version["schema"]["openAPIV3Schema"], path, {})["type"] == "string"


@pytest.mark.parametrize("kind", ["kueue", "volcano"])
def test_admission_policies_are_valid_kubernetes_1_33(kind):
    plan = planned("oci-prod", kind)
    for type_ in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        found = by_name(plan, type_)
        # Volcano gates no pods, so only Kueue stacks hold team GPU pods to its admission gate.
        gate = {QUEUE_GATE} if kind == "kueue" else set()
        assert set(found) == {CEILING_POLICY, POOL_POLICY, NETWORK_POLICY_GUARD, *gate}
        for obj in found.values():
            kubernetes_validate.validate(whole(obj), DEFAULT_KUBERNETES_VERSION, strict=True)



def test_team_network_policies_are_closed_to_every_team_group():
    """`edit` may write NetworkPolicies: the guard refuses every write by a team group in a team namespace
    (tests/cluster/test_cluster_tenancy.py shows the real server refusing it)."""
    spec = by_name(planned("aws-prod", "kueue"), "ValidatingAdmissionPolicy")[NETWORK_POLICY_GUARD]["spec"]
    assert spec["matchConstraints"] == {
        "namespaceSelector": {"matchExpressions": [{"key": "gpu-platform.io/team", "operator": "Exists"}]},
        "resourceRules": [{"apiGroups": ["networking.k8s.io"], "apiVersions": ["*"],
                           "operations": ["CREATE", "UPDATE", "DELETE"], "resources": ["networkpolicies"],
                           "scope": "Namespaced"}]}
    assert spec["variables"][0]["expression"] == ('has(request.userInfo.groups) && request.userInfo.groups.exists('
                                                  'g, g in ["applied-ml", "research-admins", "serving-oncall"])')
    assert spec["validations"][0]["expression"] == "!variables.teamIdentity"

# --- the Grafana admin Secret and least privilege ---------------------------------------------------------------


def test_a_team_cannot_be_the_monitoring_namespace(raw):
    raw["observability"] = {"prometheus": {"namespace": "research"}}
    assert problems(raw)["teams[0].name"] == (
        "'research' is observability.prometheus.namespace, a platform namespace holding the Grafana admin Secret; "
        "rename the team or move Prometheus")
    raw["observability"] = {"prometheus": {"namespace": "obs"}}
    raw["teams"][1]["name"] = "obs"
    assert "teams[1].name" in problems(raw)


@pytest.mark.parametrize("stack", STACKS)
def test_grafana_admin_secret_lives_where_no_team_role_reaches(stack):
    plan = plan_stack(stack, config_overrides=with_reclaim(stack))
    secrets = [r for r in plan.of_type("kubernetes:core/v1:Secret") if r.name.endswith("grafana-admin")]
    if not secrets:
        pytest.skip(f"{stack} installs no Grafana")
    (secret,) = secrets
    namespace = secret.inputs["metadata"]["namespace"]
    assert namespace not in {t["name"] for t in teams_of(stack)}
    assert "gpu-platform.io/team" not in namespaces(plan)[namespace].get("labels", {})
    groups = {g for t in teams_of(stack) for g in t.get("groups", [])}
    for binding in plan.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"):
        if any(s.get("kind") == "Group" and s["name"] in groups for s in binding.inputs["subjects"]):
            assert binding.inputs["metadata"]["namespace"] != namespace
            assert binding.inputs["metadata"]["namespace"] in {t["name"] for t in teams_of(stack)
                                                              if any(s["name"] in t.get("groups", [])
                                                                     for s in binding.inputs["subjects"])}


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("kind", ["kueue", "volcano"])
def test_every_role_we_create_is_least_privilege(stack, kind):
    overrides = {**with_reclaim(stack), "gpu-platform:scheduler": {
        **(stack_config(stack).get("gpu-platform:scheduler") or {}), "kind": kind}}
    plan = plan_stack(stack, config_overrides=overrides)
    roles = [r for r in plan.resources if r.type.startswith("kubernetes:rbac.authorization.k8s.io/v1:")
             and r.type.endswith((":Role", ":ClusterRole"))]
    assert roles, "the reclaimer's role at least"
    for role in roles:
        for rule in role.inputs["rules"]:
            for field in ("verbs", "resources", "apiGroups"):
                assert "*" not in rule.get(field, []), (role.name, rule)
            assert "secrets" not in rule.get("resources", []), (role.name, rule)
    # Nothing we create binds anyone cluster-wide; team groups get only `edit` and Kueue's user role, namespaced.
    assert plan.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding") == []
    groups = {g for t in teams_of(stack) for g in t.get("groups", [])}
    for binding in plan.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"):
        if any(s["name"] in groups for s in binding.inputs["subjects"]):
            assert binding.inputs["roleRef"]["name"] in {"edit", "kueue-batch-user-role"}
