"""Config rules for teams and schedulers: cohort, lending, reachable pools, pool capacity, scheduler limits."""
from __future__ import annotations

import pytest

from components.config import validate
from components.config.parse import parse

from support.validation import problems


def warnings(raw: dict) -> dict[str, str]:
    config, found = parse(raw)
    assert config is not None, [str(p) for p in found.errors]
    return {p.path: p.message for p in found.warnings}


def single_team(raw: dict, **team) -> dict:
    raw["teams"] = [{"name": "research", "quotas": {"h100-train": 16}, **team}]
    return raw


def test_allow_overcommit_defaults_off(raw):
    assert validate(raw).scheduler.allow_overcommit is False
    raw["scheduler"] = {"allowOvercommit": True}
    assert validate(raw).scheduler.allow_overcommit is True


@pytest.mark.parametrize("change, path, fragments", [
    (lambda r: single_team(r, borrowingLimit=4), "teams[0].borrowingLimit",
     ["no cohort to borrow from", "at least two"]),
    (lambda r: single_team(r, lendingLimit=4), "teams[0].lendingLimit", ["no cohort to lend to"]),
    (lambda r: r["teams"][0].update(lendingLimit=20), "teams[0].lendingLimit",
     ["20 exceeds the team's quota on h100-train (16)", "at most its own quota"]),
    (lambda r: r["teams"][1]["quotas"].update({"h100-train": 0}), "teams[1].quotas.h100-train",
     ["reachable only by borrowing", "it has no borrowingLimit"]),
    (lambda r: single_team(r)["teams"][0]["quotas"].update({"a100-infer": 0}), "teams[0].quotas.a100-infer",
     ["there is no cohort to borrow from"]),
    (lambda r: r["teams"][1]["quotas"].update({"h100-train": 20}), "gpuPools[0].maxNodes",
     ["add up to 36 (research 16, serving 20)", "offers 32 at maxNodes 4", "scheduler.allowOvercommit: true"]),
    (lambda r: r.update(scheduler={"allowOvercommit": "yes"}), "scheduler.allowOvercommit", ["true or false"]),
    (lambda r: r.update(scheduler={"kind": "slurm"}), "scheduler.kind", ["allowed: kueue, volcano"]),
    (lambda r: r["teams"][0].update(priority="urgent"), "teams[0].priority",
     ["allowed: critical, high, normal, low"]),
    (lambda r: r.update(scheduler={"kind": "volcano"}, teams=[{"name": "root", "quotas": {"h100-train": 8}}]),
     "teams[0].name",
     ["Volcano's own root queue"]),
    (lambda r: r["gpuPools"][0].update(taints=[f"k{i}=v:NoSchedule" for i in range(8)]), "gpuPools[0].taints",
     ["carries 9 taints", "at most 8 tolerations"]),
])
def test_each_scheduling_rule_is_reported_at_its_path(raw, change, path, fragments):
    change(raw)
    found = problems(raw)
    assert path in found, found
    for fragment in fragments:
        assert fragment in found[path]


def test_overcommit_is_a_warning_outside_production_and_allowed_on_request(raw):
    raw["teams"][1]["quotas"]["h100-train"] = 20
    raw["environment"] = "staging"
    assert "add up to 36" in warnings(raw)["gpuPools[0].maxNodes"]
    raw["environment"] = "production"
    raw["scheduler"] = {"allowOvercommit": True}
    assert "gpuPools[0].maxNodes" not in warnings(raw)


def test_quota_rules_count_in_each_pools_units(raw):
    # 112 one-slice MIG instances on two p4de nodes: 56 + 56 fits exactly, 57 does not.
    raw["teams"][0]["quotas"]["a100-infer"] = 56
    validate(raw)
    raw["teams"][0]["quotas"]["a100-infer"] = 57
    assert "add up to 113" in problems(raw)["gpuPools[1].maxNodes"]


def test_zero_quota_with_borrowing_in_a_cohort_is_valid(raw):
    raw["teams"][1].update(quotas={"a100-infer": 56, "h100-train": 0}, borrowingLimit=4)
    assert validate(raw).teams[1].quotas["h100-train"] == 0


