"""Priority classes for GPU workloads, and what a team's `priority` means for its pods and its queue.

The levels themselves (names, values, who may evict) are plain data in components/config/priority_levels.py.
"""
from __future__ import annotations

import json
from dataclasses import replace

import pulumi
import pulumi_kubernetes.admissionregistration.v1 as admission
import pulumi_kubernetes.meta.v1 as meta
import pulumi_kubernetes.scheduling.v1 as scheduling

from components.config.priority_levels import DEFAULT, LEVELS, PriorityLevel, forbidden_classes

WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"  # names a Kueue WorkloadPriorityClass on a job
CEILING_POLICY = "gpu-platform-priority-ceiling"


def levels_under(preemptible_below: int | None) -> list[PriorityLevel]:
    """The GPU classes and the default as a scheduler that reads preemptibility from class values needs them.

    KAI keeps a workload of a class valued at or above its threshold within its queue's quota and never preempts it,
    so with the usual values nothing would borrow idle GPUs. The classes that wait rather than evict (normal, low)
    are the work that may run on borrowed GPUs and give them back: they are renumbered below the threshold, in the
    same order and above the default. Critical and high stay above it: guaranteed, in-quota work. Schedulers without
    a threshold keep the values above.
    """
    levels = [*LEVELS.values(), DEFAULT]
    if preemptible_below is None:
        return levels
    waiting = [lv for lv in reversed(LEVELS.values()) if lv.preemption_policy == "Never"]  # lowest first
    values = {lv.name: preemptible_below * (i + 1) // (len(waiting) + 1) for i, lv in enumerate(waiting)}
    return [replace(lv, value=values.get(lv.name, lv.value)) for lv in levels]


# Where workload kinds keep their pods' priority class, as field paths under `object` ("[]" steps into every list
# item, "{}" into every map value). Kueue takes a job's priority from its pod template when the job carries no
# Kueue priority label, and a queued Workload preempts others long before any pod (and the pod quota) exists: the
# template has to be held to the ceiling at submission. One entry per framework Kueue integrates
# (scheduling.framework_catalog: BUILT_IN and every FRAMEWORKS entry, installed or not, plus Kubeflow
# MPIJob/PyTorchJob) and Volcano's own kinds. TrainJob keeps no priority of its own: its runtime's template does
# (teams write no runtimes), and the pod templates its runtimePatches carry have no priorityClassName field (the
# CRD's structural schema drops it). AppWrapper wraps any of these kinds: see wrapped_rule.
TEMPLATE_PRIORITY_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): ("spec.priorityClassName",),
    ("batch", "Job"): ("spec.template.spec.priorityClassName",),
    ("batch", "CronJob"): ("spec.jobTemplate.spec.template.spec.priorityClassName",),
    **{("apps", kind): ("spec.template.spec.priorityClassName",)
       for kind in ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet")},
    ("jobset.x-k8s.io", "JobSet"): ("spec.replicatedJobs.[].template.spec.template.spec.priorityClassName",),
    **{("kubeflow.org", kind): (f"spec.{replicas}.{{}}.template.spec.priorityClassName",
                                "spec.runPolicy.schedulingPolicy.priorityClass")
       for kind, replicas in (("PyTorchJob", "pytorchReplicaSpecs"), ("MPIJob", "mpiReplicaSpecs"),
                              ("TFJob", "tfReplicaSpecs"), ("JAXJob", "jaxReplicaSpecs"),
                              ("XGBoostJob", "xgbReplicaSpecs"), ("PaddleJob", "paddleReplicaSpecs"))},
    ("ray.io", "RayCluster"): ("spec.headGroupSpec.template.spec.priorityClassName",
                               "spec.workerGroupSpecs.[].template.spec.priorityClassName"),
    ("ray.io", "RayJob"): ("spec.rayClusterSpec.headGroupSpec.template.spec.priorityClassName",
                           "spec.rayClusterSpec.workerGroupSpecs.[].template.spec.priorityClassName"),
    ("ray.io", "RayService"): ("spec.rayClusterConfig.headGroupSpec.template.spec.priorityClassName",
                               "spec.rayClusterConfig.workerGroupSpecs.[].template.spec.priorityClassName"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): (
        "spec.leaderWorkerTemplate.leaderTemplate.spec.priorityClassName",
        "spec.leaderWorkerTemplate.workerTemplate.spec.priorityClassName"),
    ("batch.volcano.sh", "Job"): ("spec.priorityClassName", "spec.tasks.[].template.spec.priorityClassName"),
    ("scheduling.volcano.sh", "PodGroup"): ("spec.priorityClassName",),
}


def uses_forbidden(path: str, base: str = "object") -> str:
    """CEL that is true when any value at `path` under `base` is a forbidden class; absent fields are not.

    Every step is guarded with has() (a missing field is an error in CEL, and errors fail closed), lists and maps
    are searched with exists() under variable names of their own.
    """
    steps = path.split(".")

    def walk(at: str, rest: list[str], depth: int) -> str:
        if not rest:
            return f"{at} in variables.forbidden"
        step, rest = rest[0], rest[1:]
        if step in ("[]", "{}"):
            var = f"x{depth}"
            item = var if step == "[]" else f"{at}[{var}]"
            return f"{at}.exists({var}, {walk(item, rest, depth + 1)})"
        return f"has({at}.{step}) && {walk(f'{at}.{step}', rest, depth)}"

    return walk(base, steps, 0)


