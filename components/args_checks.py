"""Each public component's Args checked the way the stack config is, with the config's own readers and checks:
every problem under its property path (`GpuOperatorArgs.driver_owners.a100`) with the allowed values, all at
once, and Args that contradict each other or the cloud refused, before the component creates any child.

The stack program's Args come from a validated config and always pass; these checks are for Args built by hand
(a user's own program, or the component package's inputs), where nothing validated them before.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable

import pulumi

from components import catalog
from components.clouds import PROFILES
from components.clouds.facts import CloudProfile
from components.config.errors import ConfigError, Problems
from components.config.fields import DNS1123_LABEL, DNS1123_WHAT, Section, join
from components.config.model import (
    CAPACITY_TYPES, DRIVER_OWNERS, EGRESS, PRIORITIES, SHARING_MODES, WORKLOADS,
)
from components.config.pools import (
    LABEL_VALUE, driver_problem, max_replicas, mixed_driver_problem, no_mig_problem, read_taint,
)

OPERANDS = ("driver", "toolkit", "devicePlugin", "migManager", "dcgmExporter")
PSA_LEVELS = ("privileged", "baseline", "restricted")  # what Pod Security Admission's enforce label takes


class ArgsError(ConfigError):
    """A component's Args are invalid or contradictory: raised before the component creates anything."""


def check_args(args: Any) -> None:
    """Raise ArgsError with every problem of `args`, or return."""
    name = type(args).__name__
    problems = Problems()
    names = tuple(f.name for f in dataclasses.fields(args))
    # Outputs (a namespace from another resource) are only known at deploy time: there is nothing to read yet.
    raw = {key: getattr(args, key) for key in names if not isinstance(getattr(args, key), pulumi.Output)}
    sec = Section(raw, name, problems, names)
    CHECKS[name](args, sec)
    if problems.errors:
        raise ArgsError(problems.errors, name)


def _mapping(sec: Section, key: str) -> dict[str, Any]:
    """A mapping field whose values are structured objects (chart values, specs), keyed by strings."""
    value = sec.value(key, {})
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        sec.problems.add(sec.at(key), f"must be a mapping keyed by strings; got {type(value).__name__}")
        return {}
    return value


def _cloud(sec: Section, required: bool = True) -> CloudProfile | None:
    clouds = tuple(PROFILES)
    name = sec.str("cloud", choices=clouds) if required else sec.str("cloud", None, choices=clouds)
    return PROFILES.get(name) if name else None


def _node_pool(args: Any, sec: Section) -> None:
    sec.str("pool_name", pattern=DNS1123_LABEL, what=DNS1123_WHAT)
    prof = _cloud(sec)
    sec.str("cloud_name")
    instance_type, gpu_model = sec.str("instance_type"), sec.str("gpu_model")
    gpus = sec.int("gpus_per_node", minimum=1)
    min_nodes, max_nodes = sec.int("min_nodes", minimum=0), sec.int("max_nodes", minimum=1)
    if isinstance(min_nodes, int) and isinstance(max_nodes, int) and min_nodes > max_nodes:
        sec.problems.add(sec.at("max_nodes"), f"must be >= min_nodes ({min_nodes}); got {max_nodes}")
    driver = sec.str("driver", choices=DRIVER_OWNERS)
    if prof and driver and (problem := driver_problem(driver, prof)):
        sec.problems.add(sec.at("driver"), problem)
    sec.str("capacity_type", choices=CAPACITY_TYPES)
    sec.str("workload", choices=WORKLOADS)
    mode = sec.str("sharing_mode", choices=SHARING_MODES)
    instance = None
    if prof and instance_type:
        try:
            instance = catalog.lookup(prof.name, instance_type)
        except catalog.CatalogError as exc:
            sec.problems.add(sec.at("instance_type"), str(exc))
    if instance is not None:
        # Policies read the pool's GPU model and count: facts that disagree with the instance type mislead them.
        if gpu_model and gpu_model != instance.gpu.name:
            sec.problems.add(sec.at("gpu_model"), f"{instance_type} carries {instance.gpu.name}; got {gpu_model!r}")
        if isinstance(gpus, int) and gpus != instance.gpus:
            sec.problems.add(sec.at("gpus_per_node"), f"{instance_type} has {instance.gpus} GPUs; got {gpus}")
        if mode == "mig" and (problem := no_mig_problem(instance)):
            sec.problems.add(sec.at("sharing_mode"), problem)
    if mode == "mig":
        sec.str("mig_config")
    elif sec.has("mig_config"):
        sec.problems.add(sec.at("mig_config"), f"only applies with sharing_mode mig (this pool has {mode})")
    if mode in ("mps", "time-slicing"):
        sec.int("replicas", minimum=2, maximum=max_replicas(mode), why=f"clients per GPU with {mode}")
    elif sec.has("replicas"):
        sec.problems.add(sec.at("replicas"), f"only applies with sharing_mode mps or time-slicing (this pool has "
                                             f"{mode})")
    fabrics = ("none", *(prof.fabrics if prof else ()))
    sec.str("fabric", choices=fabrics if prof else None)
    sec.str_list("fabric_teams")
    _labels(sec, "labels")
    for i, taint in enumerate(sec.list("taints")):
        read_taint(taint, join(sec.at("taints"), i), sec.problems, platform_keys=True)
    for resource, count in _mapping(sec, "advertised").items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            sec.problems.add(join(sec.at("advertised"), resource), f"must be a whole number >= 0; got {count!r}")


