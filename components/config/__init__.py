"""Reading and validating the `gpu-platform:*` stack config, from Pulumi at run time or from a stack file."""
from __future__ import annotations

import difflib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from components.config.errors import ConfigError, Problem
from components.config.model import PlatformConfig
from components.config.parse import TOP_KEYS, parse
from components.config.reader import ReadError, decode, load_yaml

NAMESPACE = "gpu-platform"
SECRET_PLACEHOLDER = "[secret]"

__all__ = ["ConfigError", "PlatformConfig", "Problem", "NAMESPACE", "validate", "read_stack_file", "raw_from_pulumi",
           "load_from_pulumi"]


def validate(raw: dict[str, Any], source: str = "stack config") -> PlatformConfig:
    """The validated config, or ConfigError listing every problem with its path."""
    config, problems = parse(raw)
    problems.raise_if_any(source)
    return config


def _strip_secure(value: Any) -> Any:
    """Stack files hold secrets as `{secure: <ciphertext>}`; offline they are only known to be set."""
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return SECRET_PLACEHOLDER
        return {k: _strip_secure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_secure(v) for v in value]
    return value


def _likely(word: str, choices) -> list[str]:
    return difflib.get_close_matches(word, list(choices), n=1, cutoff=0.8)


def _unknown_key(namespace: str, name: str) -> Problem:
    """A key we do not know, with the one it most likely meant: a typo would otherwise be silently ignored."""
    meant = _likely(name, TOP_KEYS)
    if namespace != NAMESPACE:
        return Problem(f"{namespace}:{name}", f"unknown config key: namespace {namespace!r} is not {NAMESPACE!r}; "
                                              f"did you mean {NAMESPACE}:{meant[0] if meant else name}?")
    hint = f"did you mean {NAMESPACE}:{meant[0]}? " if meant else ""
    return Problem(f"{namespace}:{name}", f"unknown config key; {hint}allowed: {', '.join(TOP_KEYS)}")


def split_namespace(config: dict[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """Our keys without their `gpu-platform:` prefix, and problems for keys we do not know, including ours under a
    mistyped namespace (`gpu-platfrom:teams`)."""
    raw, problems = {}, []
    for key, value in config.items():
        namespace, _, name = key.rpartition(":")
        namespace = namespace or NAMESPACE
        if namespace != NAMESPACE and not _likely(namespace, [NAMESPACE]):
            continue  # other providers' keys (aws:region, ...) are theirs to check
        if namespace != NAMESPACE or name not in TOP_KEYS:
            problems.append(_unknown_key(namespace, name))
            continue
        raw[name] = value
    return raw, problems


def read_stack_file(path: str | Path, project: str = NAMESPACE) -> dict[str, Any]:
    """Every config key of a `Pulumi.<stack>.yaml`, qualified by `project` where it is not, secrets replaced by a
    placeholder."""
    try:
        document = load_yaml(decode(Path(path).read_bytes())) or {}
    except OSError as exc:
        raise ConfigError([Problem(str(path), f"cannot read: {exc.strerror}")], str(path)) from None
    except ReadError as exc:
        raise ConfigError([Problem(str(path), str(exc))], str(path)) from None
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise ConfigError([Problem("config", "the stack file has no `config:` mapping")], str(path))
    return {(k if ":" in k else f"{project}:{k}"): v for k, v in _strip_secure(config).items()}


def raw_from_pulumi() -> tuple[dict[str, Any], list[Problem]]:
    """Our keys as the Pulumi engine passed them (structured values arrive as JSON text)."""
    from pulumi.runtime.config import CONFIG, get_config_env

    flat = {}
    for key, text in {**get_config_env(), **CONFIG.get()}.items():
        try:
            flat[key] = json.loads(text)
        except (TypeError, ValueError, RecursionError):
            flat[key] = text
    return split_namespace(flat)


def _secret_texts(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [t for v in value.values() for t in _secret_texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _secret_texts(v)]
    text = value if isinstance(value, str) else json.dumps(value)
    return [text] if len(text) >= 4 else []  # shorter values (true, 8) would blank unrelated words


def _scrub(problems: list[Problem], secrets: list[Any]) -> list[Problem]:
    """Problems with every secret value replaced by a placeholder: a message quotes the value it refuses."""
    texts = sorted({form for value in secrets for text in _secret_texts(value) for form in (text, repr(text)[1:-1])},
                   key=len, reverse=True)
    if not texts:
        return problems
    scrubbed = []
    for problem in problems:
        message = problem.message
        for text in texts:
            message = message.replace(text, SECRET_PLACEHOLDER)
        scrubbed.append(Problem(problem.path, message, problem.warning))
    return scrubbed


def load(raw: dict[str, Any], key_problems: list[Problem], source: str, secrets: list[Any] = ()) -> PlatformConfig:
    config, problems = parse(raw)
    problems.errors[:0] = key_problems
    problems.errors = _scrub(problems.errors, list(secrets))
    problems.raise_if_any(source)
    if secrets:
        config = replace(config, warnings=tuple(str(w) for w in _scrub(problems.warnings, list(secrets))))
    return config


def load_from_pulumi() -> PlatformConfig:
    from pulumi.runtime.config import get_config_secret_keys_env

    raw, key_problems = raw_from_pulumi()
    secret_keys = set(get_config_secret_keys_env())
    secrets = [value for key, value in raw.items() if f"{NAMESPACE}:{key}" in secret_keys]
    return load(raw, key_problems, "stack config", secrets)
