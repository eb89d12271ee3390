"""`gpu-platform simulate`: replay a GPU job trace against the queues a stack plans, next to a baseline."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from gpu_platform.cli import USAGE_ERROR, UsageError, add_stack_arguments, config_warnings, print_warnings, write_output

BASELINES = ("static", "no-gang", "none")
# A run that takes longer than this says how far it is, on standard error, at most this often.
PROGRESS_AFTER_S = 2.0
TRACE_FORMATS = ("csv", "gavel", "synthetic")
TAS_REQUESTS = ("required", "preferred", "implied")  # model.TAS_REQUESTS, without importing the simulator here


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "simulate", help="what-if: replay a job trace against the stack's planned queues, quotas and gang settings")
    add_stack_arguments(parser)
    parser.add_argument("--plan", help="read the plan JSON (`gpu-platform plan --format json`) instead of planning")
    parser.add_argument("--trace", required=True,
                        help="CSV file, Gavel .trace file or folder, or synthetic[:jobs=N,interarrival=S,...]")
    parser.add_argument("--trace-format", choices=TRACE_FORMATS,
                        help="default: synthetic for synthetic:..., gavel for .trace files and folders, else csv")
    parser.add_argument("--runtimes", help="Philly runtimes CSV for Gavel traces (default: found next to the trace)")
    parser.add_argument("--team-map", help="trace team -> stack team: a YAML/JSON/CSV file, or `auto` (round-robin)")
    parser.add_argument("--baseline", choices=BASELINES, default="static",
                        help="static: no cohort (no borrowing or reclaim); no-gang: gang scheduling off")
    parser.add_argument("--nodes", action="append", default=[], metavar="POOL=N",
                        help="pool size instead of maxNodes (repeatable)")
    parser.add_argument("--pool", help="pool (or flavor) for jobs whose trace names none")
    parser.add_argument("--placement", choices=("spread", "binpack"),
                        help="node choice for pods (default: the scheduler's: kube-scheduler spreads, Volcano with "
                             "the binpack plugin packs)")
    parser.add_argument("--cycle", type=float, help="scheduling cycle in seconds (default: Kueue's calibrated "
                        "0.25, Volcano's schedulePeriod 1)")
    parser.add_argument("--horizon", type=float, help="stop the simulation at this many seconds")
    parser.add_argument("--seed", type=int, default=0, help="seed for drawn durations and synthetic traces")
    parser.add_argument("--format", choices=("table", "json", "html"), default="table")
    parser.add_argument("--out", help="write to FILE instead of standard output")
    parser.add_argument("--topology", action="store_true",
                        help="also compare Kueue topology-aware placement (one block per gang) with none, on the "
                             "pools whose flavor has a Topology (table and json formats)")
    parser.add_argument("--topology-blocks", action="append", default=[], metavar="POOL=N",
                        help="nodes per network block (TAS domain) of a topology-aware pool, for the replay and the "
                             "comparison (repeatable; default 4; implies --topology)")
    parser.add_argument("--topology-levels", action="append", default=[], metavar="POOL=M[/K...]",
                        help="domains of the level below per domain of each Topology level above the block, from "
                             "the block up (2/4: two blocks per layer-2 domain, four of those per layer-1 domain); "
                             "a level not given is one domain over the pool (repeatable)")
    parser.add_argument("--tas-request", choices=TAS_REQUESTS, default="required",
                        help="the Kueue topology annotation trace jobs on topology-aware pools carry: "
                             "podset-required-topology or -preferred-topology (at --tas-level), or none "
                             "(implied); default required")
    parser.add_argument("--tas-level", metavar="LABEL",
                        help="the Topology level (node label) the annotation names; default the block, the level "
                             "above the hosts (e.g. topology.k8s.aws/network-node-layer-3)")


MAX_NODES = 10_000  # per pool: ten times any cloud's node pool limit, and the simulator keeps state per node
CYCLE_RANGE_S = (0.01, 3600.0)  # below 10 ms a long trace takes billions of cycles; the calibrated one is 0.25


def _nodes(values: list[str], option: str = "--nodes") -> dict[str, int]:
    nodes = {}
    for value in values:
        pool, sep, count = value.partition("=")
        if not sep or not (count.isascii() and count.isdigit() and len(count) <= 6) or int(count) > MAX_NODES:
            raise UsageError(f"{option} {value!r:.80}: expected POOL=N with N a whole number from 0 to {MAX_NODES}")
        nodes[pool] = int(count)
    return nodes


def _levels(values: list[str]) -> dict[str, tuple[int, ...]]:
    levels = {}
    for value in values:
        pool, sep, counts = value.partition("=")
        parts = counts.split("/")
        if not sep or not all(p.isascii() and p.isdigit() and 0 < len(p) <= 6 and int(p) <= MAX_NODES for p in parts):
            raise UsageError(f"--topology-levels {value!r:.80}: expected POOL=M[/K...] with whole numbers up to "
                             f"{MAX_NODES}")
        levels[pool] = tuple(int(p) for p in parts)
    return levels


class Progress:
    """Progress lines on standard error for a long run: silent for the first seconds, then every few seconds."""

    def __init__(self, label: str, last_submit_s: float, out=None, clock=time.monotonic):
        self.label, self.last_submit_s, self.out, self.clock = label, last_submit_s, out, clock
        self.started = self.reported = clock()

    def __call__(self, sim_t: float) -> None:
        now = self.clock()
        if now - self.started < PROGRESS_AFTER_S or now - self.reported < PROGRESS_AFTER_S:
            return
        self.reported = now
        arrived = f", {min(sim_t / self.last_submit_s, 1):.0%} of the trace submitted" if self.last_submit_s else ""
        print(f"simulate: {self.label}: {sim_t / 3600:.1f} h simulated{arrived}, {now - self.started:.0f} s",
              file=self.out or sys.stderr, flush=True)


def _bounded(value: float | None, flag: str, low: float, high: float) -> None:
    """--cycle and --horizon: a finite number of seconds in range (argparse's float also takes nan and inf)."""
    if value is not None and not low <= value <= high:
        raise UsageError(f"{flag} must be a number of seconds from {low:g} to {high:g}; got {value!r}")


def _trace_format(args) -> str:
    if args.trace_format:
        return args.trace_format
    if args.trace.startswith("synthetic"):
        return "synthetic"
    path = Path(args.trace)
    return "gavel" if path.is_dir() or path.suffix == ".trace" else "csv"


def run(args) -> int:
    from gpu_platform.simulator import SimulationError

    # Handled here rather than by the CLI's except clause: under `python -m gpu_platform.cli` that module is
    # `__main__`, whose UsageError is not the class imported above.
    try:
        return _run(args)
    except (SimulationError, UsageError) as exc:
        print(f"gpu-platform simulate: {exc}", file=sys.stderr)
        return USAGE_ERROR


def _tas_meta(flavor, request, nodes: int) -> dict:
    """What the replay assumed of a topology-aware pool: its Topology's levels and the nodes a domain of each
    spans, the block size (`domain_nodes`), the annotation and the level it names."""
    from gpu_platform.simulator.kueue.tas import domain_spans

    spans = domain_spans(request, nodes)
    return {"flavor": flavor.name, "topology": flavor.topology, "domain_nodes": spans[-2] if len(spans) > 1 else 1,
            "levels": [{"label": label, "nodes_per_domain": min(span, nodes)}
                       for label, span in zip(request.levels, spans)],
            "request": request.mode, "level": request.levels[request.level]}


def _run(args) -> int:
    from dataclasses import replace

    from gpu_platform.simulator import default_timing, load_model, simulate
    from gpu_platform.simulator import traces
    from gpu_platform.simulator.report import build_report, render_html, render_json, render_table

    from gpu_platform.simulator.traces import MAX_SECONDS

    _bounded(args.cycle, "--cycle", *CYCLE_RANGE_S)
    _bounded(args.horizon, "--horizon", 1.0, MAX_SECONDS)
    if args.plan:
        plan = args.plan
    else:
        from gpu_platform.engine import plan_stack

        plan = plan_stack(args.stack, args.file, stacks_dir=args.stacks_dir)
        print_warnings(config_warnings(plan.config))
    model = load_model(plan)
    model = model.with_nodes(_nodes(args.nodes))
    blocks = _nodes(args.topology_blocks, "--topology-blocks")
    model = model.with_tas(blocks, args.tas_request, _levels(args.topology_levels), args.tas_level)
    if args.placement:
        model = model.with_placement(args.placement)
    fmt = _trace_format(args)
    stack_teams = list(model.teams)
    if fmt == "synthetic":
        trace = traces.parse_synthetic(args.trace, stack_teams, args.seed)
    elif fmt == "gavel":
        trace = traces.read_gavel(args.trace, args.runtimes, args.seed)
    else:
        trace = traces.read_csv(args.trace)
    mapping = args.team_map if args.team_map in (None, "auto") else traces.read_team_map(args.team_map)
    trace = traces.map_teams(trace, stack_teams, mapping,
                             known=lambda name: (model.team_for(name).name if model.team_for(name) else None),
                             eligible=lambda pools: [name for name in stack_teams if all(
                                 model.has_quota(model.teams[name], pool or args.pool) for pool in pools)])
    timing = default_timing(model) if args.cycle is None else replace(default_timing(model), cycle_s=args.cycle)
    last_submit = max((job.submit_s for job in trace), default=0.0)
    result = simulate(model, trace, timing, args.horizon, args.pool, progress=Progress("stack", last_submit))
    baseline = None
    if args.baseline != "none":
        variant = model.static() if args.baseline == "static" else model.without_gang()
        baseline = simulate(variant, trace, timing, args.horizon, args.pool,
                            progress=Progress(f"baseline {args.baseline}", last_submit))
    meta = {"stack": model.source, "trace_name": args.trace, "trace_format": fmt, "scheduler": model.scheduler,
            "cycle_s": timing.cycle_s, "baseline": None if args.baseline == "none" else args.baseline,
            "seed": args.seed, "placement": model.placement, "gang": model.gang.enabled,
            "fair_sharing": model.fair_sharing, "nodes": {name: pool.nodes for name, pool in model.pools.items()},
            "warnings": list(model.warnings)}
    tas = {f.pool: _tas_meta(f, model.tas(f.name), model.pools[f.pool].nodes)
           for f in model.flavors.values() if model.tas(f.name)}
    if tas:  # the assumptions the replay's topology-aware admission rests on
        meta["tas"] = tas
    report = build_report(result, baseline, meta)
    placement = None
    if args.topology or args.topology_blocks:
        from gpu_platform.simulator import topology

        pools = topology.tas_pools(plan, model, blocks)
        placement = topology.compare(pools, trace, args.pool)
        report["topology"] = placement
    if args.format == "json":
        text = render_json(report)
    elif args.format == "html":
        text = render_html(report, result, baseline)
    else:
        text = render_table(report)
        if placement is not None:
            text = f"{text.rstrip()}\n\n{topology.render(placement)}\n"
    write_output(text, args.out)
    return 0
