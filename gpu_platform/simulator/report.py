"""Metrics of a simulation and the side-by-side report (table, JSON, HTML with inline SVG plots).

Definitions (docs/simulator.md has the long form):
- allocated share: GPU-time bound to pods over capacity x span (span: first submit to end), per team and overall;
- usage vs nominal: GPU-time of admitted quota over nominal quota x span;
- queueing delay: first start minus submit; jobs that never started count with their wait so far (a lower bound);
- idle GPU-minutes while pending: the integral of min(idle GPUs, GPUs wanted by waiting jobs that could use
  them), per pool;
- Jain's fairness index over teams that submitted jobs, of allocation normalised by nominal quota.
"""
from __future__ import annotations

import html
import json
import math
from typing import Any

from gpu_platform.simulator.engine import (ADMITTED, BACKOFF, DONE, EVICTING, INACTIVE, QUEUED, RUNNING,
                                           SimResult)

GANG_BUCKETS = ((1, 1, "1"), (2, 2, "2"), (3, 4, "3-4"), (5, 8, "5-8"), (9, 16, "9-16"), (17, 32, "17-32"),
                (33, 10**9, "33+"))
SERIES_POINTS = 120
PENDING = (QUEUED, BACKOFF, ADMITTED, INACTIVE)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of sorted values."""
    if not values:
        return None
    rank = max(1, math.ceil(q / 100 * len(values)))
    return values[rank - 1]


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def _delays(jobs, end: float) -> list[float]:
    return sorted((j.first_start if j.first_start is not None else end) - j.submit for j in jobs)


def _delay_stats(delays: list[float]) -> dict[str, Any]:
    return {"queue_delay_p50_s": _round(percentile(delays, 50)), "queue_delay_p95_s": _round(percentile(delays, 95)),
            "queue_delay_p99_s": _round(percentile(delays, 99)),
            "queue_delay_mean_s": _round(sum(delays) / len(delays)) if delays else None}


def _by_gang(jobs, end: float) -> dict[str, Any]:
    out = {}
    for low, high, name in GANG_BUCKETS:
        bucket = [j for j in jobs if low <= j.units <= high]
        if bucket:
            delays = _delays(bucket, end)
            out[name] = {"jobs": len(bucket), "p50_s": _round(percentile(delays, 50)),
                         "p95_s": _round(percentile(delays, 95)), "p99_s": _round(percentile(delays, 99))}
    return out


def _counts(jobs) -> dict[str, int]:
    return {"jobs_submitted": len(jobs), "jobs_completed": sum(1 for j in jobs if j.state == DONE),
            "jobs_running_at_end": sum(1 for j in jobs if j.state in (RUNNING, EVICTING)),
            "jobs_pending_at_end": sum(1 for j in jobs if j.state in PENDING),
            "jobs_deactivated": sum(1 for j in jobs if j.state == INACTIVE)}


def _completion(jobs) -> dict[str, Any]:
    times = sorted(j.finish_t - j.submit for j in jobs if j.state == DONE)
    return {"completion_time_p50_s": _round(percentile(times, 50)),
            "completion_time_p95_s": _round(percentile(times, 95)),
            "completion_time_mean_s": _round(sum(times) / len(times)) if times else None}


def jain(values: list[float]) -> float | None:
    """Jain's fairness index: 1 when all equal, 1/n when one takes everything."""
    if not values or not any(values):
        return None
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def summarize(result: SimResult) -> dict[str, Any]:
    """Overall and per-team metrics, plus the allocation time series; jobs submitted after the end (a
    `--horizon` before the trace's last arrival) are left out and counted apart."""
    jobs = [j for j in result.jobs if j.submit <= result.end]
    t0 = min((j.submit for j in jobs), default=0.0)
    span = max(result.end - t0, 1e-9)
    capacity = result.capacity_gpus
    by_team: dict[int, list] = {i: [] for i in range(len(result.teams))}
    for job in jobs:
        by_team[job.team].append(job)
    lost_by_team: dict[str, list[float]] = {}
    for p in result.preemptions:
        lost_by_team.setdefault(p.team, []).append(p.lost_gpu_s)
    reasons: dict[str, int] = {}
    for p in result.preemptions:
        reasons[p.reason] = reasons.get(p.reason, 0) + 1
    teams = {}
    normalised = []
    for i, name in enumerate(result.teams):
        team_jobs = by_team[i]
        nominal = result.team_nominal_gpus[i]
        avg_alloc = result.alloc_area[i] / span
        lost = lost_by_team.get(name, [])
        teams[name] = {
            **_counts(team_jobs),
            "nominal_gpus": _round(nominal, 2),
            "avg_allocated_gpus": _round(avg_alloc, 2),
            "allocated_share": _round(avg_alloc / capacity, 4) if capacity else None,
            "usage_vs_nominal": _round(result.usage_area[i] / span / nominal, 4) if nominal else None,
            **_delay_stats(_delays(team_jobs, result.end)),
            **_completion(team_jobs),
            "preemptions": len(lost),
            "preempted_gpu_hours": _round(sum(lost) / 3600, 2),
        }
        if team_jobs and nominal:
            normalised.append(avg_alloc / nominal)
    total_alloc = sum(result.alloc_area) / span
    never = [b for b in result.never_admittable if b.job.submit <= result.end]
    overall = {
        **_counts(jobs),
        "jobs_never_admittable": len(never),
        "jobs_stalled": result.stalled,
        "jobs_after_horizon": len(result.jobs) - len(jobs),
        "capacity_gpus": _round(capacity, 2),
        "span_s": _round(span),
        "allocated_share": _round(total_alloc / capacity, 4) if capacity else None,
        "usage_vs_nominal": _round(sum(result.usage_area) / span / sum(result.team_nominal_gpus), 4)
        if sum(result.team_nominal_gpus) else None,
        **_delay_stats(_delays(jobs, result.end)),
        "queue_delay_by_gang": _by_gang(jobs, result.end),
        **_completion(jobs),
        "preemptions": len(result.preemptions),
        "preemptions_by_reason": dict(sorted(reasons.items())),
        "preempted_gpu_hours": _round(sum(p.lost_gpu_s for p in result.preemptions) / 3600, 2),
        "idle_gpu_minutes_while_pending": _round(result.idle_pending_gpu_s / 60),
        "jain_fairness": _round(jain(normalised), 4),
        "scheduling_cycles": result.cycles,
    }
    pools = {}
    per_pool: dict[str, int] = {}
    for name in result.groups:
        per_pool[name.partition("/")[0]] = per_pool.get(name.partition("/")[0], 0) + 1
    for name, group in result.groups.items():
        pool = name.partition("/")[0]
        pools[pool if per_pool[pool] == 1 else name] = {"capacity_gpus": _round(group["capacity_gpus"], 2),
                       "allocated_share": _round(group["used_gpu_s"] / span / group["capacity_gpus"], 4)
                       if group["capacity_gpus"] else None,
                       "idle_gpu_minutes_while_pending": _round(group["idle_pending_gpu_s"] / 60)}
    out = {"overall": overall, "teams": teams, "pools": pools, "series": series(result, t0),
           "never_admittable": [{"job": b.job.id, "team": result.teams[b.job.team], "units": b.job.units,
                                 "resource": b.job.resource,
                                 "limits": [{"flavor": lim.flavor, "limit": lim.kind, "at_most": lim.at_most,
                                             "message": lim.message} for lim in b.limits]} for b in never]}
    if result.livelock is not None:
        ll = result.livelock
        out["livelock"] = {"stopped_at_s": _round(ll.time), "since_s": _round(ll.since), "kind": ll.kind,
                           "evictions": ll.evictions, "jobs": ll.jobs, "queues": ll.queues, "reasons": ll.reasons,
                           "message": ll.describe()}
    return out


