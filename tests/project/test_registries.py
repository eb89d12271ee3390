"""Layers, CLI commands and provisioners are registered as objects, named once, and dispatched by what they
register."""
from __future__ import annotations

import argparse
import dataclasses

import pytest

from components.clouds import PACKAGES, PROFILES
from components.config import ConfigError, validate
from components.context import Context
from components.program import LAYERS
from components.provisioning import layer as provisioning_layer
from components.provisioning.kinds import KINDS, kind_of
from components.provisioning.registry import ProvisionerChecks, ProvisionerKind, register
from gpu_platform.cli import commands

from support.stacks import stack_config


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


def _raw(stack: str) -> dict:
    return {k.split(":", 1)[1]: v for k, v in stack_config(stack).items() if k.startswith("gpu-platform:")}


@pytest.fixture
def made_up(monkeypatch):
    """A made-up provisioner registered as a package's facts.py would, and chosen by EKS and OKE by default as a cloud
    offering it would (its CloudProfile naming it): what it checks and installs is recorded."""
    seen: dict[str, list] = {"checked": [], "resolved": [], "installed": []}

    def check(stack, problems):
        seen["checked"].append(stack)
        if stack.prof.name == "aws":
            problems.add("gpuPools", "made-up provisioner refuses EKS stacks")

    def resolve(extras, pool_items, pools, prof):
        seen["resolved"].append([p.name for p in pools])
        return pools

    row = register(ProvisionerKind(name="made-up", choosable=True,
                                   checks=lambda: ProvisionerChecks(check=check, resolve_pools=resolve),
                                   installer=lambda: seen["installed"].append))
    for cloud in ("aws", "oci"):
        prof = dataclasses.replace(PROFILES[cloud], provisioner_kinds={"cluster-autoscaler": row.name})
        monkeypatch.setitem(PROFILES, cloud, prof)
        monkeypatch.setattr(PACKAGES[cloud], "PROFILE", prof)
    yield seen
    del KINDS[row.name]


def test_a_registered_provisioner_is_checked_and_installed_with_no_other_change(made_up):
    """Registering its row is all config validation and the provisioning layer need: parse runs its checks and
    pool resolution, and the layer installs it when it is the stack's choice (here the cloud's default)."""
    raw = _raw("aws-dev")
    with pytest.raises(ConfigError) as refused:
        validate(raw)
    assert "gpuPools: made-up provisioner refuses EKS stacks" in str(refused.value)
    assert made_up["resolved"] == [[p["name"] for p in raw["gpuPools"]]]
    (stack,) = made_up["checked"]
    assert stack.prof.name == "aws" and stack.extras is not None and stack.scheduler.kind

    class Cluster:
        pass

    config = validate(_raw("oci-prod"))
    ctx = Context(config=config, cluster=Cluster())
    provisioning_layer.install(ctx)
    assert made_up["installed"] == [ctx]


def test_every_provisioner_a_cloud_offers_has_a_row():
    """A cloud's default and each `provisioner` choice it offers name a registered row a cloud can choose, in the
    cloud's own spelling where it has one."""
    answered = {}
    for prof in PROFILES.values():
        offered = (prof.autoscaler, *(prof.extras[prof.provisioner_key].choices if prof.provisioner_key else ()))
        answered[prof.name] = {value: kind_of(prof.provisioner_kinds.get(value, value)).name for value in offered}
    assert answered == {
        "aws": {"cluster-autoscaler": "cluster-autoscaler", "karpenter": "karpenter"},
        "azure": {"pool": "pool", "nap": "karpenter"},
        "gcp": {"pool": "pool"},
        "oci": {"cluster-autoscaler": "cluster-autoscaler"},
    }
    allowed = "allowed: cluster-autoscaler, pool, karpenter"
    with pytest.raises(ValueError, match=f"no provisioner 'made-up' to choose; {allowed}$"):
        kind_of("made-up")
    with pytest.raises(ValueError, match=f"no provisioner 'queued' to choose; {allowed}$"):  # works beside the chosen
        kind_of("queued")
    with pytest.raises(ValueError, match="provisioner 'karpenter' is registered twice"):
        register(ProvisionerKind(name="karpenter", choosable=True))
