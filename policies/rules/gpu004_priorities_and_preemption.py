"""GPU004: PriorityClasses with a non-preempting global default, and a preemption policy on every team queue."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs

from policies import charts, k8s
from policies.graph import Graph
from policies.props import get
from policies.rule import Pending, Report, stack_rule

VOLCANO = "volcano"
NEVER = "Never"
# KAI runs both unless its release turns them off (SchedulingShard spec.actions, fed by values scheduler.actions).
KAI_ACTIONS = ("reclaim", "preempt")


def _priority_classes(graph: Graph, report: Report) -> None:
    classes = graph.of_type(k8s.PRIORITY_CLASS)
    if not classes:
        report("no PriorityClass exists: every GPU pod has priority 0, so nothing can be preempted for urgent work "
               "and nothing is protected from it")
        return
    defaults = [c for c in classes if get(c.props, "globalDefault") is True]
    if len(defaults) != 1:
        names = ", ".join(k8s.name(c) for c in defaults) or "none"
        report(f"{len(defaults)} PriorityClasses are globalDefault ({names}); exactly one must be, so pods "
               "without a class get a known, low priority")
        return
    default = defaults[0]
    policy = get(default.props, "preemptionPolicy", "PreemptLowerPriority")
    if policy != "Never":
        report(f"the global default PriorityClass {k8s.name(default)!r} has preemptionPolicy {policy}: any pod "
               "without a class may evict running GPU work; set preemptionPolicy: Never", default.urn)


def _volcano_actions(graph: Graph) -> set[str] | None:
    for release in charts.releases(graph, VOLCANO):
        conf = k8s.yaml_text(get(release.values, "custom.scheduler_config_override"))
        # The chart's default conf has no preempt/reclaim actions (volcano-scheduler.conf at v1.15.1).
        actions = str(get(conf, "actions", "enqueue, allocate, backfill")) if isinstance(conf, dict) else \
            "enqueue, allocate, backfill"
        return {a.strip() for a in actions.split(",")}
    return None


def _kai_actions_off(graph: Graph) -> list[str]:
    off = []
    for release in charts.releases(graph, charts.KAI):
        for action in KAI_ACTIONS:
            if get(release.values, f"scheduler.actions.{action}.enabled") is False:
                off.append(action)
    return off


def check(args: StackValidationArgs, graph: Graph, report: Report) -> None:
    if not graph.pools():
        graph.outside_plan(args, "no GPU pools", "GPU pools")
    _priority_classes(graph, report)
    pending = Pending()
    for queue in graph.of_type(*k8s.CLUSTER_QUEUES):
        with pending.each():
            preemption = get(queue.props, "spec.preemption")
            cohort = get(queue.props, "spec.cohortName") or get(queue.props, "spec.cohort")
            # Kueue's default for both is Never, so spelling it out is the same as leaving it out.
            within = get(preemption, "withinClusterQueue", NEVER) if preemption else NEVER
            if within == NEVER:
                report(f"ClusterQueue {k8s.name(queue)!r} sets no preemption.withinClusterQueue (or Never): urgent "
                       "work waits behind everything already admitted", queue.urn)
            elif cohort and get(preemption, "reclaimWithinCohort", NEVER) == NEVER:
                report(f"ClusterQueue {k8s.name(queue)!r} is in cohort {cohort!r} but sets no "
                       "preemption.reclaimWithinCohort (or Never): GPUs it lends are never given back", queue.urn)
    volcano_queues = graph.of_type(k8s.VOLCANO_QUEUE)
    actions = _volcano_actions(graph) if volcano_queues else None
    for queue in volcano_queues:
        with pending.each():
            reclaimable = get(queue.props, "spec.reclaimable")
            if reclaimable is None:
                report(f"Volcano Queue {k8s.name(queue)!r} does not set reclaimable: say whether GPUs it borrows "
                       "are given back", queue.urn)
            elif actions is not None and not {"reclaim", "preempt"} & actions:
                report(f"Volcano Queue {k8s.name(queue)!r}: the scheduler runs no reclaim or preempt action "
                       f"(actions: {', '.join(sorted(actions))}), so no queue's guarantee is ever enforced",
                       queue.urn)
    kai_queues = graph.of_type(k8s.KAI_QUEUE)
    off = _kai_actions_off(graph) if kai_queues else []
    parents = {str(get(q.props, "spec.parentQueue")) for q in kai_queues if get(q.props, "spec.parentQueue")}
    for queue in kai_queues:
        if off and k8s.name(queue) not in parents:  # leaf queues hold the workloads
            report(f"KAI Queue {k8s.name(queue)!r}: the scheduler's {' and '.join(off)} action is turned off "
                   "(scheduler.actions), so over-quota GPUs are never given back to the queues they belong to or "
                   "urgent work waits behind everything already running", queue.urn)
    pending.finish()


RULE = stack_rule(
    id="GPU004", slug="priorities-and-queue-preemption",
    title="PriorityClasses exist with a non-preempting global default, and every team queue has a preemption policy",
    rationale=("Without PriorityClasses nothing distinguishes urgent GPU work from opportunistic work. Exactly "
               "one class must be globalDefault with preemptionPolicy Never, so pods without a class never evict "
               "running training. Every Kueue ClusterQueue needs preemption.withinClusterQueue, and "
               "reclaimWithinCohort when it lends GPUs to a cohort, other than Never (Kueue's default); every Volcano Queue states reclaimable and the "
               "scheduler runs reclaim or preempt (its default configuration runs neither); KAI Scheduler runs both "
               "unless its release turns one off (`scheduler.actions`), which leaves its leaf queues without the "
               "guarantee."),
    severity=Severity.MEDIUM, enforcement=EnforcementLevel.MANDATORY,
    remediation=(
        "Keep the scheduling layer's priority classes (gpu-critical .. gpu-low, and gpu-default as the "
        "non-preempting global default).",
        "Give every ClusterQueue `preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}`.",
        "For Volcano, set `reclaimable` on every Queue and add `preempt, reclaim` to the scheduler actions.",
        "For KAI Scheduler, leave `scheduler.actions.reclaim` and `scheduler.actions.preempt` enabled.",
    ),
    config_key="scheduler",
    check=check,
)