# AppWrapper (CodeFlare) carries whole objects of other kinds as schemaless components[].template.
APPWRAPPER = ("workload.codeflare.dev", "AppWrapper")


def _is_kind(obj: str, group: str, kind: str) -> str:
    version = f'{obj}.apiVersion == "v1"' if not group else f"{obj}.apiVersion.startsWith({json.dumps(group + '/')})"
    return f"{obj}.kind == {json.dumps(kind)} && {version}"


def wrapped_rule() -> dict[str, str]:
    """Every AppWrapper component is read as the kind it wraps; a component of a kind the table does not know
    (another AppWrapper included) is refused, since its priority could sit anywhere."""
    template = "c.template"
    readable = " || ".join(
        f"({_is_kind(template, group, kind)} && !({' || '.join(f'({uses_forbidden(p, template)})' for p in paths)}))"
        for (group, kind), paths in TEMPLATE_PRIORITY_PATHS.items())
    group, kind = APPWRAPPER
    return {"expression": f"request.kind.group != {json.dumps(group)} || request.kind.kind != {json.dumps(kind)} || "
                          f"!has(object.spec.components) || object.spec.components.all(c, "
                          f"has({template}.kind) && has({template}.apiVersion) && ({readable}))",
            "message": "every AppWrapper component must be a kind whose priority class the platform reads, "
                       "at or below this namespace's team priority"}


def ceiling_rules(team_label: str, priority_label: str) -> tuple[dict, list[dict[str, str]], list[dict[str, str]]]:
    """Match constraints, variables and validations of the admission policy that holds team objects to their
    namespace's priority ceiling where a ResourceQuota scope cannot look: a job's Kueue WorkloadPriorityClass
    label, and the priority class of every workload kind's pod templates (pods are also capped by the
    priority-ceiling quota)."""
    forbidden = json.dumps({p: forbidden_classes(p) for p in LEVELS})
    match = {"namespaceSelector": {"matchExpressions": [{"key": team_label, "operator": "Exists"}]},
             "resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
                                "resources": ["*"], "scope": "Namespaced"}]}
    variables = [{"name": "forbidden",
                  "expression": f"{forbidden}[namespaceObject.metadata.labels[{json.dumps(priority_label)}]]"}]
    label = json.dumps(WORKLOAD_PRIORITY_LABEL)
    validations = [
        {"expression": f"!has(object.metadata.labels) || !({label} in object.metadata.labels) || "
                       f"!(object.metadata.labels[{label}] in variables.forbidden)",
         "message": "this namespace's team may not use that Kueue priority class (above its priority)"},
    ]
    for (group, kind), paths in TEMPLATE_PRIORITY_PATHS.items():
        found = " || ".join(f"({uses_forbidden(path)})" for path in paths)
        validations.append({
            "expression": f"request.kind.group != {json.dumps(group)} || request.kind.kind != {json.dumps(kind)} || "
                          f"!({found})",
            "message": f"this namespace's team may not use that priority class in a {kind} (above its priority)"})
    validations.append(wrapped_rule())
    return match, variables, validations


class Priorities(pulumi.ComponentResource):
    """The cluster's GPU PriorityClasses, its non-preempting global default, and the team priority ceiling."""

    TYPE = "gpu-platform:scheduling:Priorities"

    def __init__(self, name: str, team_label: str, priority_label: str, preemptible_below: int | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        levels = levels_under(preemptible_below)
        super().__init__(self.TYPE, name, {"classes": {lv.name: lv.value for lv in levels}}, opts)
        self.classes = {
            lv.name: scheduling.PriorityClass(
                f"{name}-{lv.name}",
                metadata=meta.ObjectMetaArgs(name=lv.name),
                value=lv.value,
                preemption_policy=lv.preemption_policy,
                global_default=lv.name == DEFAULT.name,
                description=lv.description,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for lv in levels
        }
        match, variables, validations = ceiling_rules(team_label, priority_label)
        policy = admission.ValidatingAdmissionPolicy(
            f"{name}-ceiling",
            metadata=meta.ObjectMetaArgs(name=CEILING_POLICY),
            spec=admission.ValidatingAdmissionPolicySpecArgs(
                failure_policy="Fail",
                match_constraints=admission.MatchResourcesArgs(
                    namespace_selector=meta.LabelSelectorArgs(match_expressions=[
                        meta.LabelSelectorRequirementArgs(**expr)
                        for expr in match["namespaceSelector"]["matchExpressions"]]),
                    resource_rules=[admission.NamedRuleWithOperationsArgs(
                        api_groups=r["apiGroups"], api_versions=r["apiVersions"], operations=r["operations"],
                        resources=r["resources"], scope=r["scope"]) for r in match["resourceRules"]]),
                variables=[admission.VariableArgs(**v) for v in variables],
                validations=[admission.ValidationArgs(**v) for v in validations],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        admission.ValidatingAdmissionPolicyBinding(
            f"{name}-ceiling-binding",
            metadata=meta.ObjectMetaArgs(name=CEILING_POLICY),
            spec=admission.ValidatingAdmissionPolicyBindingSpecArgs(policy_name=CEILING_POLICY,
                                                                     validation_actions=["Deny"]),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )
        self.register_outputs({"classes": list(self.classes)})
