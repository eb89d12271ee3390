"""`gpu-platform validate <stack> | --file PATH`: check a stack config without planning it."""
from __future__ import annotations

from gpu_platform.cli import add_stack_arguments


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("validate", help="validate a stack config; exit 2 with every problem found")
    add_stack_arguments(parser)


def run(args) -> int:
    from gpu_platform.engine.plan import validate_stack

    _, path, _, config = validate_stack(args.stack, args.file)
    for warning in config.warnings:
        print(f"warning: {warning}")
    print(f"{path}: valid ({config.cloud}, {config.environment}, {len(config.gpu_pools)} GPU pool(s), "
          f"{len(config.teams)} team(s))")
    return 0
