"""`gpu-platform check`: the policy pack, offline: plan a stack (or read a plan file) and report findings."""
from __future__ import annotations

from pathlib import Path

from gpu_platform.cli import UsageError, add_program_argument, add_stack_arguments, plan_requested, write_output
from gpu_platform.policy.findings import FAIL_ON
from gpu_platform.policy.output import FORMATS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "check", help="check a stack against the GPU policy pack offline; exit 1 on failing findings",
        description="Plan a stack offline (or read `plan --format json` output) and evaluate the policy pack. "
                    "Exit 0: pass, 1: failing findings, 2: config or usage error.")
    add_stack_arguments(parser)
    add_program_argument(parser)
    parser.add_argument("--plan", metavar="FILE", help="check a saved plan JSON (`gpu-platform plan --format json`)")
    parser.add_argument("--exemptions", metavar="FILE",
                        help="with --plan: exemptions YAML/JSON (a list, or {exemptions: [...]})")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("--out", help="write to FILE instead of standard output")
    parser.add_argument("--fail-on", choices=FAIL_ON, default=None,
                        help="fail on findings of this severity or higher (default: on mandatory findings); "
                             "`unknown`: on mandatory findings and on mandatory rules that cannot decide")


def run(args) -> int:
    from gpu_platform.policy.exemptions import read_file
    from gpu_platform.policy.output import render
    from gpu_platform.policy.runner import check
    from policies import context
    from policies.rules import RULES

    if args.plan:
        if args.stack or args.file or args.program:
            raise UsageError("--plan checks a plan file; do not also name a stack, --file or --program")
        plan = _read_plan(args.plan)
        policy = read_file(_read_document(args.exemptions), args.exemptions) if args.exemptions else None
        ctx = context.build(None, policy) if policy else context.StackContext()
        report = check(plan, ctx, args.plan)
    else:
        if args.exemptions:
            raise UsageError("--exemptions is for --plan; a stack's exemptions are its `gpu-platform:policy`")
        plan = plan_requested(args)
        # A program of your own has no stack config: the rules read its objects alone, without exemptions.
        report = check(plan, context.for_config(plan.config) if plan.config else context.StackContext())
        if args.program:
            report.source = args.program
    write_output(render(report, RULES, args.format, args.fail_on), args.out)
    return report.exit_code(args.fail_on)


def _read_document(path: str):
    from components.config.reader import ReadError, decode, load_yaml

    try:
        return load_yaml(decode(Path(path).read_bytes()))  # JSON is YAML 1.2 too
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except ReadError as exc:
        raise UsageError(f"{path} {exc}") from None


def _read_plan(path: str):
    from gpu_platform.engine.plan import Plan
    from gpu_platform.engine.plan_file import PlanFileError, read_plan_json

    try:
        return Plan.from_json(read_plan_json(path))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except PlanFileError as exc:
        raise UsageError(str(exc)) from None
