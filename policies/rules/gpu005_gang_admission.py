"""GPU005: training pools are reachable only through a scheduler with gang admission."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import charts, k8s
from policies.graph import Graph
from policies.props import get, items, mapping
from policies.rule import Pending, Report, stack_rule

KUEUE, VOLCANO, KAI = charts.KUEUE, "volcano", charts.KAI
# KAI gangs through its pod-grouper, which makes a PodGroup (minMember) for every workload.
KAI_PODGROUPER = charts.KAI_PODGROUPER
KUEUE_CONFIG = charts.KUEUE_MANAGER_CONFIG
VOLCANO_CONFIG = "custom.scheduler_config_override"
# The volcano chart's own scheduler conf (v1.15.1) enables gang in its first tier.
VOLCANO_DEFAULT_PLUGINS = {"priority", "gang", "conformance", "overcommit", "drf", "predicates", "proportion",
                           "nodeorder", "binpack"}
# Kueue's defaults when the Configuration leaves them out (v0.19): every namespace but Kueue's and the system's,
# and plain Jobs only.
KUEUE_DEFAULT_NAMESPACES = {"matchExpressions": [{"key": k8s.NAME_LABEL, "operator": "NotIn",
                                                  "values": ["kube-system", "kueue-system"]}]}
KUEUE_DEFAULT_FRAMEWORKS = ["batch/job"]
# Integrations that run batch (training) jobs; pods, deployments, statefulsets, LWS and Ray clusters alone
# manage no job.
JOB_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/", "trainer.kubeflow.org/trainjob",
                  "ray.io/rayjob")
# What any tenant can create without a framework installed: a plain Job, or a bare pod requesting GPUs. Kueue must
# manage both, or the simplest workload walks past every queue, quota and gang.
ALWAYS_MANAGED = ("batch/job", "pod")


def kueue_gang(config, teams: dict | None = None) -> str | None:
    """Why this Kueue Configuration does not gang-admit every GPU job of the team namespaces, or None when it
    does."""
    if not isinstance(config, dict):
        return f"values.{KUEUE_CONFIG} is not set, so the chart's configuration (no waitForPodsReady) applies"
    wait = mapping(get(config, "waitForPodsReady"))
    # v1beta2 dropped `enable`: the block (with its required timeout) turns the feature on.
    enabled = bool(get(wait, "timeout")) if str(config.get("apiVersion", "")).endswith("v1beta2") \
        else get(wait, "enable") is True
    if not enabled:
        return "waitForPodsReady is off, so a partly started job holds its GPUs while the rest wait (kueue#2796)"
    if get(config, "manageJobsWithoutQueueName") is not True:
        return "manageJobsWithoutQueueName is not true, so a job without a queue label bypasses Kueue"
    frameworks = [str(f) for f in items(get(config, "integrations.frameworks", KUEUE_DEFAULT_FRAMEWORKS))]
    if not any(f.startswith(JOB_FRAMEWORKS) for f in frameworks):
        return (f"integrations.frameworks ({', '.join(frameworks) or 'none'}) manages no job framework, so "
                "training jobs are never queued or gang-admitted")
    left = [f for f in ALWAYS_MANAGED if f not in frameworks]
    if left:
        return (f"integrations.frameworks ({', '.join(frameworks)}) leaves {', '.join(left)} unmanaged, so a plain "
                "Job or a bare pod requesting GPUs bypasses every queue and gang")
    for field in ("managedJobsNamespaceSelector", "integrations.podOptions.namespaceSelector"):
        selector = get(config, field, KUEUE_DEFAULT_NAMESPACES if field == "managedJobsNamespaceSelector" else {})
        unmanaged = sorted(ns for ns, r in (teams or {}).items()
                           if not k8s.selects(selector, k8s.namespace_labels(ns, r)))
        if unmanaged:
            return (f"{field} does not select team namespace(s) {', '.join(unmanaged)}, so their jobs without a "
                    "queue label bypass Kueue")
    return None


def volcano_gang(values) -> str | None:
    conf = k8s.yaml_text(get(values, VOLCANO_CONFIG))
    if get(values, VOLCANO_CONFIG) is None:
        plugins = VOLCANO_DEFAULT_PLUGINS
    elif not isinstance(conf, dict):
        return f"values.{VOLCANO_CONFIG} is not a scheduler configuration"
    else:
        plugins = {str(get(p, "name")) for tier in items(get(conf, "tiers")) for p in items(get(tier, "plugins"))}
    return None if "gang" in plugins else "the scheduler configuration has no gang plugin"


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    pending = Pending()
    training = []
    for pool in graph.pools():
        with pending.each():
            if pool.workload == "training":
                training.append(pool)
    pending.finish()
    if not training:
        graph.outside_plan(args, "no training pool", "GPU pools")
    names = ", ".join(repr(p.name) for p in training)
    kueue, volcano = charts.releases(graph, KUEUE), charts.releases(graph, VOLCANO)
    kai = charts.releases(graph, KAI)
    if not kueue and not volcano and not kai:
        report(f"training pools {names} have no gang scheduler: no Kueue, Volcano or KAI Scheduler release is in "
               "the stack, so distributed jobs start piecemeal and deadlock on GPUs")
    unread = Pending()
    for release in kai:
        with unread.each():
            if release.value(KAI_PODGROUPER) is not True:
                report(f"training pools {names}: KAI Scheduler release {release.resource.name!r}: "
                       f"values.{KAI_PODGROUPER} is not true, so no PodGroup is made and jobs are scheduled pod by "
                       "pod", release.resource.urn)
    for release in kueue:
        problem = kueue_gang(k8s.yaml_text(get(release.values, KUEUE_CONFIG)), k8s.team_namespaces(graph))
        if problem:
            report(f"training pools {names}: Kueue release {release.resource.name!r}: {problem}",
                   release.resource.urn)
    for release in volcano:
        problem = volcano_gang(release.values)
        if problem:
            report(f"training pools {names}: Volcano release {release.resource.name!r}: {problem}",
                   release.resource.urn)
    unread.finish()


RULE = stack_rule(
    id="GPU005", slug="training-gang-admission",
    title="Training pools are reachable only through a scheduler with gang admission",
    rationale=("A distributed training job needs all its workers at once. Admitted pod by pod, two jobs each "
               "get half their GPUs and wait forever, holding them. Kueue admits all-or-nothing with "
               "`waitForPodsReady` (in v1beta2 its presence, with a timeout, enables it; v1beta1 needs "
               "`enable: true`) and must manage jobs without a queue label too, in every team namespace "
               "(`managedJobsNamespaceSelector`), for at least one job framework (`integrations.frameworks`) and "
               "always for plain Jobs and bare pods (`batch/job`, `pod`), which any tenant can create, or they "
               "bypass it; Volcano needs "
               "its gang plugin; KAI Scheduler its pod-grouper (`podgrouper.enabled`), which gives every workload a "
               "PodGroup. Checked from the Kueue release's manager configuration, the Volcano release's "
               "scheduler configuration and the KAI release's values."),
    severity=Severity.HIGH, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Set `gpu-platform:scheduler.gang.enabled: true` (the default) with a timeout.",
        "With your own Kueue configuration: add `waitForPodsReady: {timeout: 10m}` and "
        "`manageJobsWithoutQueueName: true`, keep `batch/job`, `pod` and the job frameworks your teams use in "
        "`integrations.frameworks` and every team namespace in `managedJobsNamespaceSelector`; with Volcano keep `gang` in the first tier's "
        "plugins; with KAI Scheduler leave `podgrouper.enabled` on.",
    ),
    config_key="scheduler",
    check=check,
)
