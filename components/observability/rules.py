"""Recording and alerting rules as plain data: allocated vs busy GPUs, SLO burn, hoarding, health and queues.

Every number is in *devices*: what the device plugin advertises and pods request (a whole GPU, a MIG instance or a
shared replica). "Busy" is the DCGM graphics-engine activity summed over a pod's devices, so effective
utilization = busy / allocated is unit-free. `DCGM_FI_DEV_GPU_UTIL` is never used: it reads ~99% on a GPU whose SMs
are half idle.
"""
from __future__ import annotations

from typing import Any

from components.config.model import PlatformConfig
from components.scheduling.kinds import scheduler_kind

GROUP_INTERVAL = "1m"
# kube-state-metrics spells resource names with underscores; Kueue and Volcano keep the Kubernetes spelling.
KSM_GPU_RESOURCES = "nvidia_com_gpu|nvidia_com_mig_.+"
GPU_RESOURCES = "nvidia.com/gpu|nvidia.com/mig-.+"
POOL_NODE_LABEL = "label_gpu_platform_io_pool"  # kube_node_labels' name for gpu-platform.io/pool
DCGM_JOB = ".*dcgm-exporter.*"  # the GPU Operator's service is nvidia-dcgm-exporter, the standalone chart's dcgm-exporter
IDLE_ACTIVITY = 0.05  # below 5% engine activity a GPU is doing nothing useful (data loaders poll at ~1-2%)
# The team utilization SLO: effective utilization >= minUtilization during 90% of the time over 30 days.
SLO_TARGET = 0.9
# (severity, long window, short window, burn rate): the SRE-workbook ticket tiers. The 14.4x page tier is left out:
# with a 10% budget the highest possible burn rate is 10x.
BURN_TIERS = (("warning", "6h", "30m", 6), ("info", "1d", "2h", 3), ("info", "3d", "6h", 1))
SLO_WINDOWS = ("30m", "2h", "6h", "1d", "3d")
HOT_GPU_CELSIUS = 85
# XIDs that mean failing hardware or a GPU that needs a reset (NVIDIA XID catalog): double-bit ECC (48), row
# remapping (63, 64), NVLink (74), fallen off the bus (79), high single-bit rate (92), contained/uncontained ECC
# (94, 95), GSP firmware (119, 120), unrecovered ECC (140).
HARDWARE_XIDS = (48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140)
RUNBOOK = "docs/observability.md"  # each alert has a heading (its runbook) there

# The pod-level series every team, pool and alert rule is built from.
ALLOCATED = "pod:gpu_platform_allocated_gpus:sum"
BUSY = "pod:gpu_platform_busy_gpus:sum"
ENGINE_MAX = "pod:gpu_platform_gr_engine_active:max"
IDLE = "pod:gpu_platform_idle_gpus:sum"
PENDING = "pod:gpu_platform_pending_gpus:sum"
POOL_INFO = "node:gpu_platform_pool:info"
TEAM_UTILIZATION = "namespace:gpu_platform_effective_utilization:ratio"
BELOW_SLO = "namespace:gpu_platform_utilization_below_slo:bool"


def slo_errors(window: str) -> str:
    """The recorded fraction of `window` a team spent below its utilization objective."""
    return f"namespace:gpu_platform_utilization_slo_errors:ratio{window}"


def _minutes(duration: str) -> int:
    return int(duration[:-1]) * {"m": 1, "h": 60, "d": 1440}[duration[-1]]


def by_team(expr: str, source: str = "namespace") -> str:
    """A team is its namespace (and its ClusterQueue or Volcano Queue): copy that name into a `team` label."""
    return f'label_replace({expr}, "team", "$1", "{source}", "(.+)")'


def _dcgm(metric: str) -> str:
    """A DCGM series labelled with the workload's namespace and pod.

    dcgm-exporter labels each GPU with the pod using it; a ServiceMonitor without honorLabels renames those to
    exported_namespace/exported_pod, so take them from there when present.
    """
    return (f'label_replace(label_replace({metric}, "namespace", "$1", "exported_namespace", "(.+)"), '
            f'"pod", "$1", "exported_pod", "(.+)")')


def _on_running_gpu_pods(per_pod: str) -> str:
    """Keep a per-(namespace, pod) aggregate only for running GPU pods, adding their node, pool, team and uid."""
    return f"{per_pod}\n+ on (namespace, pod) group_left (node, pool, team, uid) (0 * {ALLOCATED})"


