"""`gpu-platform nccl-test <stack> --pool NAME [--nodes N] [--team T]`: a multi-node NCCL all-reduce test Job for one
GPU pool, as YAML for `kubectl apply -f -`."""
from __future__ import annotations

import sys

import yaml

from gpu_platform.cli import UsageError, add_stack_arguments, config_warnings, print_warnings, write_output


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("nccl-test", help="print a multi-node NCCL all-reduce test for one GPU pool")
    add_stack_arguments(parser)
    parser.add_argument("--pool", required=True, help="the GPU pool to test")
    parser.add_argument("--nodes", type=int, default=2, help="nodes (ranks of whole-node GPUs); default 2")
    parser.add_argument("--team", help="the team whose namespace and Kueue queue run it (default: the first team "
                                       "with quota on the pool)")
    parser.add_argument("--out", help="write the manifest to FILE instead of printing it")


def run(args) -> int:
    from gpu_platform.engine.plan import validate_stack
    from gpu_platform.nccl_manifest import ManifestError, manifest, pick_team, socket_note, ssh_key_pair

    _, path, _, config = validate_stack(args.stack, args.file, stacks_dir=args.stacks_dir)
    print_warnings(config_warnings(config))
    pool = next((p for p in config.gpu_pools if p.name == args.pool), None)
    if pool is None:
        raise UsageError(f"--pool {args.pool!r} is not a GPU pool of {path.name}; pools: "
                         f"{', '.join(p.name for p in config.gpu_pools)}")
    try:
        team = pick_team(config, pool, args.team)
        objects = manifest(config, pool, args.nodes, team, ssh_key_pair())
    except ManifestError as exc:
        raise UsageError(str(exc)) from None
    if note := socket_note(config, pool):
        print(f"note: {note}", file=sys.stderr)
    write_output(yaml.safe_dump_all(objects, sort_keys=False), args.out)
    return 0
