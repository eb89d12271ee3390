"""The observability layer: Prometheus, GPU rules and dashboard, and the opt-in idle-GPU reclaimer."""
from __future__ import annotations

from components.context import Context
from components.observability.monitoring import GpuMonitoring, GpuMonitoringArgs
from components.observability.prometheus import Prometheus
from components.observability.reclaimer.component import Reclaimer


def install(ctx: Context) -> None:
    """Install (or target) Prometheus, then what it evaluates and shows; the reclaimer only when asked for."""
    config = ctx.config
    obs = config.observability
    prometheus = Prometheus("prometheus", config, opts=ctx.k8s_opts())
    ctx.handles["prometheus"] = prometheus.ready
    # The monitoring CRDs come with the release; the scheduler's metrics service with its chart.
    # The configured namespace, carried by the release's URN (known in a preview) so the objects still depend on it;
    # not `prometheus.namespace`: the SDK turns a component's registered properties into outputs of the engine's
    # answer, unknown in a real preview, which then proposed moving these objects to `default`.
    namespace = prometheus.ready.urn.apply(lambda _: obs.prometheus.namespace)
    GpuMonitoring("gpu-monitoring", GpuMonitoringArgs.from_config(config, namespace),
                  opts=ctx.k8s_opts("prometheus", config.scheduler.kind))
    if obs.reclaim.enabled:
        namespaces = {t.name: ctx.handles[f"namespace/{t.name}"] for t in config.teams}
        Reclaimer("gpu-reclaimer", config, prometheus.url, namespaces,
                  opts=ctx.k8s_opts("prometheus", config.scheduler.kind))
    ctx.exports["observability"] = {
        "prometheusNamespace": obs.prometheus.namespace,
        "prometheusUrl": prometheus.url,
        "selector": prometheus.selector,
        "reclaim": {"enabled": obs.reclaim.enabled, "dryRun": obs.reclaim.dry_run,
                    "teams": [t.name for t in config.teams if t.reclaim]},
    }