def _ksm_gpu_requests(phase: str) -> str:
    return (f'kube_pod_container_resource_requests{{resource=~"{KSM_GPU_RESOURCES}"}}\n'
            f'  and on (namespace, pod) (kube_pod_status_phase{{phase="{phase}"}} == 1)')


def record(name: str, expr: str) -> dict[str, Any]:
    return {"record": name, "expr": expr}


def _alert(name: str, expr: str, severity: str, summary: str, description: str, runbook: str,
           for_: str | None = None) -> dict[str, Any]:
    """An alert with the annotations every platform alert carries; templates use only `$labels`."""
    rule: dict[str, Any] = {"alert": name, "expr": expr}
    if for_:
        rule["for"] = for_
    rule["labels"] = {"severity": severity}
    rule["annotations"] = {"summary": summary, "description": description, "runbook": runbook,
                           "runbook_url": f"{RUNBOOK}#{name.lower()}"}
    return rule


def _group(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "interval": GROUP_INTERVAL, "rules": rules}


def _percent(ratio: float) -> str:
    return f"{ratio * 100:g}%"


# --- recording rules ------------------------------------------------------------------------------------------


def _gpu_rules(dcgm: bool) -> list[dict[str, Any]]:
    """Allocation from pod requests, activity from DCGM, then per team (namespace), team x pool and pool."""
    rules = [
        record(POOL_INFO, f'max by (node, pool) (label_replace(kube_node_labels, "pool", "$1", "{POOL_NODE_LABEL}", '
                           '"(.+)"))'),
        record("pool:gpu_platform_capacity_gpus:sum",
                f'sum by (pool) (kube_node_status_allocatable{{resource=~"{KSM_GPU_RESOURCES}"}}\n'
                f'  * on (node) group_left (pool) {POOL_INFO})'),
        # The pod's uid (kube-state-metrics' label) rides along to the idle alert: the reclaimer acts only on the
        # pod the alert is about, never on a re-created pod of the same name.
        record(ALLOCATED, by_team(f"sum by (namespace, pod, uid, node) (\n  {_ksm_gpu_requests('Running')}\n)\n"
                                 f"* on (node) group_left (pool) {POOL_INFO}")),
        record(PENDING, by_team(f"sum by (namespace, pod) (\n  {_ksm_gpu_requests('Pending')}\n)")),
        record("namespace:gpu_platform_pending_gpus:sum", f"sum by (namespace, team) ({PENDING})"),
        record("namespace:gpu_platform_allocated_gpus:sum", f"sum by (namespace, team) ({ALLOCATED})"),
        record("namespace_pool:gpu_platform_allocated_gpus:sum", f"sum by (namespace, team, pool) ({ALLOCATED})"),
        record("pool:gpu_platform_allocated_gpus:sum", f"sum by (pool) ({ALLOCATED})"),
    ]
    if not dcgm:
        return rules
    measured = f"({ALLOCATED} and {BUSY})"  # devices whose activity DCGM attributes to the pod
    rules += [
        record(BUSY, _on_running_gpu_pods(
            f'sum by (namespace, pod) ({_dcgm("DCGM_FI_PROF_GR_ENGINE_ACTIVE")})')),
        record(ENGINE_MAX, _on_running_gpu_pods(
            f'max by (namespace, pod) ({_dcgm("DCGM_FI_PROF_GR_ENGINE_ACTIVE")})')),
        record("pod:gpu_platform_sm_active:avg", _on_running_gpu_pods(
            f'avg by (namespace, pod) ({_dcgm("DCGM_FI_PROF_SM_ACTIVE")})')),
        record("pod:gpu_platform_tensor_active:avg", _on_running_gpu_pods(
            f'avg by (namespace, pod) ({_dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")})')),
        record("pod:gpu_platform_effective_utilization:ratio", f"clamp_max({BUSY} / {ALLOCATED}, 1)"),
        # Idle means every device of the pod is idle: a job busy on one of its GPUs is not reclaimed.
        record(IDLE, f"{ALLOCATED} and ({ENGINE_MAX} < {IDLE_ACTIVITY})"),
        record("namespace:gpu_platform_busy_gpus:sum", f"sum by (namespace, team) ({BUSY})"),
        record("namespace:gpu_platform_idle_gpus:sum", f"sum by (namespace, team) ({IDLE})"),
        record(TEAM_UTILIZATION, f"clamp_max(\n  sum by (namespace, team) ({BUSY})\n"
                                  f"  / sum by (namespace, team) {measured},\n  1\n)"),
        record("namespace_pool:gpu_platform_busy_gpus:sum", f"sum by (namespace, team, pool) ({BUSY})"),
        record("pool:gpu_platform_busy_gpus:sum", f"sum by (pool) ({BUSY})"),
        record("pool:gpu_platform_idle_gpus:sum", f"sum by (pool) ({IDLE})"),
        record("pool:gpu_platform_effective_utilization:ratio",
                f"clamp_max(sum by (pool) ({BUSY}) / sum by (pool) {measured}, 1)"),
    ]
    return rules


