"""`gpu-platform plan`: the planned resource graph of a stack, offline (no CLI, credentials or network)."""
from __future__ import annotations

import json

from gpu_platform.cli import UsageError, add_program_argument, add_stack_arguments, plan_requested, write_output
from gpu_platform.engine.plan import Plan

# `plan --diff` exit code when the change replaces or deletes a resource, so CI can stop destructive changes.
DESTRUCTIVE = 1
FORMATS = ("tree", "json", "markdown", "mermaid")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("plan", help="plan a stack offline and print its resource graph")
    add_stack_arguments(parser)
    add_program_argument(parser)
    parser.add_argument("--format", choices=FORMATS, default="tree",
                        help="tree: summary and resources; json: the plan (for --diff, check --plan, simulate); "
                             "markdown: the summary (with --diff, the change) for a pull request or "
                             "$GITHUB_STEP_SUMMARY; mermaid: a picture of pools, teams, queues and borrowing")
    parser.add_argument("--diff", metavar="OLD.json",
                        help="compare with a previous `plan --format json`: what this change adds, changes, "
                             "replaces and deletes (exit 1 if it replaces or deletes anything)")
    parser.add_argument("--out", help="write to FILE instead of standard output")


def run(args) -> int:
    from gpu_platform.engine.diff import (PlanFileError, diff_json, diff_plans, read_plan_file, render_diff,
                                          same_stack)

    if args.diff and args.format == "mermaid":
        raise UsageError("--diff compares plans; --format mermaid pictures one (drop --diff)")
    old = None
    if args.diff:
        try:
            old = read_plan_file(args.diff)  # before planning: a bad file fails fast, with nothing planned
        except PlanFileError as exc:
            raise UsageError(f"--diff {exc}") from None
    plan = plan_requested(args)
    if old is not None:
        try:
            same_stack(old, plan, args.diff)
        except PlanFileError as exc:
            raise UsageError(f"--diff {exc}") from None
        diff = diff_plans(old, plan)
        if args.format == "json":
            text = json.dumps(diff_json(diff), indent=2, sort_keys=True)
        elif args.format == "markdown":
            from gpu_platform.engine.markdown import render_markdown_diff
            text = render_markdown_diff(old, plan, diff, args.diff)
        else:
            text = render_diff(diff)
        write_output(text, args.out)
        return DESTRUCTIVE if diff.destructive else 0
    write_output(render(plan, args.format), args.out)
    return 0


def render(plan: Plan, fmt: str) -> str:
    """`plan` in one of FORMATS (without --diff)."""
    if fmt == "json":
        return json.dumps(plan.to_json(), indent=2, sort_keys=True)
    if fmt == "markdown":
        from gpu_platform.engine.markdown import render_markdown
        return render_markdown(plan)
    if fmt == "mermaid":
        from gpu_platform.engine.mermaid import render_mermaid
        return render_mermaid(plan)
    return render_tree(plan)


def render_tree(plan: Plan) -> str:
    """The summary (layers, pools, teams), then resources indented under their parents."""
    from gpu_platform.engine.summary import render_summary

    children: dict[str, list] = {}
    for resource in plan.resources:
        children.setdefault(resource.parent, []).append(resource)
    urns = {r.urn for r in plan.resources}
    lines = [render_summary(plan), "", "resources:"]

    def walk(parent: str, depth: int) -> None:
        for resource in children.get(parent, []):
            flags = " [protected]" if resource.options.get("protect") else ""
            lines.append(f"{'  ' * depth}{resource.type}  {resource.name}{flags}")
            walk(resource.urn, depth + 1)

    for root in sorted({r.parent for r in plan.resources if r.parent not in urns}):
        walk(root, 1)
    return "\n".join(lines)
