"""`gpu-platform`: one entry point; each subcommand lives in gpu_platform/commands/<name>.py."""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Callable

from components.config import ConfigError
from gpu_platform.engine.schema import ProviderSchemaError

USAGE_ERROR = 2


@dataclass(frozen=True)
class Command:
    """One subcommand: the module's `add_parser(subparsers)` registers `name`, its `run(args)` returns the exit code."""

    name: str
    add_parser: Callable[[argparse._SubParsersAction], None]
    run: Callable[[argparse.Namespace], int]

    @classmethod
    def of(cls, module: ModuleType) -> Command:
        # A command with a hyphen (`nccl-test`) lives in the module with an underscore.
        return cls(module.__name__.rsplit(".", 1)[-1].replace("_", "-"), module.add_parser, module.run)


def commands() -> tuple[Command, ...]:
    """The subcommands in help order. Imported on call, not at the top: every command imports this module's
    UsageError and helpers, so a top-level import would be circular."""
    from gpu_platform.commands import catalog, check, nccl_test, plan, schema, simulate, validate

    return tuple(Command.of(module) for module in (validate, catalog, plan, check, simulate, nccl_test, schema))


def package_version() -> str:
    """The installed distribution's version: the one pip and bug reports name, never a second copy in the code."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpu-platform")
    except PackageNotFoundError:
        return "unknown (run from a checkout that is not installed)"


class UsageError(Exception):
    """A command-line mistake: printed as is, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: every subcommand with its flags (also what tests check documented commands with)."""
    parser = argparse.ArgumentParser(prog="gpu-platform", description=__doc__.split(":")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in commands():
        command.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    by_name = {command.name: command for command in commands()}
    args = build_parser().parse_args(argv)
    try:
        return by_name[args.command].run(args)
    except ConfigError as exc:
        print(exc.render(), file=sys.stderr)
        return USAGE_ERROR
    except ProviderSchemaError as exc:
        # A program bug `pulumi up` would hit at the provider: refused before anything is shown as planned.
        print(exc.render(), file=sys.stderr)
        return USAGE_ERROR
    except UsageError as exc:
        print(f"gpu-platform {args.command}: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except BrokenPipeError:
        # The reader went away (`gpu-platform plan aws-prod | head`): not an error, and nothing more to say.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def write_output(text: str, out: str | None) -> None:
    """Print, or write to --out FILE."""
    if out:
        try:
            with open(out, "w") as fh:
                fh.write(text if text.endswith("\n") else text + "\n")
        except OSError as exc:
            raise UsageError(f"cannot write {out}: {exc.strerror}") from None
    else:
        print(text)


WARNING = "warning: "


def print_warnings(warnings) -> None:
    """Every warning on standard error, one line each with the same prefix, whatever the command and its output
    format: standard output stays the command's result (JSON, SARIF, YAML) and stays parseable."""
    for warning in warnings:
        print(f"{WARNING}{warning}", file=sys.stderr)


def config_warnings(config) -> list[str]:
    """What a stack's config is warned about: its own warnings, then exemptions the policy pack will refuse."""
    from policies import context

    return [*config.warnings, *(f"{issue.path}: {issue.message} (not applied; `check` reports it as a finding)"
                                for issue in context.for_config(config).exemptions.issues)]


def add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    """`<stack>` or `--file PATH`, shared by every command that reads a stack."""
    parser.add_argument("stack", nargs="?", help="stack name: reads Pulumi.<stack>.yaml from --stacks-dir, else the "
                                                 "first of ./stacks/, ./ and the project's example stacks")
    parser.add_argument("--stacks-dir", metavar="DIR", help="the directory holding your Pulumi.<stack>.yaml files")
    parser.add_argument("--file", help="any Pulumi.<name>.yaml to read instead")


def add_program_argument(parser: argparse.ArgumentParser) -> None:
    """`--program DIR`, for the commands that plan: a user's own program in place of a stack of this project."""
    parser.add_argument("--program", metavar="DIR",
                        help="plan your own Pulumi program instead (DIR holds Pulumi.yaml and __main__.py); the "
                             "stack name, if given, picks its Pulumi.<stack>.yaml")


def plan_requested(args: argparse.Namespace):
    """The plan of the stack or of `--program DIR` the command line names, with the stack's config warnings shown."""
    from gpu_platform.engine import plan_stack
    from gpu_platform.engine.user_program import ProgramError, plan_program

    if args.program is None:
        plan = plan_stack(args.stack, args.file, stacks_dir=args.stacks_dir)
        print_warnings(config_warnings(plan.config))
        return plan
    if args.file or args.stacks_dir:
        raise UsageError("--program plans your own program; do not also pass --file or --stacks-dir")
    try:
        return plan_program(args.program, args.stack)
    except ProgramError as exc:
        raise UsageError(exc.render()) from None


if __name__ == "__main__":
    # Run through the imported module: under `python -m` this file is `__main__`, and its UsageError would be a
    # different class from the one the commands import and raise.
    from gpu_platform import cli

    sys.exit(cli.main())