def _slo_rules(min_utilization: float) -> list[dict[str, Any]]:
    rules = [record(BELOW_SLO, f"{TEAM_UTILIZATION} < bool {min_utilization:g}")]
    # Divided by the whole window (one sample per GROUP_INTERVAL), not by the samples present: time without GPUs is
    # not time below the objective, and a team that just started cannot have burnt a 6-hour window yet.
    rules += [record(slo_errors(w), f"sum_over_time({BELOW_SLO}[{w}]) / {_minutes(w)}") for w in SLO_WINDOWS]
    return rules


def recording_groups(config: PlatformConfig) -> list[dict[str, Any]]:
    """The recording rule groups for this stack: DCGM-based ones only when the platform runs the exporter."""
    obs = config.observability
    groups = [_group("gpu-platform.gpus", _gpu_rules(obs.dcgm))]
    if obs.dcgm:
        groups.append(_group("gpu-platform.slo", _slo_rules(obs.slo.min_utilization)))
    # Each scheduler exports its own queue metrics (its package's monitoring.py).
    queue_rules = scheduler_kind(config.scheduler.kind).monitoring().recording_rules()
    if queue_rules:
        groups.append(_group(f"gpu-platform.{config.scheduler.kind}", queue_rules))
    return groups


# --- alerts ---------------------------------------------------------------------------------------------------


def _hoarding_alerts(idle_minutes: int) -> list[dict[str, Any]]:
    return [_alert(
        "GPUIdleAllocated", f"{IDLE} > 0", "warning",
        "Pod {{ $labels.namespace }}/{{ $labels.pod }} holds GPUs that have been idle for " f"{idle_minutes}m",
        "Every GPU allocated to pod {{ $labels.pod }} (team {{ $labels.team }}, pool {{ $labels.pool }}, node "
        "{{ $labels.node }}) has had graphics-engine activity below " f"{_percent(IDLE_ACTIVITY)} for "
        f"{idle_minutes} minutes. Other teams may be queueing for these GPUs.",
        "Ask the team whether the job is stuck, finished without exiting, or waiting on input; notebooks should "
        "release GPUs when idle. Check the pod's logs and the dashboard's idle-GPU table. If the team opted in, "
        "the reclaimer deactivates the workload on its next run; reactivate it with spec.active=true.",
        for_=f"{idle_minutes}m",
    )]


def _slo_alerts(min_utilization: float) -> list[dict[str, Any]]:
    budget = 1 - SLO_TARGET
    conditions: dict[str, list[str]] = {}
    spans: dict[str, list[str]] = {}
    for severity, long, short, rate in BURN_TIERS:
        threshold = f"{rate * budget:g}"
        conditions.setdefault(severity, []).append(
            f"({slo_errors(long)} > {threshold} and {slo_errors(short)} > {threshold})")
        spans.setdefault(severity, []).append(f"more than {_percent(rate * budget)} of the last {long} (and of the "
                                              f"last {short})")
    objective = (f"effective utilization at or above {_percent(min_utilization)} during {_percent(SLO_TARGET)} of "
                 "the time over 30 days")
    runbook = ("Look at the team's pods in the dashboard: idle notebooks, data-loading bound jobs and "
               "over-requested GPUs are the usual causes. Right-size GPU requests, move small jobs to MIG or shared "
               "pools, and release idle GPUs.")
    fast_rate = BURN_TIERS[0][3]
    return [
        _alert("GPUTeamUtilizationBudgetBurnFast", "\nor\n".join(conditions["warning"]), "warning",
               "Team {{ $labels.team }} is burning its GPU utilization budget fast",
               "Team {{ $labels.team }} spent " + " or ".join(spans["warning"]) + f" below its objective: {objective}. "
               f"At this rate the 30-day budget is gone in {30 / fast_rate:g} days.", runbook, for_="5m"),
        _alert("GPUTeamUtilizationBudgetBurnSlow", "\nor\n".join(conditions["info"]), "info",
               "Team {{ $labels.team }} is slowly burning its GPU utilization budget",
               "Team {{ $labels.team }} spent " + " or ".join(spans["info"]) + f" below its objective: {objective}.",
               runbook, for_="15m"),
    ]


