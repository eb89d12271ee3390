"""GPU017 (Kueue counts GPUs): the compliant fixture and planned stacks, then one changed field per failing case,
not-applicable, unknown-at-preview and exemption cases."""
from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from policies.rules import RULES

from policy_fixtures import TODAY, UNKNOWN, assert_undecided, drop, ids, inputs, load, new_ids, notes, run
from support.paths import STACKS
from support.policy import base_plan

RELEASE = "kubernetes:helm.sh/v3:Release"
REASON = "GPU quota moves to the new accounting service this sprint (PLAT-77), Kueue only gangs until then"


def change_config(plan, edit):
    values = inputs(plan, RELEASE, "kueue-release")["values"]["managerConfig"]
    config = yaml.safe_load(values["controllerManagerConfigYaml"])
    edit(config.setdefault("resources", {}))
    values["controllerManagerConfigYaml"] = yaml.safe_dump(config)


def exclude(prefix):
    def edit(resources):
        resources["excludeResourcePrefixes"] = [*resources.get("excludeResourcePrefixes", []), prefix]
    edit.__name__ = f"exclude_{prefix or 'empty'}"
    return edit


def transform(strategy, outputs):
    def edit(resources):
        resources["transformations"] = [{"input": "nvidia.com/gpu", "strategy": strategy, "outputs": outputs}]
    edit.__name__ = f"transform_{strategy}_{'_'.join(outputs) or 'nothing'}"
    return edit


FAILING = [
    (exclude(""), "excludeResourcePrefixes has '', which matches GPU resources"),
    (exclude("nvidia.com"), "has 'nvidia.com', which matches"),
    (exclude("nvidia.com/gpu"), "has 'nvidia.com/gpu'"),
    (exclude("nvidia.com/mig-"), "has 'nvidia.com/mig-'"),
    (transform("Replace", {}), "replaces nvidia.com/gpu with nothing"),
    (transform("Replace", {"example.com/credits": "1"}), "replaces nvidia.com/gpu with example.com/credits"),
]


def test_fixture_and_every_kueue_stack_pass():
    assert ids(run(load("aws-prod"), "GPU017")) == []
    for stack in STACKS:
        report = run(base_plan(stack), "GPU017", environment=None)
        assert ids(report) == [], stack


@pytest.mark.parametrize("edit, expected", FAILING, ids=[e.__name__ for e, _ in FAILING])
def test_one_changed_field_fails_exactly_gpu017(edit, expected):
    plan = load("aws-prod")
    change_config(plan, edit)
    report = run(plan, *(r.id for r in RULES))
    assert new_ids(report, "aws-prod") == ["GPU017"]
    assert any(expected in f.message for f in report.findings), [f.message for f in report.findings]


@pytest.mark.parametrize("edit", [exclude("vpc.amazonaws.com/efa"), exclude("rdma/"),
                                  transform("Retain", {"example.com/credits": "1"}),
                                  transform("Replace", {"nvidia.com/gpu": "2"})])
def test_what_keeps_gpus_counted_passes(edit):
    plan = load("aws-prod")
    change_config(plan, edit)
    assert ids(run(plan, "GPU017")) == []


def test_exemption_waives_the_finding():
    plan = load("aws-prod")
    change_config(plan, exclude("nvidia.com/"))
    report = run(plan, "GPU017", exemptions=(("GPU017", "kueue-release", REASON, TODAY + timedelta(days=30)),))
    assert ids(report) == [] and {u.rule for u in report.exemptions.used} == {"GPU017"}


def test_not_applicable_without_kueue_and_undecided_when_unknown():
    plan = load("aws-prod")
    drop(plan, RELEASE, "kueue-release")
    assert "no Kueue release" in notes(run(plan, "GPU017"), "GPU017", "not-applicable")
    plan = load("aws-prod")
    inputs(plan, RELEASE, "kueue-release")["values"]["managerConfig"]["controllerManagerConfigYaml"] = UNKNOWN
    assert_undecided(run(plan, "GPU017"), "GPU017")
