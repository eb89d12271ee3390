"""`gpu-platform schema [--out FILE]`: the JSON Schema of `Pulumi.<stack>.yaml`, for editor completion."""
from __future__ import annotations

import json

from gpu_platform.cli import write_output


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "schema", help="print the JSON Schema of a stack file (for editor completion)",
        description="The JSON Schema of Pulumi.<stack>.yaml, generated from the config parser. Point an editor at "
                    "it with a first line `# yaml-language-server: $schema=<path or URL>` (stacks/stack.schema.json "
                    "in this repository).")
    parser.add_argument("--out", help="write to FILE instead of standard output")


def run(args) -> int:
    write_output(render(), args.out)
    return 0


def render() -> str:
    """The schema as the checked-in stacks/stack.schema.json holds it, observed over the example stacks."""
    from components.config.json_schema import stack_schema
    from gpu_platform.engine.plan import PROJECT_ROOT

    stacks = sorted((PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml"))
    return json.dumps(stack_schema(stacks), indent=2, sort_keys=True)