def _health_alerts() -> list[dict[str, Any]]:
    def gpu(expr: str) -> str:
        """DCGM names the node `Hostname`; alerts route on `node`."""
        return f'label_replace({expr}, "node", "$1", "Hostname", "(.+)")'

    xid = gpu("DCGM_FI_DEV_XID_ERRORS")
    hardware = " or ".join(f"{xid} == {code}" for code in HARDWARE_XIDS)
    where = "GPU {{ $labels.gpu }} ({{ $labels.modelName }}, {{ $labels.UUID }}) on node {{ $labels.node }}"
    drain = ("Cordon and drain the node (kubectl drain --ignore-daemonsets), then reset the GPU or reboot the node; "
             "if it recurs, replace the node through the cloud provider.")
    return [
        _alert("GPUXidHardwareError", hardware, "critical",
               "GPU {{ $labels.gpu }} on {{ $labels.node }} reported a hardware XID",
               f"{where} reported an XID that means failing memory, NVLink, firmware or a GPU off the bus "
               f"(one of {', '.join(map(str, HARDWARE_XIDS))}). Jobs on it will crash or hang.", drain),
        _alert("GPUXidError", f"({xid} > 0) unless ({hardware})", "warning",
               "GPU {{ $labels.gpu }} on {{ $labels.node }} reported an XID error",
               f"{where} reported an XID error. Most other XIDs are raised by the application (illegal memory "
               "access, out-of-range) rather than the hardware.",
               "Look up the XID in NVIDIA's XID catalog and correlate with the pod on that GPU; restart the job. "
               "If the same GPU keeps raising XIDs across jobs, drain the node."),
        _alert("GPUEccDoubleBitErrors", f'{gpu("increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])")} > 0', "critical",
               "GPU {{ $labels.gpu }} on {{ $labels.node }} has uncorrectable ECC errors",
               f"{where} counted double-bit (uncorrectable) ECC errors in the last 10 minutes; the job on it has "
               "likely been corrupted or killed.", drain),
        _alert("GPURowRemapFailure", f'{gpu("DCGM_FI_DEV_ROW_REMAP_FAILURE")} > 0', "critical",
               "GPU {{ $labels.gpu }} on {{ $labels.node }} failed to remap a memory row",
               f"{where} could not remap a faulty HBM row: its memory can no longer be repaired in the field.",
               "Drain the node and have the GPU replaced (RMA); a reset does not fix a failed row remap."),
        _alert("GPURowRemapPending", f'{gpu("increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h])")} > 0',
               "warning", "GPU {{ $labels.gpu }} on {{ $labels.node }} remapped a row after an uncorrectable error",
               f"{where} remapped a memory row after an uncorrectable error; the remap only takes effect after a "
               "GPU reset.", "Drain the node when its jobs finish, then reset the GPU or reboot the node."),
        _alert("GPUTemperatureHigh", f'{gpu("DCGM_FI_DEV_GPU_TEMP")} > {HOT_GPU_CELSIUS}', "warning",
               "GPU {{ $labels.gpu }} on {{ $labels.node }} runs hotter than " f"{HOT_GPU_CELSIUS}C",
               f"{where} has been above {HOT_GPU_CELSIUS}C for 10 minutes and will throttle its clocks.",
               "Check the node's fans and airflow with the cloud provider or data center; drain the node if the "
               "temperature keeps rising.", for_="10m"),
        _alert("GPUThermalThrottling", f'{gpu("rate(DCGM_FI_DEV_THERMAL_VIOLATION[10m])")} / 1e9 > 0.1', "warning",
               "GPU {{ $labels.gpu }} on {{ $labels.node }} is thermally throttled",
               f"{where} spent more than 10% of the last 10 minutes with its clocks reduced for heat.",
               "Check cooling on the node; compare with other GPUs of the same pool. Drain the node if it persists.",
               for_="15m"),
        _alert("GPUPowerThrottling", f'{gpu("rate(DCGM_FI_DEV_POWER_VIOLATION[10m])")} / 1e9 > 0.5', "warning",
               "GPU {{ $labels.gpu }} on {{ $labels.node }} is power throttled most of the time",
               f"{where} spent more than half of the last 10 minutes with its clocks reduced by its power limit.",
               "Check the GPU power limit (nvidia-smi -q -d POWER) against the model's default and the node's power "
               "supply; a lowered limit or a failing PSU shows up here.", for_="30m"),
    ]


