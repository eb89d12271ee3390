"""Plan a user's own Pulumi program offline (`plan|check --program DIR`) with the engine that plans the stacks.

DIR is a Python Pulumi project: `Pulumi.yaml` and its `main` (default `__main__.py`); config comes from the
project's defaults and the one `Pulumi.<stack>.yaml` beside it (or the one `--stack` names). What the program
raises is the user's code failing, so the error shows its own file and line, not the engine's frames.
"""
from __future__ import annotations

import os
import runpy
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from components.config import ConfigError, read_stack_file
from components.config.reader import ReadError, decode, load_yaml
from gpu_platform.engine.plan import Plan, planned_resources, run_program

DEFAULT_STACK = "dev"  # `pulumi stack init`'s usual first stack, when the directory has no stack file
TRACEBACK_FRAMES = 3  # the innermost frames of the user's own files worth showing


class ProgramError(Exception):
    """The program directory is unusable, or the program failed: said with the user's file and line."""

    def render(self) -> str:
        return str(self)


def plan_program(directory: str | Path, stack: str | None = None) -> Plan:
    """Run the program in `directory` under the offline engine; returns its plan (no stack config: `config` None)."""
    root = Path(directory).resolve()
    manifest = _manifest(root)
    project = manifest["name"]
    main = _main_file(root, manifest)
    stack, config = _stack_config(root, project, manifest, stack)
    with _program_environment(root, main.parent):
        try:
            registrations, outputs = run_program(stack, config, lambda: runpy.run_path(str(main), run_name="__main__"),
                                                 project=project)
        except Exception as exc:
            raise ProgramError(_user_failure(exc, root)) from None
    # No stack_file: findings point at a stack config's lines, and a program of your own has none of ours.
    return Plan(project=project, stack=stack, resources=planned_resources(registrations), outputs=outputs)


def _manifest(root: Path) -> dict[str, Any]:
    path = root / "Pulumi.yaml"
    if not root.is_dir():
        raise ProgramError(f"--program {root}: no such directory")
    if not path.is_file():
        raise ProgramError(f"--program {root}: no Pulumi.yaml there; a program directory holds Pulumi.yaml "
                           "(name, runtime: python) and __main__.py")
    try:
        manifest = load_yaml(decode(path.read_bytes()))
    except (OSError, ReadError) as exc:
        raise ProgramError(f"{path}: {exc}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("name"), str):
        raise ProgramError(f"{path}: name: is required (the project's name)")
    runtime = manifest.get("runtime")
    runtime_name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if runtime_name != "python":
        raise ProgramError(f"{path}: runtime: {runtime_name!r} is not allowed; allowed: python (the offline engine "
                           "runs Python programs in its own process)")
    return manifest


def _main_file(root: Path, manifest: dict[str, Any]) -> Path:
    main = root / str(manifest.get("main") or "")
    if main.is_dir():
        main = main / "__main__.py"
    if not main.is_file():
        raise ProgramError(f"{root / 'Pulumi.yaml'}: the program {main} does not exist (main: names a file or a "
                           "directory holding __main__.py)")
    return main


def _stack_config(root: Path, project: str, manifest: dict[str, Any], stack: str | None) -> tuple[str, dict]:
    """The stack's name and its config as the CLI would pass it: Pulumi.yaml defaults under the stack file."""
    files = {p.name.removeprefix("Pulumi.").removesuffix(".yaml"): p for p in sorted(root.glob("Pulumi.*.yaml"))}
    if stack is None and len(files) > 1:
        raise ProgramError(f"--program {root}: several stacks ({', '.join(files)}); name one with --stack")
    if stack is not None and stack not in files:
        raise ProgramError(f"--program {root}: no Pulumi.{stack}.yaml; stacks: {', '.join(files) or '(none)'}")
    name = stack or next(iter(files), DEFAULT_STACK)
    defaults = {}
    for key, spec in (manifest.get("config") or {}).items():
        if isinstance(spec, dict) and ("default" in spec or "value" in spec):
            defaults[key if ":" in key else f"{project}:{key}"] = spec.get("value", spec.get("default"))
    return name, {**defaults, **(_stack_file(files[name], project) if name in files else {})}


def _stack_file(path: Path, project: str) -> dict[str, Any]:
    try:
        return read_stack_file(path, project)
    except ConfigError as exc:
        if [p.path for p in exc.problems] == ["config"]:
            return {}  # `pulumi stack init` writes a stack file with no config (an encryption salt at most)
        raise


@contextmanager
def _program_environment(root: Path, main_dir: Path) -> Iterator[None]:
    """What `pulumi up` gives a Python program: its directory as the working directory and first import path."""
    cwd, path = os.getcwd(), list(sys.path)
    os.chdir(root)
    sys.path.insert(0, str(main_dir))
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.path[:] = path


def _user_failure(exc: BaseException, root: Path) -> str:
    """The exception as the user needs it: their own frames (file and line), then the message."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _inside(f.filename, root)]
    where = [f"  {Path(f.filename).resolve().relative_to(root)}:{f.lineno}: {(f.line or '').strip()}"
             for f in frames[-TRACEBACK_FRAMES:]]
    render = getattr(exc, "render", None)
    message = render() if callable(render) else f"{type(exc).__name__}: {exc}"
    head = f"the program in {root} failed" + (":" if where else " (outside its own files):")
    return "\n".join([head, *where, message])


def _inside(filename: str, root: Path) -> bool:
    path = Path(filename)  # frozen modules are named `<frozen runpy>`: not a file, and never the user's
    return path.is_absolute() and path.is_file() and path.resolve().is_relative_to(root)