def series(result: SimResult, t0: float, points: int = SERIES_POINTS) -> dict[str, Any]:
    """Allocated GPUs per team sampled at `points` instants from t0 to the end (step function)."""
    end = result.end
    n = len(result.teams)
    step = (end - t0) / (points - 1) if end > t0 else 0.0
    times = [t0 + k * step for k in range(points)]
    values = [[0.0] * points for _ in range(n)]
    current = [0.0] * n
    st, steam, svalue = result.series_t, result.series_team, result.series_value
    i, total = 0, len(st)
    for k, t in enumerate(times):
        while i < total and st[i] <= t:
            current[steam[i]] = svalue[i]
            i += 1
        for team in range(n):
            values[team][k] = round(current[team], 3)
    return {"t_s": [round(t, 1) for t in times], "allocated_gpus": dict(zip(result.teams, values))}


def build_report(result: SimResult, baseline: SimResult | None, meta: dict[str, Any]) -> dict[str, Any]:
    """The JSON report: the stack's metrics at the top level, the baseline's in `baseline` with the same shape."""
    report = {**meta, **summarize(result)}
    if baseline is not None:
        report["baseline"] = {"name": meta.get("baseline"), **summarize(baseline)}
    return report


# ---- rendering -------------------------------------------------------------------------------------------------

