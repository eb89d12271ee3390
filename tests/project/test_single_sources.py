"""Facts written once: config defaults, clouds, the autoscaler's service account and timings, MIG profile names."""
from __future__ import annotations

import ast
import dataclasses

import pytest

from components import catalog
from components.provisioning.cluster_autoscaler import values as autoscaling
from components.catalog.types import MigShape, mig_shape
from components.clouds.aws import iam as aws_iam
from components.clouds.azure import cluster as azure
from components.clouds import PROFILES
from components.config import model, validate

from support.paths import ROOT

READERS = ("parse.py", "pools.py", "teams.py", "training.py", "access.py", "zonal.py")


def _model_defaults() -> dict[tuple[str, str], object]:
    found = {}
    for name in dir(model):
        cls = getattr(model, name)
        if isinstance(cls, type) and dataclasses.is_dataclass(cls):
            for f in dataclasses.fields(cls):
                if f.default is not dataclasses.MISSING and f.default is not None:
                    found[(name, f.name)] = f.default
    return found


def test_validation_reads_defaults_from_the_model():
    """`Slo(idle_minutes=slo.int("idleMinutes", 30))` would repeat `Slo.idle_minutes = 30`: one of them drifts."""
    defaults, repeated = _model_defaults(), []
    for file in READERS:
        tree = ast.parse((ROOT / "components/config" / file).read_text())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and hasattr(model, node.func.id)):
                continue
            for kw in node.keywords:
                for sub in ast.walk(kw.value):
                    if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and len(sub.args) >= 2:
                        literal = sub.args[1]
                        key = (node.func.id, kw.arg)
                        if isinstance(literal, ast.Constant) and defaults.get(key, object()) == literal.value:
                            repeated.append(f"{file}:{literal.lineno} {key[0]}.{key[1]}")
                        break
    assert repeated == []


def test_model_default_lookup():
    assert model.default(model.Slo, "idle_minutes") == 30
    assert model.default(model.GpuPool, "labels") == {}
    with pytest.raises(KeyError, match="Team.name has no default"):
        model.default(model.Team, "name")


def test_one_list_of_clouds():
    assert model.CLOUDS is catalog.CLOUDS
    assert tuple(PROFILES) == catalog.CLOUDS


def test_one_autoscaler_service_account():
    assert aws_iam.AUTOSCALER_SERVICE_ACCOUNT is autoscaling.SERVICE_ACCOUNT
    assert aws_iam.AUTOSCALER_NAMESPACE is autoscaling.NAMESPACE


def test_aks_autoscaler_timings_equal_the_charts(raw):
    args = autoscaling.shared_values(validate(raw))["extraArgs"]
    profile = azure.AUTOSCALER_PROFILE
    assert profile["scale_down_unneeded_time"] == args["scale-down-unneeded-time"]
    assert profile["scale_down_delay_after_add"] == args["scale-down-delay-after-add"]
    assert profile["max_node_provision_time"] == args["max-node-provision-time"]


def test_mig_profile_names_parse_in_one_place():
    assert mig_shape("2g.20gb") == MigShape(compute=2, memory_gb=20, media=False)
    assert mig_shape("1g.10gb+me") == MigShape(compute=1, memory_gb=10, media=True)
    with pytest.raises(ValueError, match="not a MIG profile name"):
        mig_shape("all-1g.10gb")
    for gpu in catalog.gpu_models():
        for profile in gpu.mig_profiles:
            assert mig_shape(profile.name).compute >= 1


def test_no_other_module_parses_mig_profile_names():
    offenders = [str(p.relative_to(ROOT)) for d in ("components", "gpu_platform") for p in (ROOT / d).rglob("*.py")
                 if "simulator" not in p.parts and p.name != "types.py" and r"g\." in p.read_text()]
    assert offenders == []
