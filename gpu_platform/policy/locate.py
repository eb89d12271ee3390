"""Lines in a stack file that findings point at: a pool's or team's `- name:`, an exemption, a config key."""
from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from components.config import NAMESPACE
from gpu_platform.policy.findings import Finding, Location

_EXEMPTION_PATH = re.compile(r"^policy\.exemptions\[(\d+)\]")


def display_path(path: str | Path) -> str:
    """`path` relative to the working directory when inside it (what code scanning expects), else as given."""
    path = Path(path)
    if not path.is_absolute():
        return path.as_posix()
    relative = Path(os.path.relpath(path.resolve(), Path.cwd()))
    return path.as_posix() if relative.parts[:1] == ("..",) else relative.as_posix()


class StackFile:
    """Line numbers (1-based) of the parts of a `Pulumi.<stack>.yaml` findings refer to."""

    def __init__(self, path: str | Path):
        self.path = display_path(path)
        self.keys: dict[str, int] = {}
        self.pools: dict[str, int] = {}
        self.teams: dict[str, int] = {}
        self.exemptions: list[int] = []
        try:
            root = yaml.compose(Path(path).read_text())
        except (OSError, yaml.YAMLError):
            return
        config = _child(root, "config")
        if not isinstance(config, yaml.MappingNode):
            return
        for key, value in config.value:
            name = key.value.removeprefix(f"{NAMESPACE}:")
            self.keys[name] = key.start_mark.line + 1
            if name == "gpuPools":
                self.pools = _named_items(value)
            elif name == "teams":
                self.teams = _named_items(value)
            elif name == "policy":
                exemptions = _child(value, "exemptions")
                if isinstance(exemptions, yaml.SequenceNode):
                    self.exemptions = [item.start_mark.line + 1 for item in exemptions.value]

    def locate(self, finding: Finding, config_key: str) -> Location:
        kind, _, name = finding.subject.partition(":")
        line = {"pool": self.pools, "namespace": self.teams}.get(kind, {}).get(name)
        match = _EXEMPTION_PATH.match(finding.message)
        if line is None and match and int(match.group(1)) < len(self.exemptions):
            line = self.exemptions[int(match.group(1))]
        return Location(self.path, line or self.keys.get(config_key) or 1)


def _child(node, key: str):
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == key:
                return v
    return None


def _named_items(node) -> dict[str, int]:
    """`name` of each mapping in a sequence -> the line of its `- name:` item."""
    if not isinstance(node, yaml.SequenceNode):
        return {}
    found = {}
    for item in node.value:
        name = _child(item, "name")
        if isinstance(name, yaml.ScalarNode):
            found.setdefault(name.value, item.start_mark.line + 1)
    return found
