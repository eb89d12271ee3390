"""The observability layer in offline plans: Prometheus release or existing-Prometheus mode, rule and monitor objects
against the upstream CRDs, core objects against Kubernetes 1.33, the dashboard, and the opt-in reclaimer."""
from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from components.clouds.facts import DEFAULT_KUBERNETES_VERSION
from components.config import split_namespace, validate
from components.gpu.dcgm import METRICS
from components.observability import dashboard as dash
from components.observability.prometheus import CHART_VERSION
from components.observability.reclaimer.component import IMAGE, SCRIPT
from components.observability.rules import alert_groups, record_names, recording_groups
from gpu_platform.engine.plan import read_stack_config, stack_path

from support.paths import ROOT, STACKS, strict_schema, upstream
from support.plans import shared_plan

RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
RELEASE = "kubernetes:helm.sh/v3:Release"
CRDS = {RULE: "prometheus-operator/crds/monitoring.coreos.com_prometheusrules.yaml",
        MONITOR: "prometheus-operator/crds/monitoring.coreos.com_servicemonitors.yaml"}
CORE_TYPES = ("Namespace", "ConfigMap", "ServiceAccount", "ClusterRole", "RoleBinding", "CronJob")
RECLAIM_ON = {"prometheus": {"install": True}, "reclaim": {"enabled": True}}


def stack_config(stack: str) -> dict:
    return read_stack_config(stack_path(stack, None)[1])


def adopt(stack: str) -> dict:
    """The stack on an existing cluster: same in-cluster layers, no cloud resources."""
    cluster = stack_config(stack)["gpu-platform:cluster"]
    return {"gpu-platform:cluster": {**cluster, "existingKubeconfig": "apiVersion: v1\nkind: Config\n"}}


def with_reclaim(stack: str, teams: tuple[str, ...], **reclaim) -> dict:
    raw = stack_config(stack)
    observability = {**raw.get("gpu-platform:observability", {}),
                     "reclaim": {"enabled": True, **reclaim}}
    team_list = [{**t, "reclaim": t["name"] in teams} for t in raw["gpu-platform:teams"]]
    return {**adopt(stack), "gpu-platform:observability": observability, "gpu-platform:teams": team_list}


def validated(stack: str, overrides: dict):
    raw, _ = split_namespace({**stack_config(stack), **overrides})
    return validate(raw)


@pytest.fixture(scope="module")
def plans():
    """Each example stack, adopted, planned once; plus variants for reclaim and an existing Prometheus."""
    variants = {stack: adopt(stack) for stack in STACKS}
    variants["aws-prod+reclaim"] = with_reclaim("aws-prod", ("research",))
    variants["gcp-dev+reclaim"] = with_reclaim("gcp-dev", ("alpha", "beta"), dryRun=False, schedule="@hourly")
    variants["aws-dev+existing"] = {**adopt("aws-dev"), "gpu-platform:observability": {
        "prometheus": {"install": False, "namespace": "obs", "releaseLabel": "prom",
                       "url": "http://prometheus.obs.svc:9090"}, "reclaim": {"enabled": True}},
        "gpu-platform:teams": [{"name": "sandbox", "quotas": {"l4-dev": 2}, "reclaim": True}]}
    variants["aws-dev+nodcgm"] = {**adopt("aws-dev"), "gpu-platform:observability": {"dcgm": False}}
    result = {}
    for name, overrides in variants.items():
        stack = name.split("+")[0]
        result[name] = (shared_plan(stack, overrides), validated(stack, overrides))
    return result