def _exporter_alerts() -> list[dict[str, Any]]:
    gpu_nodes = f'(max by (node) (kube_node_status_allocatable{{resource=~"{KSM_GPU_RESOURCES}"}}) > 0)'
    healthy_exporters = (f'max by (node) (kube_pod_info{{pod=~"{DCGM_JOB}"}} * on (namespace, pod) group_left () '
                         f'(max by (namespace, pod) (up{{job=~"{DCGM_JOB}"}}) == 1))')
    return [
        _alert("GPUMetricsExporterDown", f'up{{job=~"{DCGM_JOB}"}} == 0', "warning",
               "DCGM exporter {{ $labels.namespace }}/{{ $labels.pod }} cannot be scraped",
               "Prometheus has failed to scrape the DCGM exporter at {{ $labels.instance }} for 10 minutes: GPU "
               "utilization, idle-GPU and health alerts on that node are blind.",
               "kubectl -n gpu-operator describe pod and logs of the exporter; a crash-looping exporter often means "
               "the driver or DCGM host engine on the node is unhealthy.", for_="10m"),
        _alert("GPUMetricsExporterMissing", f"({gpu_nodes}\n* on (node) group_left (pool) {POOL_INFO})\n"
                                            f"unless on (node)\n{healthy_exporters}", "warning",
               "GPU node {{ $labels.node }} has no working DCGM exporter",
               "Node {{ $labels.node }} (pool {{ $labels.pool }}) advertises GPUs but no DCGM exporter on it has been "
               "scraped for 15 minutes, so its GPUs are invisible to utilization, idle-GPU and health alerts.",
               "Check that the nvidia-dcgm-exporter DaemonSet tolerates the node's taints and is scheduled there, and "
               "that its ServiceMonitor carries the label Prometheus selects.", for_="15m"),
    ]


def _queue_alerts(config: PlatformConfig) -> list[dict[str, Any]]:
    minutes = config.observability.slo.pending_minutes
    alerts = [_alert(
        "GPUPodPendingTooLong",
        f"{PENDING}\nand on (namespace, pod) ((time() - kube_pod_created) > {minutes * 60})", "warning",
        "GPU pod {{ $labels.namespace }}/{{ $labels.pod }} has been pending for over " f"{minutes}m",
        "Pod {{ $labels.pod }} of team {{ $labels.team }} has requested GPUs and stayed Pending for more than "
        f"{minutes} minutes.",
        "kubectl describe pod: look for unsatisfiable requests (wrong GPU count or MIG profile), missing "
        "tolerations, a GPU pool at maxNodes, or a gang that never fits. Compare the team's quota with its usage "
        "in the dashboard.", for_="5m")]
    pending = scheduler_kind(config.scheduler.kind).monitoring().pending_alert(minutes)
    if pending is None:
        return alerts
    expr, description, runbook = pending
    # `for` makes "pending and nothing admitted" hold for the whole threshold, not just the last 5 minutes.
    alerts.append(_alert("GPUWorkloadsPendingTooLong", expr, "warning",
                         "GPU workloads of team {{ $labels.team }} have waited over " f"{minutes}m",
                         description, runbook, for_=f"{minutes}m"))
    return alerts


def alert_groups(config: PlatformConfig) -> list[dict[str, Any]]:
    """The alerting rule groups for this stack."""
    obs = config.observability
    groups = []
    if obs.dcgm:
        groups += [
            _group("gpu-platform.hoarding", _hoarding_alerts(obs.slo.idle_minutes)),
            _group("gpu-platform.utilization-slo", _slo_alerts(obs.slo.min_utilization)),
            _group("gpu-platform.gpu-health", _health_alerts()),
            _group("gpu-platform.gpu-exporter", _exporter_alerts()),
        ]
    groups.append(_group("gpu-platform.queues", _queue_alerts(config)))
    return groups


def record_names(groups: list[dict[str, Any]]) -> list[str]:
    return [r["record"] for g in groups for r in g["rules"] if "record" in r]