def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2)


def _fmt(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key in ("allocated_share", "usage_vs_nominal"):
        return f"{100 * value:.1f}%"
    if key.endswith("_s"):
        return _duration(value)
    if isinstance(value, float):
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{value:,}"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


OVERALL_ROWS = (
    ("allocated_share", "allocated share of capacity"), ("usage_vs_nominal", "usage vs nominal quota"),
    ("jobs_submitted", "jobs submitted"), ("jobs_after_horizon", "jobs submitted after the horizon (left out)"),
    ("jobs_completed", "jobs completed"),
    ("jobs_running_at_end", "jobs running at end"), ("jobs_pending_at_end", "jobs pending at end"),
    ("jobs_deactivated", "  of which deactivated (requeue limit)"),
    ("jobs_never_admittable", "  of which never admittable (listed below)"),
    ("jobs_stalled", "jobs stalled (partial gangs)"),
    ("queue_delay_p50_s", "queueing delay p50"),
    ("queue_delay_p95_s", "queueing delay p95"), ("queue_delay_p99_s", "queueing delay p99"),
    ("completion_time_p50_s", "completion time p50"), ("completion_time_p95_s", "completion time p95"),
    ("preemptions", "preemptions"), ("preempted_gpu_hours", "GPU-hours lost to preemption"),
    ("idle_gpu_minutes_while_pending", "GPU-minutes idle while jobs wait"), ("jain_fairness", "Jain's fairness"),
)
TEAM_ROWS = (
    ("allocated_share", "allocated share"), ("usage_vs_nominal", "usage vs nominal"),
    ("jobs_completed", "jobs completed"), ("jobs_pending_at_end", "jobs pending at end"),
    ("queue_delay_p50_s", "delay p50"), ("queue_delay_p95_s", "delay p95"), ("queue_delay_p99_s", "delay p99"),
    ("preemptions", "preemptions"), ("preempted_gpu_hours", "GPU-hours lost to preemption"),
)


def _rows(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    base = report.get("baseline")
    rows = []
    for key, label in OVERALL_ROWS:
        if key == "jobs_after_horizon" and not report["overall"][key]:
            continue
        rows.append((label, _fmt(key, report["overall"].get(key)),
                     _fmt(key, base["overall"].get(key)) if base else ""))
        if key == "preemptions":
            reasons = sorted(set(report["overall"]["preemptions_by_reason"])
                             | set(base["overall"]["preemptions_by_reason"] if base else ()))
            for reason in reasons:
                rows.append((f"  {reason}", _fmt("", report["overall"]["preemptions_by_reason"].get(reason, 0)),
                             _fmt("", base["overall"]["preemptions_by_reason"].get(reason, 0)) if base else ""))
    for pool, data in report["pools"].items():
        theirs = base["pools"][pool] if base else None
        rows.append((f"pool {pool} ({_fmt('', data['capacity_gpus'])} GPUs) allocated share",
                     _fmt("allocated_share", data["allocated_share"]),
                     _fmt("allocated_share", theirs["allocated_share"]) if theirs else ""))
        rows.append((f"pool {pool} GPU-minutes idle while jobs wait",
                     _fmt("", data["idle_gpu_minutes_while_pending"]),
                     _fmt("", theirs["idle_gpu_minutes_while_pending"]) if theirs else ""))
    for low, high, name in GANG_BUCKETS:
        mine = report["overall"]["queue_delay_by_gang"].get(name)
        theirs = base["overall"]["queue_delay_by_gang"].get(name) if base else None
        if mine:
            rows.append((f"delay p50/p95 gang {name} ({mine['jobs']} jobs)",
                         f"{_fmt('p_s', mine['p50_s'])} / {_fmt('p_s', mine['p95_s'])}",
                         f"{_fmt('p_s', theirs['p50_s'])} / {_fmt('p_s', theirs['p95_s'])}" if theirs else ""))
    for team, data in report["teams"].items():
        if not data["jobs_submitted"]:
            continue
        rows.append((f"team {team} (nominal {_fmt('', data['nominal_gpus'])} GPUs, "
                     f"{data['jobs_submitted']} jobs)", "", ""))
        for key, label in TEAM_ROWS:
            rows.append((f"  {label}", _fmt(key, data.get(key)),
                         _fmt(key, base["teams"][team].get(key)) if base else ""))
    return rows


def render_table(report: dict[str, Any]) -> str:
    base = report.get("baseline")
    header = ("", "stack", f"baseline: {base['name']}" if base else "")
    rows = [header, *_rows(report)]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{report['stack']}: {report['trace_name']} ({report['overall']['jobs_submitted']} jobs, "
             f"{report['scheduler']}, capacity {_fmt('', report['overall']['capacity_gpus'])} GPUs, "
             f"cycle {report['cycle_s']}s)"]
    lines += [f"warning: {w}" for w in report.get("warnings", [])]
    for name, part in (("stack", report), ("baseline", base or {})):
        if part.get("livelock"):
            lines.append(f"warning: {name} run {part['livelock']['message']}")
    for label, mine, theirs in rows:
        lines.append(f"{label.ljust(widths[0])}  {mine.rjust(widths[1])}  {theirs.rjust(widths[2])}".rstrip())
    for name, part in (("stack", report), (f"baseline {base['name']}" if base else "", base or {})):
        lines += _never_lines(name, part.get("never_admittable") or [])
    return "\n".join(lines)


NEVER_SHOWN = 20  # jobs listed in the table; the JSON report has them all


def _never_lines(run: str, never: list[dict[str, Any]]) -> list[str]:
    """Jobs the run can never admit, each with the limit that blocks it on every flavor it may use."""
    if not never:
        return []
    lines = [f"never admittable in the {run} run ({len(never)} jobs; they stay pending):"]
    for item in never[:NEVER_SHOWN]:
        limits = "; ".join(lim["message"] for lim in item["limits"])
        lines.append(f"  job {item['job']} (team {item['team']}, {item['units']} {item['resource']}): {limits}")
    if len(never) > NEVER_SHOWN:
        lines.append(f"  and {len(never) - NEVER_SHOWN} more (see --format json)")
    return lines


PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")


def _svg_lines(title: str, series_sets: list[tuple[str, str, bool, list[tuple[float, float]]]], x_label: str,
               y_label: str, log_x: bool = False) -> str:
    """A line chart: (name, colour, dashed, points) per line."""
    width, height, left, bottom, top, right = 760, 320, 64, 44, 28, 180
    points = [p for *_, pts in series_sets for p in pts]
    if not points:
        return ""

    def fx(x: float) -> float:
        return math.log10(max(x, 1.0)) if log_x else x

    xs = [fx(x) for x, _ in points]
    x_min, x_max = min(xs), max(xs) or 1.0
    y_max = max((y for _, y in points), default=1.0) or 1.0
    if x_max == x_min:
        x_max = x_min + 1

    def sx(x: float) -> float:
        return left + (fx(x) - x_min) / (x_max - x_min) * (width - left - right)

    def sy(y: float) -> float:
        return height - bottom - y / y_max * (height - bottom - top)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">',
           f'<text x="{left}" y="18" font-size="14" font-weight="bold">{html.escape(title)}</text>',
           f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#333"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#333"/>']
    for k in range(5):
        y = y_max * k / 4
        out.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" font-size="10" text-anchor="end">{y:,.3g}</text>')
        xv = x_min + (x_max - x_min) * k / 4
        label = f"{10 ** xv:,.3g}" if log_x else f"{xv:,.3g}"
        out.append(f'<text x="{left + (width - left - right) * k / 4:.1f}" y="{height - bottom + 14}" '
                   f'font-size="10" text-anchor="middle">{label}</text>')
    out.append(f'<text x="{(width - right + left) / 2}" y="{height - 6}" font-size="11" '
               f'text-anchor="middle">{html.escape(x_label)}</text>')
    out.append(f'<text x="14" y="{(height - bottom + top) / 2}" font-size="11" text-anchor="middle" '
               f'transform="rotate(-90 14 {(height - bottom + top) / 2})">{html.escape(y_label)}</text>')
    for n, (name, colour, dashed, pts) in enumerate(series_sets):
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        dash = ' stroke-dasharray="5,4"' if dashed else ""
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.6"{dash} points="{path}"/>')
        ly = top + 14 * n
        out.append(f'<line x1="{width - right + 10}" y1="{ly}" x2="{width - right + 34}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{width - right + 38}" y="{ly + 4}" font-size="10">{html.escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _cdf(delays: list[float], points: int = 60) -> list[tuple[float, float]]:
    if not delays:
        return []
    n = len(delays)
    return [(max(delays[min(n - 1, int(k * (n - 1) / (points - 1)))], 1.0), k / (points - 1)) for k in range(points)]


def render_html(report: dict[str, Any], result: SimResult, baseline: SimResult | None) -> str:
    """A self-contained page: the comparison table and two inline SVG plots."""
    base_name = report.get("baseline", {}).get("name")
    teams = [t for t, d in report["teams"].items() if d["jobs_submitted"]]
    colours = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(teams)}
    alloc_lines = []
    runs = [("stack", report, False)] + ([(base_name, report["baseline"], True)] if baseline else [])
    for label, data, dashed in runs:
        start = data["series"]["t_s"][0]
        hours = [(t - start) / 3600 for t in data["series"]["t_s"]]
        for team in teams:
            values = data["series"]["allocated_gpus"][team]
            alloc_lines.append((f"{team} ({label})", colours[team], dashed, list(zip(hours, values))))
    cdf_lines = []
    for label, res, dashed in [("stack", result, False)] + ([(base_name, baseline, True)] if baseline else []):
        for i, team in enumerate(res.teams):
            if team in colours:
                cdf_lines.append((f"{team} ({label})", colours[team], dashed,
                                  _cdf(_delays([j for j in res.jobs if j.team == i], res.end))))
    rows = "\n".join(f"<tr><td>{html.escape(a)}</td><td>{html.escape(b)}</td><td>{html.escape(c)}</td></tr>"
                     for a, b, c in _rows(report))
    warnings = "".join(f"<p class=warn>warning: {html.escape(w)}</p>" for w in report.get("warnings", []))
    title = f"gpu-platform simulate {report['stack']}: {report['trace_name']}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1000px}} table{{border-collapse:collapse}}
td,th{{padding:2px 10px;border-bottom:1px solid #ddd;text-align:right}} td:first-child{{text-align:left}}
.warn{{color:#a60}}</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{report['overall']['jobs_submitted']} jobs, scheduler {html.escape(report['scheduler'])}, capacity
{_fmt('', report['overall']['capacity_gpus'])} GPUs, cycle {report['cycle_s']} s.
Solid lines: the stack as planned; dashed: baseline ({html.escape(str(base_name))}).</p>
{warnings}
<table><tr><th></th><th>stack</th><th>{html.escape(f'baseline: {base_name}' if base_name else '')}</th></tr>
{rows}
</table>
<h2>GPUs allocated per team over time</h2>
{_svg_lines('Allocated GPUs', alloc_lines, 'hours since first submit', 'GPUs')}
<h2>Queueing delay, cumulative distribution</h2>
{_svg_lines('Queueing delay CDF', cdf_lines, 'seconds (log scale)', 'fraction of jobs started', log_x=True)}
</body></html>
"""
