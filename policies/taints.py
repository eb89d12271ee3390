"""Taints and tolerations in Kubernetes spelling, parsed from every spelling the clouds use."""
from __future__ import annotations

import base64
import binascii
import re
import shlex
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import yaml

from policies.props import get, mapping

GPU_TAINT_KEY = "nvidia.com/gpu"
# Our spot taint, and the ones clouds put on interruptible nodes themselves.
SPOT_TAINT_KEYS = ("gpu-platform.io/spot", "kubernetes.azure.com/scalesetpriority", "cloud.google.com/gke-spot")
API_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}
_EFFECTS = {**{v: k for k, v in API_EFFECTS.items()}, **{k: k for k in API_EFFECTS}}
_TAINT_STRING = re.compile(r"^(?P<key>[^=:\s]+)(=(?P<value>[^:\s]*))?:(?P<effect>\w+)$")
_REGISTER_WITH_TAINTS = "--register-with-taints"
_KUBELET_EXTRA_ARGS = "--kubelet-extra-args"
OKE_INIT_SCRIPT = "oke-init.sh"
# How self-managed OKE nodes (RDMA cluster networks) join: OKE images' install script, or Oracle's `oke bootstrap`.
OKE_JOIN_SCRIPTS = (OKE_INIT_SCRIPT, "oke-install.sh")
OKE_JOIN_COMMAND = ("oke", "bootstrap")


@dataclass(frozen=True, order=True)
class Taint:
    """A node taint in Kubernetes spelling."""

    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


def taint_from_map(raw: Any) -> Taint:
    raw = mapping(raw)
    effect = str(get(raw, "effect", ""))
    return Taint(str(get(raw, "key", "")), str(get(raw, "value", "")), _EFFECTS.get(effect, effect))


def taint_from_string(text: str) -> Taint | None:
    match = _TAINT_STRING.match(text.strip())
    if not match:
        return None
    effect = match["effect"]
    return Taint(match["key"], match["value"] or "", _EFFECTS.get(effect, effect))


def _commands(text: str) -> list[str]:
    """The command lines cloud-init executes: a `#cloud-config` document's bootcmd and runcmd, else the
    script's lines with continuations joined (comments are dropped when each line is split)."""
    if not text.lstrip().startswith("#cloud-config"):
        return text.replace("\\\n", " ").splitlines()
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    document = document if isinstance(document, dict) else {}
    entries = [*(document.get("bootcmd") or []), *(document.get("runcmd") or [])]
    return [shlex.join(map(str, e)) if isinstance(e, list) else str(e) for e in entries]


def _flag_values(args: list[str], flag: str) -> list[str]:
    """Values of `flag` among `args`, spelled `--flag=value` or `--flag value`."""
    values = []
    for i, arg in enumerate(args):
        if arg.startswith(flag + "="):
            values.append(arg[len(flag) + 1:])
        elif arg == flag and i + 1 < len(args):
            values.append(args[i + 1])
    return values


_SEPARATORS = {";", "&&", "||", "|", "&"}
# Words that run the command after them (with their own options) rather than being the command.
_LAUNCHERS = {"sudo", "exec", "bash", "sh", "/bin/bash", "/bin/sh", "/usr/bin/env", "env"}


def _simple_commands(line: str) -> list[list[str]]:
    """The simple commands of one shell line (split at ; && || | &), comments removed; [] when it cannot parse."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return []  # unbalanced quotes: the shell refuses the line too
    commands, current = [], []
    for word in words:
        if word in _SEPARATORS:
            commands.append(current)
            current = []
        else:
            current.append(word)
    return [c for c in [*commands, current] if c]


def _init_script_args(command: list[str]) -> list[str] | None:
    """The arguments OKE's init script runs with, when `command` runs it; else None."""
    i = 0
    while i < len(command) and (command[i] in _LAUNCHERS or command[i].startswith("-")):
        i += 1
    if i < len(command) and command[i].rsplit("/", 1)[-1] in OKE_JOIN_SCRIPTS:
        return command[i + 1:]
    if tuple(command[i:i + 2]) == OKE_JOIN_COMMAND:
        return command[i + 2:]
    return None


def kubelet_taints(user_data: str) -> list[Taint] | None:
    """Taints a node registers with: `--register-with-taints` passed to OKE's init script (directly or inside
    `--kubelet-extra-args`) by a command cloud-init executes; None if the user data is not base64 text.

    Comments, echoed text and flags given to other commands do not taint a node, so they do not count.
    """
    try:
        script = base64.b64decode(user_data, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    taints = []
    for line in _commands(script):
        for command in _simple_commands(line):
            args = _init_script_args(command)
            if args is None:
                continue
            extras = _flag_values(args, _KUBELET_EXTRA_ARGS)
            kubelet = [a for a in args if a not in extras]
            for extra in extras:
                kubelet += (_simple_commands(extra) or [[]])[0]
            for flag in _flag_values(kubelet, _REGISTER_WITH_TAINTS):
                taints += [t for t in map(taint_from_string, flag.split(",")) if t is not None]
    return taints


def tolerates(toleration: Mapping, taint: Taint) -> bool:
    """Kubernetes' matching: same key (or an empty key with Exists), same value unless Exists, same effect unless empty."""
    key = str(get(toleration, "key", ""))
    operator = str(get(toleration, "operator", "Equal"))
    effect = str(get(toleration, "effect", ""))
    if effect and effect != taint.effect:
        return False
    if operator == "Exists":
        return not key or key == taint.key
    return key == taint.key and str(get(toleration, "value", "")) == taint.value


def tolerated(tolerations: Iterable[Mapping], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)
