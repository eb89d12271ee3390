"""Workloads to replay: the documented CSV format, Gavel's Philly-derived traces, and a synthetic generator.

CSV (one job per line, `#` comments and blank lines ignored, optional header naming the columns):

    job_id,team,submit_s,duration_s,gpus[,pool][,priority]

`gpus` counts units of the resource the job asks for: whole GPUs, or MIG slices / shared replicas on pools that
advertise those. `pool` (optional) is a pool or flavor name, optionally with a resource (`a100-infer/mig-1g.10gb`
or just `nvidia.com/mig-1g.10gb`). `priority` (optional) is an integer, a priority class name (`gpu-high`) or a
level (`high`); empty means no priority class (the planned global default PriorityClass, as in Kueue).
"""
from __future__ import annotations

import csv
import math
import random
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable

from components.config.reader import ReadError, decode, load_yaml
from gpu_platform.simulator.errors import SimulationError

CSV_COLUMNS = ("job_id", "team", "submit_s", "duration_s", "gpus", "pool", "priority")
REQUIRED = CSV_COLUMNS[:5]
MIN_RUNTIME_S = 1.0  # Philly lists 0-second runtimes (failed starts); a job holds its GPUs at least this long
# Bounds on what a trace may say: past them a number is a typo (or an attack), and the simulation would not end.
MAX_SECONDS = 10 * 365 * 86400.0  # submit and duration times: ten years
MAX_UNITS = 1_000_000  # GPUs (or slices, replicas) one job asks for
MAX_SYNTHETIC_JOBS = 200_000  # bench's largest synthetic trace is 20,000 jobs
_WHOLE = re.compile(r"[0-9]{1,7}")  # ASCII digits only: str.isdigit() also takes '²' and '٣'


@dataclass(frozen=True)
class TraceJob:
    """One job as the trace gives it; `team` and `priority` are resolved against the model later."""

    job_id: str
    team: str
    submit_s: float
    duration_s: float
    units: int
    pool: str | None = None
    resource: str | None = None
    priority: str | int | None = None
    label: str = ""  # a class name for grouping (e.g. small/medium/large)


# ---- CSV ------------------------------------------------------------------------------------------------------

def read_csv(path: str | Path) -> list[TraceJob]:
    """The documented CSV format; any problem raises SimulationError naming file and line."""
    path = Path(path)
    return parse_csv(_text(path, "trace").splitlines(), str(path))


