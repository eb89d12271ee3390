"""Layers and CLI commands are registered as objects, named once, and dispatched by what they register."""
from __future__ import annotations

import argparse

from components.program import LAYERS
from gpu_platform.cli import commands


def test_every_command_registers_the_subcommand_it_is_named_by():
    for command in commands():
        subparsers = argparse.ArgumentParser().add_subparsers(dest="command")
        command.add_parser(subparsers)
        assert list(subparsers.choices) == [command.name]


def test_commands_in_help_order():
    assert [c.name for c in commands()] == ["validate", "catalog", "plan", "check", "simulate", "nccl-test", "schema"]


def test_layers_install_in_order():
    assert [f"{layer.__module__}.{layer.__name__}" for layer in LAYERS] == [
        "components.network.layer.install", "components.gpu.layer.install", "components.provisioning.layer.install",
        "components.scheduling.layer.install", "components.observability.layer.install"]
