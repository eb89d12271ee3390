"""`gpu-platform validate <stack> | --file PATH [--against OLD.json]`: check a stack config without planning it, or
also warn about what the change replaces against a previous plan."""
from __future__ import annotations

from gpu_platform.cli import UsageError, add_stack_arguments, print_warnings


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("validate", help="validate a stack config; exit 2 with every problem found")
    add_stack_arguments(parser)
    parser.add_argument("--against", metavar="OLD.json",
                        help="a previous `plan --format json`: also plan offline and warn for every GPU pool the "
                             "change replaces or deletes, and every protected resource it would remove")


def run(args) -> int:
    from components.config import ConfigError, Problem
    from gpu_platform.engine.diff import PlanFileError, read_plan_file
    from gpu_platform.engine.plan import validate_stack
    from policies import context

    old = None
    if args.against:
        try:
            old = read_plan_file(args.against)
        except PlanFileError as exc:
            raise UsageError(f"--against {exc}") from None
    if old is None:
        _, path, _, config = validate_stack(args.stack, args.file, stacks_dir=args.stacks_dir)
    else:
        from gpu_platform.engine import plan_stack

        # Planning validates first: the same checks, run once.
        new = plan_stack(args.stack, args.file, stacks_dir=args.stacks_dir)
        path, config = new.stack_file, new.config
    # The policy pack would refuse these exemptions (a finding, never applied): validate says so before any run.
    issues = context.for_config(config).exemptions.issues
    if issues:
        raise ConfigError([Problem(i.path, i.message) for i in issues], str(path))
    print_warnings(config.warnings)
    if old is not None:
        from gpu_platform.engine.diff import diff_plans, same_stack

        try:
            same_stack(old, new, args.against)
        except PlanFileError as exc:
            raise UsageError(f"--against {exc}") from None
        print_warnings(diff_plans(old, new).warnings())
    print(f"{path}: valid ({config.cloud}, {config.environment}, {len(config.gpu_pools)} GPU pool(s), "
          f"{len(config.teams)} team(s))")
    return 0