def _text(path: Path, what: str) -> str:
    """A UTF-8 text file (with or without a byte-order mark), or SimulationError saying why not."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SimulationError(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SimulationError(f"{path}: {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                              f"{exc.start}); save it as UTF-8") from None


def parse_csv(lines: Iterable[str], name: str = "trace") -> list[TraceJob]:
    jobs: list[TraceJob] = []
    seen: dict[str, int] = {}
    columns: tuple[str, ...] | None = None
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{name}:{lineno}"
        try:
            cells = [c.strip() for c in next(csv.reader([line]))]
        except csv.Error as exc:  # a field past the csv module's size limit, for one
            raise SimulationError(f"{where}: not a CSV line ({exc})") from None
        if columns is None:
            if "job_id" in cells:
                unknown = [c for c in cells if c not in CSV_COLUMNS]
                missing = [c for c in REQUIRED if c not in cells]
                repeated = sorted({c for c in cells if cells.count(c) > 1})
                if repeated:
                    raise SimulationError(f"{where}: header names column(s) {', '.join(repeated)} more than once; "
                                          f"name each of {','.join(CSV_COLUMNS)} at most once")
                if unknown or missing:
                    raise SimulationError(f"{where}: header must name columns {','.join(CSV_COLUMNS)} "
                                          f"(first five required); "
                                          + ("unknown: " + ", ".join(unknown) if unknown else
                                             "missing: " + ", ".join(missing)))
                columns = tuple(cells)
                continue
            columns = CSV_COLUMNS
        if len(cells) < len(REQUIRED) or len(cells) > len(columns):
            raise SimulationError(f"{where}: expected {len(REQUIRED)} to {len(columns)} comma-separated fields "
                                  f"({','.join(columns)}), got {len(cells)}")
        row = dict(zip(columns, cells))
        job = _row_job(row, where)
        if job.job_id in seen:
            raise SimulationError(f"{where}: job_id {job.job_id!r} repeats line {seen[job.job_id]}")
        seen[job.job_id] = lineno
        jobs.append(job)
    if not jobs:
        raise SimulationError(f"{name}: no jobs in trace")
    return jobs


def _number(row: dict[str, str], key: str, where: str, minimum: float) -> float:
    return number(row.get(key, ""), f"{where}: {key}", minimum, MAX_SECONDS)


def number(value: str, what: str, minimum: float, maximum: float) -> float:
    """A finite decimal number from `minimum` to `maximum`, or SimulationError naming `what`."""
    try:
        result = float(value) if value.isascii() else math.nan
    except ValueError:
        result = math.nan
    if not minimum <= result <= maximum:  # NaN fails both comparisons
        raise SimulationError(f"{what} must be a number from {minimum:g} to {maximum:g}, got {value[:40]!r}")
    return result


def whole(value: str, what: str, minimum: int = 1, maximum: int = MAX_UNITS) -> int:
    """A whole number in ASCII digits from `minimum` to `maximum`, or SimulationError naming `what`."""
    value = value.strip()
    if not _WHOLE.fullmatch(value) or not minimum <= int(value) <= maximum:
        raise SimulationError(f"{what} must be a whole number from {minimum} to {maximum}, got {value[:40]!r}")
    return int(value)


def _row_job(row: dict[str, str], where: str) -> TraceJob:
    if not row["job_id"]:
        raise SimulationError(f"{where}: job_id is empty")
    if not row["team"]:
        raise SimulationError(f"{where}: team is empty")
    units = whole(row["gpus"], f"{where}: gpus")
    pool, resource = split_pool(row.get("pool") or "")
    return TraceJob(job_id=row["job_id"], team=row["team"], submit_s=_number(row, "submit_s", where, 0),
                    duration_s=_number(row, "duration_s", where, 0), units=units, pool=pool, resource=resource,
                    priority=row.get("priority") or None)


def split_pool(text: str) -> tuple[str | None, str | None]:
    """`pool`, `pool/resource` or a resource name (containing a dot and a slash, e.g. nvidia.com/mig-1g.10gb)."""
    text = text.strip()
    if not text:
        return None, None
    if text.startswith("nvidia.com/"):
        return None, text
    pool, _, resource = text.partition("/")
    if resource and not resource.startswith("nvidia.com/"):
        resource = f"nvidia.com/{resource}"
    return pool, resource or None


# ---- Gavel (Philly-derived) ----------------------------------------------------------------------------------

def read_runtimes(path: str | Path) -> list[float]:
    """Philly job runtimes in seconds (one column `runtime`), floored at MIN_RUNTIME_S."""
    path = Path(path)
    lines = _text(path, "runtimes").splitlines()
    runtimes = []
    for lineno, line in enumerate(lines, 1):
        cell = line.strip()
        if not cell or cell == "runtime":
            continue
        value = number(cell, f"{path}:{lineno}: runtime", 0, MAX_SECONDS)
        runtimes.append(max(MIN_RUNTIME_S, value))
    if not runtimes:
        raise SimulationError(f"{path}: no runtimes")
    return runtimes


def default_runtimes(trace: Path) -> Path | None:
    """`philly-runtimes/philly_runtime.csv` next to the Gavel folder, as laid out in ../shared/traces."""
    for parent in (trace, *trace.parents):
        candidate = parent / "philly-runtimes" / "philly_runtime.csv"
        if candidate.exists():
            return candidate
    return None


def read_gavel(path: str | Path, runtimes: str | Path | None = None, seed: int = 0) -> list[TraceJob]:
    """Gavel per-team traces (a folder of `<team>.trace` files, or one file): arrivals and gang sizes.

    Durations are drawn with `random.Random(seed)` from the Philly runtimes, in (team, line) order, so the same
    seed always gives the same trace.
    """
    path = Path(path)
    files = sorted(path.rglob("*.trace")) if path.is_dir() else [path]
    if not files:
        raise SimulationError(f"{path}: no *.trace files")
    runtime_file = Path(runtimes) if runtimes else default_runtimes(path)
    if runtime_file is None:
        raise SimulationError(f"{path}: no philly-runtimes/philly_runtime.csv found nearby; pass --runtimes FILE")
    pool = read_runtimes(runtime_file)
    rng = random.Random(seed)
    jobs = []
    for file in files:
        team = file.stem
        lines = _text(file, "trace").splitlines()
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            fields = line.split("\t")
            where = f"{file}:{lineno}"
            if len(fields) != 7:
                raise SimulationError(f"{where}: expected 7 tab-separated fields (job_type, command, "
                                      f"num_steps_arg, needs_data_dir, total_steps, arrival_time, scale_factor), "
                                      f"got {len(fields)}")
            arrival = number(fields[5].strip(), f"{where}: arrival_time", 0, MAX_SECONDS)
            gang = whole(fields[6], f"{where}: scale_factor (the job's GPUs)")
            jobs.append(TraceJob(job_id=f"{team}-{lineno}", team=team, submit_s=arrival,
                                 duration_s=rng.choice(pool), units=gang, label=fields[0]))
    return jobs


# ---- synthetic -------------------------------------------------------------------------------------------------

DEFAULT_GANGS = {1: 0.55, 2: 0.1, 4: 0.15, 8: 0.15, 16: 0.05}  # gang size -> share of jobs


def synthetic(teams: list[str] | dict[str, float], jobs: int = 1000, seed: int = 0, interarrival: float = 120.0,
              gangs: dict[int, float] | None = None, median: float = 1800.0, sigma: float = 1.5,
              max_duration: float = 7 * 86400.0, pool: str | None = None) -> list[TraceJob]:
    """A Poisson arrival stream split over teams (by weight), a gang-size mix, log-normal (heavy-tailed) durations.

    `interarrival` is the mean seconds between jobs cluster-wide; `median` and `sigma` shape the duration
    distribution (sigma 1.5 gives p99/p50 of about 30, close to Philly's).
    """
    weights = teams if isinstance(teams, dict) else {t: 1.0 for t in teams}
    gangs = gangs or DEFAULT_GANGS
    bad = [f"{what} ({value!r})" for what, value, ok in (
        ("jobs from 1 to %d" % MAX_SYNTHETIC_JOBS, jobs, 1 <= jobs <= MAX_SYNTHETIC_JOBS),
        ("interarrival > 0", interarrival, 0 < interarrival <= MAX_SECONDS),
        ("median > 0", median, 0 < median <= MAX_SECONDS),
        ("sigma from 0 to 10", sigma, 0 <= sigma <= 10),
        ("max > 0", max_duration, 0 < max_duration <= MAX_SECONDS),
        ("team weights >= 0, not all 0", weights, bool(weights) and _weights_ok(weights.values())),
        (f"gang sizes from 1 to {MAX_UNITS} with weights >= 0, not all 0", gangs,
         all(1 <= g <= MAX_UNITS for g in gangs) and _weights_ok(gangs.values())),
    ) if not ok]
    if bad:
        raise SimulationError(f"synthetic trace needs {'; '.join(bad)}; times up to {MAX_SECONDS:g} s")
    rng = random.Random(seed)
    names, team_w = list(weights), list(weights.values())
    sizes, size_w = list(gangs), list(gangs.values())
    t = 0.0
    out = []
    for i in range(jobs):
        t += rng.expovariate(1.0 / interarrival)
        duration = min(max_duration, max(MIN_RUNTIME_S, rng.lognormvariate(math.log(median), sigma)))
        out.append(TraceJob(job_id=f"syn-{i}", team=rng.choices(names, team_w)[0], submit_s=round(t, 3),
                            duration_s=round(duration, 3), units=rng.choices(sizes, size_w)[0], pool=pool))
    return out


def _weights_ok(weights) -> bool:
    weights = list(weights)
    return all(0 <= w < math.inf for w in weights) and sum(weights) > 0


def parse_synthetic(spec: str, teams: list[str], seed: int) -> list[TraceJob]:
    """`synthetic[:key=value,...]`: jobs, interarrival, median, sigma, max, pool, teams (`a/b` or weighted
    `a:3/b:1`), gangs (`1:60/8:40`)."""
    options: dict[str, Any] = {}
    weights: dict[str, float] = {t: 1.0 for t in teams}
    body = spec.partition(":")[2]
    known = ("jobs", "interarrival", "median", "sigma", "max", "pool", "teams", "gangs")
    for part in filter(None, (p.strip() for p in body.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise SimulationError(f"synthetic trace option {part!r} is not key=value")
        if key not in known:
            raise SimulationError(f"unknown synthetic trace option {key!r}; known: {', '.join(known)}")
        what = f"synthetic trace option {key}"
        if key == "jobs":
            options["jobs"] = whole(value, what, 1, MAX_SYNTHETIC_JOBS)
        elif key in ("interarrival", "median", "sigma", "max"):
            options["max_duration" if key == "max" else key] = number(value, what, 0, MAX_SECONDS)
        elif key == "pool":
            options["pool"] = value
        elif key == "teams":
            weights = {name: number(w or "1", f"{what} weight of {name!r}", 0, 1e6)
                       for name, _, w in (t.partition(":") for t in value.split("/") if t)}
        else:
            options["gangs"] = {whole(k, f"{what} (gang size)"): number(w, f"{what} weight of gang {k!r}", 0, 1e6)
                                for k, _, w in (g.partition(":") for g in value.split("/"))}
    return synthetic(weights, seed=seed, **options)


# ---- team mapping ----------------------------------------------------------------------------------------------

def read_team_map(path: str | Path) -> dict[str, str]:
    """A mapping file: YAML/JSON `{trace_team: stack_team}`, or CSV lines `trace_team,stack_team`."""
    path = Path(path)
    try:
        text = decode(path.read_bytes())
        if path.suffix in (".yaml", ".yml", ".json"):
            data = load_yaml(text)  # JSON is YAML 1.2 too
    except OSError as exc:
        raise SimulationError(f"cannot read team map {path}: {exc.strerror}") from None
    except ReadError as exc:
        raise SimulationError(f"team map {path} {exc}") from None
    if path.suffix in (".yaml", ".yml", ".json"):
        if not isinstance(data, dict):
            raise SimulationError(f"{path}: expected a mapping trace_team: stack_team")
        return {str(k): str(v) for k, v in data.items()}
    mapping = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 2 or not all(cells):
            raise SimulationError(f"{path}:{lineno}: expected trace_team,stack_team")
        mapping[cells[0]] = cells[1]
    return mapping


def map_teams(jobs: list[TraceJob], stack_teams: list[str], mapping: dict[str, str] | str | None,
              known=None, eligible=None) -> list[TraceJob]:
    """Rename trace teams to stack teams: by name, through `mapping`, or `auto` (teams that match keep their
    name, the others are dealt round-robin over the stack teams in sorted order). `eligible(pools)` names the stack
    teams with quota on every pool in `pools` (a trace team's job pools, None for a job that names none): `auto`
    deals a trace team only to those when there are any, since jobs dealt to a team without quota there could never
    run."""
    known = known or (lambda name: name if name in stack_teams else None)
    eligible = eligible or (lambda pools: stack_teams)
    trace_teams = sorted({j.team for j in jobs})
    if mapping == "auto":
        unmatched = [t for t in trace_teams if known(t) is None]
        dealt = dict.fromkeys(stack_teams, 0)
        mapping = {}
        for team in unmatched:
            # Where no stack team has quota on its pools, any team: the run then lists its jobs as never admittable.
            candidates = eligible({j.pool for j in jobs if j.team == team}) or stack_teams
            # Round-robin over the teams that can run the jobs: the least dealt so far, in stack order.
            mapping[team] = min(candidates, key=lambda name: dealt[name])
            dealt[mapping[team]] += 1
    mapping = mapping or {}
    resolved: dict[str, str] = {}
    unknown = []
    for team in trace_teams:
        target = known(mapping.get(team, team))
        if target is None:
            unknown.append(team)
        else:
            resolved[team] = target
    if unknown:
        shown = ", ".join(unknown[:8]) + (f" (+{len(unknown) - 8} more)" if len(unknown) > 8 else "")
        raise SimulationError(f"trace team(s) {shown} match no stack team ({', '.join(stack_teams)}); "
                              "pass --team-map FILE or --team-map auto")
    return [replace(j, team=resolved[j.team]) for j in jobs]
