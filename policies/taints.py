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


def _script(text: str) -> str:
    """The shell cloud-init executes: the script itself, or a `#cloud-config` document's bootcmd and runcmd in
    order (cloud-init runs each entry as a line of one script)."""
    if not text.lstrip().startswith("#cloud-config"):
        return text
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return ""
    document = document if isinstance(document, dict) else {}
    entries = [*(document.get("bootcmd") or []), *(document.get("runcmd") or [])]
    return "\n".join(shlex.join(map(str, e)) if isinstance(e, list) else str(e) for e in entries)


def _flag_values(args: list[str], flag: str) -> list[str]:
    """Values of `flag` among `args`, spelled `--flag=value` or `--flag value`."""
    values = []
    for i, arg in enumerate(args):
        if arg.startswith(flag + "="):
            values.append(arg[len(flag) + 1:])
        elif arg == flag and i + 1 < len(args):
            values.append(args[i + 1])
    return values


# Words that run the command after them (with their own options) rather than being the command.
_LAUNCHERS = {"sudo", "exec", "bash", "sh", "/bin/bash", "/bin/sh", "/usr/bin/env", "env"}
_LISTS = {";", "&", ";;", ";&", ";;&"}  # end a command list
_CONDITIONAL = {"&&", "||"}  # what follows runs only sometimes
_LOOPS = {"for": "done", "while": "done", "until": "done", "select": "done", "{": "}", "(": ")"}
_UNEXPECTED = {"then", "else", "elif", "fi", "done", "esac", "}", ")"}  # a closer no open block expects
_ENDS = {"exit", "return"}  # nothing after them runs (exec too, see _Shell)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")  # `NAME=value cmd`: an environment for cmd
_HEREDOC = re.compile(r"(?<!<)<<-?(?!<)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


class _Unreadable(ValueError):
    """Shell the reader does not follow (an unclosed block, a stray `fi`): the script proves no taint."""


def _tokens(script: str) -> list[str]:
    """Words and operators of a script, newlines as `;`; comments and here-document bodies (data, not commands)
    dropped, continuations joined. A line with unbalanced quotes raises."""
    words: list[str] = []
    lines = script.replace("\\\n", " ").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        try:
            words += [*lexer, ";"]
        except ValueError as exc:
            raise _Unreadable(f"line {i}: {exc}") from None
        for heredoc in _HEREDOC.finditer(line):
            while i < len(lines) and lines[i].strip() != heredoc.group(2):
                i += 1
            i += 1
    return words


def _init_script_args(command: list[str]) -> list[str] | None:
    """The arguments OKE's init script runs with, when `command` runs it; else None."""
    i = 0
    while i < len(command) and (command[i] in _LAUNCHERS or command[i].startswith("-")
                                or _ASSIGNMENT.match(command[i])):
        i += 1
    if i < len(command) and command[i].rsplit("/", 1)[-1] in OKE_JOIN_SCRIPTS:
        return command[i + 1:]
    if tuple(command[i:i + 2]) == OKE_JOIN_COMMAND:
        return command[i + 2:]
    if i < len(command) and ("$" in command[i] or "`" in command[i]):
        return []  # a script chosen at run time (`bash $INIT`): it may be the init script, with no taint
    return None


def _taints(args: list[str]) -> frozenset[Taint]:
    """The taints one init script run registers: `--register-with-taints`, directly or inside
    `--kubelet-extra-args`."""
    extras = _flag_values(args, _KUBELET_EXTRA_ARGS)
    kubelet = [a for a in args if a not in extras]
    for extra in extras:
        lexer = shlex.shlex(extra, posix=True)
        lexer.whitespace_split = True
        try:
            kubelet += list(lexer)
        except ValueError:
            pass  # unbalanced quotes: the kubelet gets no flag from it
    return frozenset(t for flag in _flag_values(kubelet, _REGISTER_WITH_TAINTS)
                     for t in map(taint_from_string, flag.split(",")) if t is not None)


class _Shell:
    """Which runs of OKE's init script a script may make, and whether one surely happens.

    Conditions are never evaluated: a command under `if`, after `&&`/`||`, in a loop, a function or a subshell
    may run; only straight-line commands, and an if/else whose every branch runs the script (or exits), surely
    run. After a straight-line `exit`, `return` or `exec` nothing runs, so nothing after it is recorded.
    """

    def __init__(self, words: list[str]):
        self.words, self.i = words, 0
        self.runs: list[frozenset[Taint]] = []

    def _peek(self) -> str:
        return self.words[self.i] if self.i < len(self.words) else ""

    def block(self, closers: set[str], live: bool) -> tuple[bool, bool, str]:
        """Read commands until a word in `closers` starts one: (once the block runs, an init run surely happens;
        the block surely exits; the closer). Runs are recorded while `live` and before a sure exit."""
        sure = exited = False
        while self.i < len(self.words):
            word = self._peek()
            if word in closers:
                self.i += 1
                return sure, exited, word
            if word in _LISTS or word in ("do", "in"):
                self.i += 1
            elif word in _UNEXPECTED or word in _CONDITIONAL or word == "|":
                raise _Unreadable(f"unexpected {word!r}")
            elif word == "case":
                raise _Unreadable("case statements are not followed")
            elif word == "if":
                ran, left = self.conditional(live and not exited)
                sure, exited = sure or (ran and not exited), exited or left
            elif word in _LOOPS:
                self.i += 1
                self.block({_LOOPS[word]}, live and not exited)  # may run any number of times, or never
            else:
                ran, left = self.command_list(live and not exited)
                sure, exited = sure or (ran and not exited), exited or left
        if closers:
            raise _Unreadable(f"no {' or '.join(sorted(closers))}")
        return sure, exited, ""

    def conditional(self, live: bool) -> tuple[bool, bool]:
        """`if ...; then ...; [elif ...; then ...;] [else ...;] fi`: sure when every branch runs the script or
        exits and one runs it; exits when every branch does."""
        branches, closer = [], "if"
        while closer in ("if", "elif"):
            self.i += 1
            self.block({"then"}, live)  # the condition: it may run, nothing in it is sure
            sure, exited, closer = self.block({"elif", "else", "fi"}, live)
            branches.append((sure, exited))
        branches.append(self.block({"fi"}, live)[:2] if closer == "else" else (False, False))
        return any(s for s, _ in branches) and all(s or e for s, e in branches), all(e for _, e in branches)

    def command_list(self, live: bool) -> tuple[bool, bool]:
        """Pipelines joined by && and ||, up to `;`, `&` or a newline; only the first pipeline surely runs."""
        sure = exited = conditional = False
        command: list[str] = []
        while True:
            word = self._peek() or ";"
            if word not in _LISTS and word not in _CONDITIONAL and word not in ("|", "(", ")"):
                command.append(word)
                self.i += 1
                continue
            ran, left = self.command(command, not conditional, live and not exited)
            sure, exited, command = sure or ran, exited or left, []
            if word == "(":  # a subshell or $(...): what it runs may happen, never surely
                self.i += 1
                self.block({")"}, live and not exited)
                continue
            if word == ")":
                return sure, exited  # closes an enclosing subshell, which reads it
            self.i += 1
            if word in _LISTS:
                return sure, exited
            conditional = conditional or word in _CONDITIONAL

    def command(self, command: list[str], unconditional: bool, live: bool) -> tuple[bool, bool]:
        if not command:
            return False, False
        args = _init_script_args(command)
        if args is not None and live:
            self.runs.append(_taints(args))
        ends = command[0] in _ENDS or command[0] == "exec"
        return unconditional and args is not None, unconditional and ends


def kubelet_taints(user_data: str) -> list[Taint] | None:
    """Taints a node surely registers with; None if the user data is not base64 text.

    Read from the runs of OKE's init script the shell may make: only taints every possible run passes count,
    and only when some run surely happens (straight-line, or in every branch of an if/else), before any `exit`
    or `exec`. A comment, echoed text, a here-document, a flag given to another command or a line after `exit`
    does not taint a node; shell the reader does not follow proves no taint.
    """
    try:
        script = base64.b64decode(user_data, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    try:
        shell = _Shell(_tokens(_script(script)))
        sure = shell.block(set(), True)[0]
    except _Unreadable:
        return []
    if not sure or not shell.runs:
        return []
    return sorted(frozenset.intersection(*shell.runs))


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