def test_volcano_tolerates_more_taints_than_a_kueue_flavor(raw):
    raw["gpuPools"][0]["taints"] = [f"k{i}=v:NoSchedule" for i in range(8)]
    raw["scheduler"] = {"kind": "volcano"}
    assert len(validate(raw).gpu_pools[0].taints) == 8


def test_lending_limit_within_every_quota_is_valid(raw):
    raw["teams"][0]["lendingLimit"] = 16
    assert validate(raw).teams[0].lending_limit == 16


# --- capacity the quotas leave unreachable, or cannot honour (issue 28) --------------------------------------------

def one_pool(raw: dict, max_nodes: int, teams: list[dict], kind: str = "kueue") -> dict:
    raw["gpuPools"] = [{"name": "h100-train", "instanceType": "p5.48xlarge", "maxNodes": max_nodes}]
    raw["teams"] = teams
    raw["scheduler"] = {"kind": kind}
    return raw


def test_a_team_with_a_quarter_of_a_pool_and_nobody_borrowing_strands_the_rest(raw):
    one_pool(raw, 8, [{"name": "research", "quotas": {"h100-train": 16}}])
    message = warnings(raw)["teams[].quotas.h100-train"]
    assert "offers 64 GPUs at maxNodes 8 but teams can use at most 16: 48 GPUs are unreachable" in message
    assert "quotas: research 16" in message


@pytest.mark.parametrize("kind, reachable", [("kueue", 32), ("volcano", 64)])
def test_borrowing_reaches_idle_capacity_under_volcano_and_only_lent_quota_under_kueue(raw, kind, reachable):
    # Kueue borrows only what another queue's nominal quota lends; Volcano grows a queue into idle nodes.
    one_pool(raw, 8, [{"name": "research", "quotas": {"h100-train": 16}, "borrowingLimit": 48},
                      {"name": "serving", "quotas": {"h100-train": 16}}], kind)
    found = warnings(raw)
    if reachable == 64:
        assert "teams[].quotas.h100-train" not in found
    else:
        assert "can use at most 32: 32 GPUs are unreachable" in found["teams[].quotas.h100-train"]
        assert "borrowing moves unused quota between teams, it adds none" in found["teams[].quotas.h100-train"]


def test_volcano_without_a_cohort_reaches_nominal_quota_only(raw):
    one_pool(raw, 4, [{"name": "research", "quotas": {"h100-train": 16}}], "volcano")
    assert "16 GPUs are unreachable" in warnings(raw)["teams[].quotas.h100-train"]


def test_unreachable_capacity_is_counted_in_the_pools_units(raw):
    # a100-infer: two p4de nodes of 8 GPUs in 7 one-slice MIG instances each, 56 of them quota'd.
    raw["teams"][0]["quotas"]["h100-train"] = 32
    found = warnings(raw)
    assert "teams[].quotas.h100-train" not in found
    assert "offers 112 MIG slices at maxNodes 2 but teams can use at most 56: 56 MIG slices are unreachable" in \
        found["teams[].quotas.a100-infer"]


def test_quotas_a_pool_can_never_honour_are_warned_even_when_overcommit_is_allowed(raw):
    one_pool(raw, 4, [{"name": "research", "quotas": {"h100-train": 24}},
                      {"name": "serving", "quotas": {"h100-train": 16}}])
    raw["scheduler"]["allowOvercommit"] = True
    message = warnings(raw)["teams[].quotas.h100-train"]
    assert "add up to 40 GPUs (research 24, serving 16) but pool 'h100-train' offers 32 at maxNodes 4" in message
    assert "never all be honoured" in message


def test_quotas_that_fill_the_pool_exactly_are_not_warned(raw):
    one_pool(raw, 4, [{"name": "research", "quotas": {"h100-train": 24}},
                      {"name": "serving", "quotas": {"h100-train": 8}}])
    assert not [path for path in warnings(raw) if path.startswith("teams[]")]