def _labels(sec: Section, key: str) -> dict[str, str]:
    labels = sec.str_map(key)
    for name, value in labels.items():
        if not LABEL_VALUE.fullmatch(value) or len(value) > 63:
            sec.problems.add(join(sec.at(key), name), f"{value!r:.80} is not a valid label value (letters, digits, "
                                                      "'-', '_', '.', at most 63 characters)")
    return labels


def _gpu_operator(args: Any, sec: Section) -> None:
    prof = _cloud(sec, required=False)
    values = _mapping(sec, "values")
    owners = sec.str_map("driver_owners")
    for pool, owner in owners.items():
        path = join(sec.at("driver_owners"), pool)
        if owner not in DRIVER_OWNERS:
            sec.problems.add(path, f"{owner!r} is not allowed; allowed: {', '.join(DRIVER_OWNERS)}")
        elif prof and (problem := driver_problem(owner, prof)):
            sec.problems.add(path, problem)
        elif prof and prof.managed_driver_root and owner != prof.default_driver and len(set(owners.values())) > 1:
            sec.problems.add(path, mixed_driver_problem(owner, prof))
    ops = _mapping(sec, "operands")
    path = sec.at("operands")
    for key, value in ops.items():
        if key not in OPERANDS:
            sec.problems.add(join(path, key), f"unknown operand; allowed: {', '.join(OPERANDS)}")
        elif not isinstance(value, bool):
            sec.problems.add(join(path, key), f"must be true or false; got {value!r}")
    for key in OPERANDS:
        if key not in ops:
            sec.problems.add(join(path, key), "is required (true or false)")
    operator_pools = sorted(pool for pool, owner in owners.items() if owner == "operator")
    if ops.get("driver") is False and operator_pools:
        sec.problems.add(join(path, "driver"), f"is false, but driver_owners gives the operator pool(s) "
                                               f"{', '.join(operator_pools)}: their nodes would get no driver")
    if ops.get("driver") is True and owners and not operator_pools:
        sec.problems.add(join(path, "driver"), "is true, but no pool's driver owner is operator: a second driver "
                                               "would fight the image's on every node")
    for key in OPERANDS:
        # The chart's switch and the recorded operand must agree: policies read the operand, the chart acts.
        chart = values.get(key)
        enabled = chart.get("enabled") if isinstance(chart, dict) else None
        if isinstance(enabled, bool) and isinstance(ops.get(key), bool) and enabled != ops[key]:
            sec.problems.add(join(join(sec.at("values"), key), "enabled"),
                             f"is {str(enabled).lower()} but operands.{key} is {str(ops[key]).lower()}; make them "
                             "agree")
    mig_manager = ops.get("migManager") is True
    if mig_manager and not sec.has("mig_config"):
        sec.problems.add(sec.at("mig_config"), "is required with operands.migManager: true (mig-manager reads its "
                                               "layouts from it)")
    if sec.has("mig_config") and not mig_manager:
        sec.problems.add(sec.at("mig_config"), "only applies with operands.migManager: true")
    if mig_manager and prof and prof.mig_via != "operator":
        sec.problems.add(join(path, "migManager"), f"must be false on {prof.service}: its node pool API partitions "
                                                   f"MIG ({prof.mig_pool_field}), not the operator's mig-manager")
    if sec.has("dcgm_metrics") and ops.get("dcgmExporter") is False:
        sec.problems.add(sec.at("dcgm_metrics"), "only applies with operands.dcgmExporter: true")
    for key in ("mig_config", "dcgm_metrics"):
        sec.str(key, None)
    if not isinstance(args.cloud_note, str):
        sec.problems.add(sec.at("cloud_note"), f"must be a string; got {args.cloud_note!r:.80}")
    sec.bool("critical_pods_quota")


