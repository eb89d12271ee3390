"""`gpu-platform validate <stack> | --file PATH`: check a stack config without planning it."""
from __future__ import annotations

from components.config import load, split_namespace
from gpu_platform.cli import add_stack_arguments


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("validate", help="validate a stack config; exit 2 with every problem found")
    add_stack_arguments(parser)


def run(args) -> int:
    from gpu_platform.engine.plan import read_stack_config, stack_path

    name, path = stack_path(args.stack, args.file)
    raw, key_problems = split_namespace(read_stack_config(path))
    config = load(raw, key_problems, str(path))
    for warning in config.warnings:
        print(f"warning: {warning}")
    print(f"{path}: valid ({config.cloud}, {config.environment}, {len(config.gpu_pools)} GPU pool(s), "
          f"{len(config.teams)} team(s))")
    return 0
