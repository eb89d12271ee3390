"""Lines in a stack file that findings point at: the key that sets the value (`cluster.authorizedNetworks`,
`teams[2].quotas`), else the nearest enclosing key or list item, else the file's first line."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml

from components.config import NAMESPACE
from components.config.reader import ReadError, decode
from gpu_platform.policy.findings import Finding, Location

_EXEMPTION_PATH = re.compile(r"^policy\.exemptions\[(\d+)\]")
# The last segment of a dotted path: `.key` or `[3]`; stripping it gives the enclosing value's path.
_LAST_SEGMENT = re.compile(r"(\.[^.\[\]]+|\[\d*\])$")
_LISTS = {"pool": "gpuPools", "namespace": "teams"}


def display_path(path: str | Path) -> str:
    """`path` relative to the working directory when inside it (what code scanning expects), else as given."""
    path = Path(path)
    if not path.is_absolute():
        return path.as_posix()
    relative = Path(os.path.relpath(path.resolve(), Path.cwd()))
    return path.as_posix() if relative.parts[:1] == ("..",) else relative.as_posix()


class StackFile:
    """The line (1-based) of every key and list item under a `Pulumi.<stack>.yaml`'s `config:`, by dotted path
    as config problems name them (`gpuPools[1].instanceType`; our keys without their `gpu-platform:` prefix)."""

    def __init__(self, path: str | Path):
        self.path = display_path(path)
        self.lines: dict[str, int] = {}
        self.items: dict[str, dict[str, int]] = {}  # list key -> item name -> index
        try:
            text = decode(Path(path).read_bytes())  # decoded as the config reader does (UTF-16 too)
            if _no_config_section(text):
                return
            root = yaml.compose(text)
        except (OSError, ReadError, yaml.YAMLError):
            return
        config = _child(root, "config")
        if not isinstance(config, yaml.MappingNode):
            return
        for key, value in config.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            self.lines[key.value] = key.start_mark.line + 1  # as written, for a key under a mistyped namespace
            name = key.value.removeprefix(f"{NAMESPACE}:")
            self.lines[name] = key.start_mark.line + 1
            self._index(value, name)
            if isinstance(value, yaml.SequenceNode):
                self.items[name] = _named_items(value)

    def _index(self, node, path: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    self.lines.setdefault(f"{path}.{key.value}", key.start_mark.line + 1)
                    self._index(value, f"{path}.{key.value}")
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self.lines.setdefault(f"{path}[{i}]", item.start_mark.line + 1)
                self._index(item, f"{path}[{i}]")

    def line_of(self, path: str) -> int:
        """The line that sets `path`, or the nearest enclosing key or item the file has; 1 when none."""
        path = path.removeprefix(f"{NAMESPACE}:")
        while path:
            if path in self.lines:
                return self.lines[path]
            if "[]" in path:  # any item (`teams[].quotas.h100-train`): the first that sets it
                pattern = re.compile(re.escape(path).replace(r"\[\]", r"\[\d+\]"))
                found = next((line for key, line in self.lines.items() if pattern.fullmatch(key)), None)
                if found is not None:
                    return found
            shorter = _LAST_SEGMENT.sub("", path)
            if shorter == path:
                break
            path = shorter
        return 1

    def at(self, path: str) -> Location:
        return Location(self.path, self.line_of(path))

    def locate(self, finding: Finding, config_key: str) -> Location:
        """A finding about a pool or team points at the rule's key inside that item (`teams[2].quotas`), else at
        the item; an exemption problem at its exemption; anything else at the rule's key."""
        kind, _, name = finding.subject.partition(":")
        listed = _LISTS.get(kind)
        index = self.items.get(listed or "", {}).get(name)
        if index is not None:
            first, _, rest = config_key.partition(".")
            return self.at(f"{listed}[{index}]" + (f".{rest}" if first == listed and rest else ""))
        match = _EXEMPTION_PATH.match(finding.message)
        if match:
            return self.at(match.group(0))
        return self.at(config_key)


def _no_config_section(text: str) -> bool:
    """Whether `text` is JSON whose top level has no `config` key, as a plan file (`plan --format json`): nothing
    to find lines in. Composing a plan's thousands of lines with PyYAML took four fifths of `check --plan`."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return not (isinstance(document, dict) and "config" in document)


def _child(node, key: str):
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == key:
                return v
    return None


def _named_items(node: yaml.SequenceNode) -> dict[str, int]:
    """`name` of each mapping in a sequence -> its index."""
    found: dict[str, int] = {}
    for i, item in enumerate(node.value):
        name = _child(item, "name")
        if isinstance(name, yaml.ScalarNode):
            found.setdefault(name.value, i)
    return found