def _team(args: Any, sec: Section) -> None:
    # Imported on use: the Team component imports this module.
    from components.tenancy.isolation import ENFORCED, PSA
    from components.tenancy.team import TEAM_LABEL

    enforce = f"{PSA}/enforce"
    team = sec.str("team", pattern=DNS1123_LABEL, what=DNS1123_WHAT)
    sec.str("priority", choices=PRIORITIES)
    for key, allowed in (("gpu_quota", ("requests.",)), ("compute_quota", ("requests.cpu", "requests.memory",
                                                                           "pods"))):
        shown = ", ".join(a + "<resource>" if a.endswith(".") else a for a in allowed)
        for resource in sec.str_map(key):
            if not resource.startswith(allowed):
                sec.problems.add(join(sec.at(key), resource), f"not a quota this field caps; allowed: {shown}")
    sec.str_list("groups")
    egress = sec.str("egress", choices=EGRESS)
    labels = _labels(sec, "labels")
    if team and labels.get(TEAM_LABEL, team) != team:
        sec.problems.add(join(sec.at("labels"), TEAM_LABEL), f"must be the team's name {team!r} (its queue selects "
                                                             f"its namespace by it); got {labels[TEAM_LABEL]!r}")
    if labels.get(enforce, ENFORCED) not in PSA_LEVELS:
        sec.problems.add(join(sec.at("labels"), enforce), f"{labels[enforce]!r} is not a Pod Security level; "
                                                          f"allowed: {', '.join(PSA_LEVELS)}")
    sec.str_map("annotations")
    policies = _mapping(sec, "network_policies")
    for policy, spec in policies.items():
        if not isinstance(spec, dict):
            sec.problems.add(join(sec.at("network_policies"), policy), f"must be a NetworkPolicy spec (a mapping); "
                                                                       f"got {type(spec).__name__}")
        elif egress == "none" and _opens_egress(spec):
            sec.problems.add(join(sec.at("network_policies"), policy), "allows egress outside the cluster, but "
                                                                       "egress is none")
    sec.bool("protect")


def _opens_egress(spec: dict[str, Any]) -> bool:
    """The policy lets pods reach an address block (outside the cluster): what `egress: none` promises away."""
    return any("ipBlock" in peer for rule in _dicts(spec.get("egress")) for peer in _dicts(rule.get("to")))


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The mappings of a list inside a spec given as a plain dict: a malformed entry is the API server's to refuse."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _kueue(args: Any, sec: Section) -> None:
    _mapping(sec, "manager_config")
    flavors = _mapping(sec, "flavors")
    queues = _mapping(sec, "cluster_queues")
    namespaces = _mapping(sec, "namespaces")
    for team in sorted(set(queues) - set(namespaces)):
        sec.problems.add(join(sec.at("namespaces"), team), "is required: every ClusterQueue's team gets a LocalQueue "
                                                           "in its namespace")
    for team in sorted(set(namespaces) - set(queues)):
        sec.problems.add(join(sec.at("namespaces"), team), f"no ClusterQueue for team {team!r}; teams: "
                                                           f"{', '.join(queues) or '(none)'}")
    groups = _mapping(sec, "team_groups")
    for team in sorted(set(groups) - set(queues)):
        sec.problems.add(join(sec.at("team_groups"), team), f"no ClusterQueue for team {team!r}; teams: "
                                                            f"{', '.join(queues) or '(none)'}")
    cohort = sec.bool("cohort")
    for team, spec in queues.items():
        path = join(sec.at("cluster_queues"), team)
        if not isinstance(spec, dict):
            sec.problems.add(path, f"must be a ClusterQueue spec (a mapping); got {type(spec).__name__}")
            continue
        if spec.get("cohortName") and cohort is False:
            sec.problems.add(join(path, "cohortName"), "names a cohort, but cohort is false: nothing creates it")
        for i, group in enumerate(_dicts(spec.get("resourceGroups"))):
            for j, flavor in enumerate(_dicts(group.get("flavors"))):
                if flavor.get("name") not in flavors:
                    sec.problems.add(join(join(join(join(path, "resourceGroups"), i), "flavors"), j) + ".name",
                                     f"{flavor.get('name')!r} is not a flavor; allowed: {', '.join(flavors)}")
    sec.bool("protect")
    sec.str("provisioning_class", None)


def _monitoring(args: Any, sec: Section) -> None:
    # Imported on use, like the Team's: the schedulers the monitoring module knows how to scrape.
    from components.observability.monitoring import scraped_schedulers

    for key in ("recording_groups", "alert_groups"):
        for i, group in enumerate(sec.list(key, required=True)):
            if not isinstance(group, dict) or not isinstance(group.get("name"), str):
                sec.problems.add(join(sec.at(key), i), "must be a rule group with a name (name, rules)")
    sec.str_map("labels")
    dashboard = sec.str("dashboard")
    if dashboard:
        try:
            json.loads(dashboard)
        except ValueError as exc:
            sec.problems.add(sec.at("dashboard"), f"is not JSON (Grafana could not load it): {exc}")
    sec.str("scheduler", choices=scraped_schedulers())


CHECKS: dict[str, Callable[[Any, Section], None]] = {
    "GpuNodePoolArgs": _node_pool,
    "GpuOperatorArgs": _gpu_operator,
    "TeamArgs": _team,
    "KueueArgs": _kueue,
    "GpuMonitoringArgs": _monitoring,
}