def one(plan, type_: str, name: str | None = None):
    found = [r for r in plan.resources if r.type == type_ and (name is None or r.name == name)]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def crd_schema(type_: str) -> dict:
    crd = yaml.safe_load(upstream(CRDS[type_]).read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return strict_schema(version["schema"]["openAPIV3Schema"])


def upstream_dcgm_fields() -> set[str]:
    """Every field named in dcgm-exporter's CSVs, enabled or commented out."""
    names = set()
    for csv in ("dcgm-exporter/etc/default-counters.csv", "dcgm-exporter/etc/dcp-metrics-included.csv"):
        names |= set(re.findall(r"^#?\s*(DCGM_FI_[A-Z0-9_]+)\s*,", upstream(csv).read_text(), re.M))
    return names


def metric_names(expr: str) -> set[str]:
    """Series names a PromQL expression reads: identifiers that are not functions, keywords, labels or numbers."""
    expr = re.sub(r"\{[^}]*\}|\[[^]]*\]|\"[^\"]*\"", " ", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    expr = re.sub(r"\b\d+(\.\d+)?(e\d+)?\b", " ", expr)
    names = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*(?!\s*\(|[A-Za-z0-9_:])", expr))
    return names - {"and", "or", "unless", "bool", "offset"}


def test_metric_names_sees_only_series():
    assert metric_names('max by (Hostname) (rate(DCGM_FI_DEV_POWER_VIOLATION[10m]) / 1e9) > on (node) x:y:z') == {
        "DCGM_FI_DEV_POWER_VIOLATION", "x:y:z"}


def all_expressions(config) -> list[str]:
    groups = recording_groups(config) + alert_groups(config)
    return [r["expr"] for g in groups for r in g["rules"]] + dash.expressions(dash.dashboard(config))


# --- Prometheus ---------------------------------------------------------------------------------------------


def test_kube_prometheus_stack_is_pinned_and_selects_our_label(plans):
    plan, config = plans["aws-prod"]
    release = one(plan, RELEASE, "prometheus-release")
    inputs = release.inputs
    assert (inputs["chart"], inputs["version"], inputs["repositoryOpts"]["repo"], inputs["name"],
            inputs["namespace"]) == ("kube-prometheus-stack", CHART_VERSION,
                                     "https://prometheus-community.github.io/helm-charts", "kube-prometheus-stack",
                                     "monitoring")
    spec = inputs["values"]["prometheus"]["prometheusSpec"]
    selector = {"matchLabels": {"release": "kube-prometheus-stack"}}
    assert spec["ruleSelector"] == spec["serviceMonitorSelector"] == spec["podMonitorSelector"] == selector
    assert not any(key.endswith("NilUsesHelmValues") for key in spec)  # unread next to explicit selectors
    values = inputs["values"]
    assert values["kubeStateMetrics"] == {"enabled": True}
    assert values["kube-state-metrics"]["metricLabelsAllowlist"] == ["nodes=[gpu-platform.io/pool]"]
    assert values["grafana"]["sidecar"]["dashboards"] == {"enabled": True, "label": "grafana_dashboard",
                                                          "labelValue": "1"}
    namespace = one(plan, "kubernetes:core/v1:Namespace", "prometheus-namespace")
    assert namespace.inputs["metadata"]["name"] == "monitoring"
    assert namespace.urn in release.options["dependsOn"]
    assert plan.outputs["observability"]["prometheusUrl"] == (
        "http://kube-prometheus-stack-prometheus.monitoring.svc:9090")


def test_existing_prometheus_installs_nothing_and_is_targeted_by_labels(plans):
    plan, _ = plans["aws-dev+existing"]
    assert [r.name for r in plan.of_type(RELEASE) if r.name.startswith("prometheus")] == []
    assert [r.name for r in plan.of_type("kubernetes:core/v1:Namespace") if r.name == "prometheus-namespace"] == []
    for obj in plan.of_type(RULE) + plan.of_type(MONITOR):
        assert obj.inputs["metadata"]["namespace"] == "obs"
        assert obj.inputs["metadata"]["labels"]["release"] == "prom"
    env = {e["name"]: e["value"] for e in one(plan, "kubernetes:batch/v1:CronJob").inputs["spec"]["jobTemplate"][
        "spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["RECLAIM_PROMETHEUS_URL"] == "http://prometheus.obs.svc:9090"


def test_monitoring_objects_wait_for_prometheus_and_the_scheduler(plans):
    plan, _ = plans["aws-prod"]
    release = one(plan, RELEASE, "prometheus-release")
    monitoring = one(plan, "gpu-platform:observability:GpuMonitoring")
    assert release.urn in monitoring.options["dependsOn"]
    for rule in plan.of_type(RULE):
        assert release.urn in rule.options["dependsOn"]
    schedulers = [r.urn for r in plan.of_type(RELEASE) if r.name == "kueue-release"]
    assert set(schedulers) <= set(monitoring.options["dependsOn"])


def test_every_observability_object_uses_the_clusters_provider():
    from gpu_platform.engine.plan import run_program

    registrations, _ = run_program("aws-dev", {**stack_config("aws-dev"), **with_reclaim("aws-dev", ("sandbox",))})
    (provider,) = [r.urn for r in registrations if r.type == "pulumi:providers:kubernetes"]
    tops = {r.urn for r in registrations if r.type.startswith("gpu-platform:observability:")}
    owned = [r for r in registrations if r.parent in tops and r.type.startswith("kubernetes:")]
    assert len(owned) >= 12
    assert all(r.provider.startswith(provider + "::") for r in owned)


# --- rules and monitors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_rule_objects_carry_the_selector_and_the_rules_module(plans, stack):
    plan, config = plans[stack]
    recording = one(plan, RULE, "gpu-monitoring-recording-rules").inputs
    alerts = one(plan, RULE, "gpu-monitoring-alerts").inputs
    for obj in (recording, alerts):
        assert obj["metadata"]["labels"] == {"release": "kube-prometheus-stack", "app.kubernetes.io/part-of":
                                             "gpu-platform"}
        assert obj["metadata"]["namespace"] == "monitoring"
    assert recording["spec"]["groups"] == recording_groups(config)
    assert alerts["spec"]["groups"] == alert_groups(config)


@pytest.mark.parametrize("variant", [*STACKS, "aws-prod+reclaim", "aws-dev+existing", "aws-dev+nodcgm"])
def test_prometheus_rules_and_service_monitors_match_the_upstream_crds(plans, variant):
    plan, _ = plans[variant]
    objects = plan.of_type(RULE) + plan.of_type(MONITOR)
    assert len(objects) == 3
    for obj in objects:
        jsonschema.validate(obj.inputs, crd_schema(obj.type))


def test_crd_check_rejects_a_misspelled_field(plans):
    monitor = one(plans["aws-prod"][0], MONITOR).inputs
    broken = {**monitor, "spec": {**monitor["spec"], "endpoints": [{**monitor["spec"]["endpoints"][0],
                                                                     "bearerTokenFiles": "x"}]}}
    with pytest.raises(jsonschema.ValidationError, match="bearerTokenFiles"):
        jsonschema.validate(broken, crd_schema(MONITOR))


def test_scheduler_service_monitors(plans):
    kueue = one(plans["aws-prod"][0], MONITOR).inputs["spec"]
    assert kueue["namespaceSelector"] == {"matchNames": ["kueue-system"]}
    assert kueue["selector"]["matchLabels"] == {"app.kubernetes.io/name": "kueue",
                                                "control-plane": "controller-manager"}
    assert kueue["endpoints"][0]["port"] == "https" and kueue["endpoints"][0]["scheme"] == "https"
    volcano = one(plans["gcp-dev"][0], MONITOR).inputs["spec"]
    assert volcano == {"namespaceSelector": {"matchNames": ["volcano-system"]},
                       "selector": {"matchLabels": {"app": "volcano-scheduler"}},
                       "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}]}


def test_every_alert_is_documented_and_routable(plans):
    _, config = plans["aws-prod"]
    docs = (ROOT / "docs" / "observability.md").read_text()
    headings = {h.strip().lower() for h in re.findall(r"^#+ (.+)$", docs, re.M)}
    for group in alert_groups(config) + alert_groups(plans["gcp-dev"][1]):
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in ("critical", "warning", "info")
            annotations = rule["annotations"]
            assert set(annotations) == {"summary", "description", "runbook", "runbook_url"}
            assert all(len(text) > 20 for text in annotations.values()), rule["alert"]
            assert annotations["runbook_url"] == f"docs/observability.md#{rule['alert'].lower()}"
            assert rule["alert"].lower() in headings, f"docs/observability.md has no heading {rule['alert']}"


def test_hoarding_alert_names_team_namespace_pod_and_pool(plans):
    _, config = plans["aws-prod"]
    (rule,) = [r for g in alert_groups(config) for r in g["rules"] if r.get("alert") == "GPUIdleAllocated"]
    assert rule["for"] == "30m"
    assert rule["expr"] == "pod:gpu_platform_idle_gpus:sum > 0"
    (idle,) = [r for g in recording_groups(config) for r in g["rules"] if r.get("record") == rule["expr"][:-4]]
    assert "< 0.05" in idle["expr"]
    for label in ("team", "namespace", "pod", "pool"):
        assert f"$labels.{label}" in rule["annotations"]["summary"] + rule["annotations"]["description"]


def test_slo_thresholds_follow_the_config(plans):
    overrides = {**adopt("aws-dev"), "gpu-platform:observability": {
        "slo": {"minUtilization": 0.7, "idleMinutes": 45, "pendingMinutes": 120}}}
    config = validated("aws-dev", overrides)
    rules = {r.get("record") or r["alert"]: r for g in recording_groups(config) + alert_groups(config)
             for r in g["rules"]}
    assert rules["namespace:gpu_platform_utilization_below_slo:bool"]["expr"].endswith("< bool 0.7")
    assert rules["GPUIdleAllocated"]["for"] == "45m"
    assert "> 7200" in rules["GPUPodPendingTooLong"]["expr"]
    assert rules["GPUWorkloadsPendingTooLong"]["for"] == "120m"


def test_without_dcgm_only_allocation_and_queue_rules_remain(plans):
    plan, config = plans["aws-dev+nodcgm"]
    groups = [g for r in plan.of_type(RULE) for g in r.inputs["spec"]["groups"]]
    assert sorted(g["name"] for g in groups) == ["gpu-platform.gpus", "gpu-platform.kueue", "gpu-platform.queues"]
    assert not [e for e in all_expressions(config) if "DCGM_" in e]


# --- DCGM metrics ---------------------------------------------------------------------------------------------


def test_every_dcgm_field_used_exists_upstream_and_is_enabled_by_the_gpu_layer(plans):
    _, config = plans["aws-prod"]
    used = set(re.findall(r"DCGM_[A-Z0-9_]+", "\n".join(all_expressions(config))))
    assert {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
            "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_VIOLATION"} <= used
    assert used - upstream_dcgm_fields() == set()
    assert used - {name for name, _, _ in METRICS} == set()


def test_utilization_never_comes_from_gpu_util(plans):
    _, config = plans["aws-prod"]
    assert not [e for e in all_expressions(config) if "DCGM_FI_DEV_GPU_UTIL" in e]


# --- dashboard ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["aws-prod", "gcp-dev"])
def test_dashboard_config_map_and_its_queries(plans, stack):
    plan, config = plans[stack]
    config_map = one(plan, "kubernetes:core/v1:ConfigMap", "gpu-monitoring-dashboard").inputs
    assert config_map["metadata"]["labels"] == {"grafana_dashboard": "1"}
    assert config_map["metadata"]["namespace"] == "monitoring"
    model = json.loads(config_map["data"][dash.FILE])
    assert model == json.loads(json.dumps(dash.dashboard(config)))
    titles = " | ".join(p["title"] for p in model["panels"])
    for words in ("per team: allocated vs busy", "per pool", "Idle allocated GPUs", "XID",
                  "Admission wait" if config.scheduler.kind == "kueue" else "Job scheduling latency"):
        assert words in titles
    ids = [p["id"] for p in model["panels"]]
    assert len(ids) == len(set(ids))
    groups = recording_groups(config)
    known = set(record_names(groups)) | {name for name, _, _ in METRICS} | {"up"}
    for expr in dash.expressions(model):
        assert metric_names(expr) <= known, (expr, metric_names(expr) - known)


# --- reclaimer ------------------------------------------------------------------------------------------------


def reclaimer_objects(plan) -> dict[str, dict]:
    component = one(plan, "gpu-platform:observability:Reclaimer")
    return {r.type.split(":")[-1]: r.inputs for r in plan.resources if r.parent == component.urn}


def test_reclaimer_is_opt_in(plans):
    for stack in STACKS:
        assert plans[stack][0].of_type("gpu-platform:observability:Reclaimer") == []
        assert plans[stack][0].outputs["observability"]["reclaim"]["enabled"] is False


def test_reclaimer_cron_job_is_a_dry_run_by_default(plans):
    plan, _ = plans["aws-prod+reclaim"]
    objects = reclaimer_objects(plan)
    assert set(objects) == {"Namespace", "ServiceAccount", "ClusterRole", "RoleBinding", "ConfigMap", "CronJob"}
    assert objects["Namespace"]["metadata"]["name"] == "gpu-platform-system"
    cron = objects["CronJob"]
    assert cron["metadata"]["namespace"] == "gpu-platform-system"
    assert cron["spec"]["schedule"] == "*/10 * * * *" and cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == IMAGE and "@sha256:" in IMAGE
    assert container["command"] == ["python3", "-I", "/opt/gpu-reclaimer/job.py"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {"RECLAIM_PROMETHEUS_URL": "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
                   "RECLAIM_SCHEDULER": "kueue", "RECLAIM_NAMESPACES": "research", "RECLAIM_DRY_RUN": "true",
                   "RECLAIM_ALERT": "GPUIdleAllocated"}
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                            "capabilities": {"drop": ["ALL"]}}
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["serviceAccountName"] == "gpu-reclaimer"
    assert objects["ConfigMap"]["data"] == {"job.py": SCRIPT.read_text()}
    assert plan.outputs["observability"]["reclaim"] == {"enabled": True, "dryRun": True, "teams": ["research"]}


def test_reclaimer_acting_for_real_is_explicit(plans):
    plan, _ = plans["gcp-dev+reclaim"]
    cron = reclaimer_objects(plan)["CronJob"]
    assert cron["spec"]["schedule"] == "@hourly"
    env = {e["name"]: e["value"] for e in cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0][
        "env"]}
    assert (env["RECLAIM_DRY_RUN"], env["RECLAIM_SCHEDULER"]) == ("false", "volcano")


@pytest.mark.parametrize("variant, scheduler_rules, teams", [
    ("aws-prod+reclaim", [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"]},
                          {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["list", "patch"]}],
     ["research"]),
    ("gcp-dev+reclaim", [{"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["get"]},
                         {"apiGroups": ["bus.volcano.sh"], "resources": ["commands"], "verbs": ["create"]}],
     ["alpha", "beta"]),
])
def test_reclaimer_rbac_is_least_privilege(plans, variant, scheduler_rules, teams):
    plan = plans[variant][0]
    objects = reclaimer_objects(plan)
    # Namespaced resources only, and granted only in the opted-in namespaces: nothing cluster-wide.
    assert objects["ClusterRole"]["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        *scheduler_rules,
    ]
    component = one(plan, "gpu-platform:observability:Reclaimer")
    children = [r for r in plan.resources if r.parent == component.urn]
    assert [r for r in children if r.type.endswith(":ClusterRoleBinding")] == []
    bindings = [r for r in children if r.type.endswith(":RoleBinding")]
    assert [b.inputs["metadata"] for b in bindings] == [{"name": "gpu-reclaimer", "namespace": t} for t in teams]
    for binding in bindings:
        assert binding.inputs["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                             "name": "gpu-reclaimer"}
        assert binding.inputs["subjects"] == [{"kind": "ServiceAccount", "name": "gpu-reclaimer",
                                               "namespace": "gpu-platform-system"}]
        # Bound after the team namespace exists.
        (namespace,) = [r for r in plan.of_type("kubernetes:core/v1:Namespace")
                        if r.inputs["metadata"]["name"] == binding.inputs["metadata"]["namespace"]]
        assert namespace.urn in binding.options["dependsOn"]


@pytest.mark.parametrize("variant", ["aws-prod", "aws-prod+reclaim", "gcp-dev+reclaim", "aws-dev+existing"])
def test_core_objects_are_valid_kubernetes_1_33(plans, variant):
    plan, _ = plans[variant]
    tops = {r.urn for r in plan.resources if r.type.startswith("gpu-platform:observability:")}
    core = [r for r in plan.resources if r.parent in tops and r.type.split(":")[-1] in CORE_TYPES]
    assert core
    for obj in core:
        kubernetes_validate.validate(obj.inputs, DEFAULT_KUBERNETES_VERSION, strict=True)


def test_reclaimer_script_is_standard_library_only():
    imported = set(re.findall(r"^(?:from|import) ([a-z_.]+)", SCRIPT.read_text(), re.M))
    assert {name.split(".")[0] for name in imported} <= {
        "__future__", "json", "os", "socket", "ssl", "sys", "urllib", "dataclasses", "datetime", "typing"}
    assert Path(SCRIPT).name == "job.py"


def test_only_opted_in_team_namespaces_carry_the_reclaim_label(plans):
    plan, _ = plans["aws-prod+reclaim"]
    labels = {r.inputs["metadata"]["name"]: r.inputs["metadata"].get("labels", {})
              for r in plan.of_type("kubernetes:core/v1:Namespace")}
    assert labels["research"]["gpu-platform.io/reclaim"] == "enabled"
    assert "gpu-platform.io/reclaim" not in labels["applied"]
    assert "gpu-platform.io/reclaim" not in labels["serving"]
    assert not any("gpu-platform.io/reclaim" in v for v in
                   (r.inputs["metadata"].get("labels", {}) for r in plans["aws-prod"][0].of_type(
                       "kubernetes:core/v1:Namespace")))


def test_grafana_admin_password_is_generated_and_never_the_chart_default(plans):
    plan, _ = plans["aws-prod"]
    values = next(r for r in plan.of_type("kubernetes:helm.sh/v3:Release")
                  if r.inputs["chart"] == "kube-prometheus-stack").inputs["values"]
    assert values["grafana"]["admin"] == {"existingSecret": "grafana-admin", "userKey": "admin-user",
                                          "passwordKey": "admin-password"}
    secret = next(r for r in plan.of_type("kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "grafana-admin")
    assert secret.inputs["metadata"]["namespace"] == "monitoring"
    assert secret.inputs["stringData"] == "[secret]"  # the generated password makes the whole map secret
    assert [r.inputs["length"] for r in plan.of_type("random:index/randomPassword:RandomPassword")] == [32]
    assert "offline-" not in json.dumps(plan.to_json())
