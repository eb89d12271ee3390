"""`gpu-platform check`: the policy pack, offline: plan a stack (or read a plan file) and report findings."""
from __future__ import annotations

import sys
from pathlib import Path

from gpu_platform.cli import (
    UsageError, add_program_argument, add_stack_arguments, config_warnings, plan_requested, print_warnings, write_output,
)
from gpu_platform.policy.findings import FAIL_ON
from gpu_platform.policy.output import FORMATS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "check", help="check a stack against the GPU policy pack offline; exit 1 on failing findings",
        description="Plan a stack offline (or read `plan --format json` output) and evaluate the policy pack. "
                    "Exit 0: pass, 1: failing findings, 2: config or usage error.")
    add_stack_arguments(parser)
    add_program_argument(parser)
    parser.add_argument("--plan", metavar="FILE",
                        help="check a saved plan JSON (`gpu-platform plan --format json`); with the stack it was "
                             "planned from, that stack's exemptions apply and findings point at its lines")
    parser.add_argument("--exemptions", metavar="FILE",
                        help="with --plan: exemptions YAML/JSON (a list, or {exemptions: [...]})")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("--out", help="write to FILE instead of standard output")
    parser.add_argument("--fail-on", choices=FAIL_ON, default=None,
                        help="fail on findings of this severity or higher (default: on mandatory findings); "
                             "`unknown`: on mandatory findings and on mandatory rules that cannot decide")


def run(args) -> int:
    from components.config import ConfigError
    from gpu_platform.engine import plan_stack
    from gpu_platform.engine.plan import stack_path, validate_stack
    from gpu_platform.policy.exemptions import read_file
    from gpu_platform.policy.output import render
    from gpu_platform.policy.runner import check, invalid_config_report
    from policies import context
    from policies.rules import RULES

    if args.exemptions and not args.plan:
        raise UsageError("--exemptions is for --plan; a stack's exemptions are its `gpu-platform:policy`")
    if args.exemptions and (args.stack or args.file):
        raise UsageError("--exemptions is for a plan checked without its stack; a stack's exemptions are its "
                         "`gpu-platform:policy`")
    if args.plan and args.program:
        raise UsageError("--plan checks a plan file; do not also name --program")
    if args.plan and args.stacks_dir and not args.stack:
        raise UsageError("--stacks-dir finds the stack named beside --plan; name the stack, or leave --stacks-dir "
                         "out")
    plan = _read_plan(args.plan) if args.plan else None  # before the stack: a bad plan file fails fast
    if plan is not None and not (args.stack or args.file):
        policy = read_file(_read_document(args.exemptions), args.exemptions) if args.exemptions else None
        ctx = context.build(None, policy) if policy else context.StackContext()
        report = check(plan, ctx, args.plan)
    elif args.program:
        plan = plan_requested(args)
        # A program of your own has no stack config: the rules read its objects alone, without exemptions.
        report = check(plan, context.for_config(plan.config) if plan.config else context.StackContext())
        report.source = args.program
    else:
        name, path = stack_path(args.stack, args.file, args.stacks_dir)
        try:
            if plan is None:
                plan = plan_stack(args.stack, args.file, stacks_dir=args.stacks_dir)
                config = plan.config
            else:
                # The plan CI saved from this stack: the stack file gives its exemptions, warnings and lines.
                config = validate_stack(args.stack, args.file, stacks_dir=args.stacks_dir)[3]
                if plan.stack != name:
                    raise UsageError(f"{args.plan} is a plan of stack {plan.stack!r}, not of {name!r} ({path})")
        except ConfigError as exc:
            if args.format == "text":
                raise
            # CI still gets the report it asked for: each config error a result at its line.
            print(exc.render(), file=sys.stderr)
            report = invalid_config_report(name, str(path), exc.problems)
            write_output(render(report, RULES, args.format, args.fail_on), args.out)
            return report.exit_code(args.fail_on)
        print_warnings(config_warnings(config))
        report = check(plan, context.for_config(config), str(path), config.warnings)
    text = render(report, RULES, args.format, args.fail_on)
    if args.format == "markdown":
        from gpu_platform.engine.markdown import render_markdown
        # One step summary per stack: what the platform is, then what the policy pack says about it.
        text = f"{render_markdown(plan)}\n\n{text}"
    write_output(text, args.out)
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
