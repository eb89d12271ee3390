"""`gpu-platform validate <stack> | --file PATH`: check a stack config without planning it."""
from __future__ import annotations

from gpu_platform.cli import add_stack_arguments


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("validate", help="validate a stack config; exit 2 with every problem found")
    add_stack_arguments(parser)


def run(args) -> int:
    from components.config import ConfigError, Problem
    from gpu_platform.engine.plan import validate_stack
    from policies import context

    _, path, _, config = validate_stack(args.stack, args.file)
    # The policy pack would refuse these exemptions (a finding, never applied): validate says so before any run.
    issues = context.for_config(config).exemptions.issues
    if issues:
        raise ConfigError([Problem(i.path, i.message) for i in issues], str(path))
    for warning in config.warnings:
        print(f"warning: {warning}")
    print(f"{path}: valid ({config.cloud}, {config.environment}, {len(config.gpu_pools)} GPU pool(s), "
          f"{len(config.teams)} team(s))")
    return 0
