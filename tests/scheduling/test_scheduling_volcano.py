"""Volcano: the chart release and its scheduler configuration, one Queue per team, and conformance with the
v1.15.1 CRDs, chart values and default scheduler conf in ../shared/upstream."""
from __future__ import annotations

import pytest
import yaml

from components.config import validate
from components.scheduling.volcano import component as volcano

from support.paths import STACKS, upstream
from support.scheduling import checked_queues
from support.stacks import by_name, crd_errors, ours, planned, stack_config, whole

QUEUE_CRD = "volcano/crds/scheduling.volcano.sh_queues.yaml"
# Actions and plugins the v1.15 scheduler registers (pkg/scheduler/actions, pkg/scheduler/plugins).
ACTIONS = {"enqueue", "allocate", "preempt", "reclaim", "backfill", "shuffle"}
PLUGINS = {"binpack", "capacity", "cdp", "conformance", "deviceshare", "drf", "extender", "gang", "nodegroup",
           "nodeorder", "numaaware", "overcommit", "pdb", "predicates", "priority", "proportion", "rescheduling",
           "resource-strategy-fit", "sla", "task-topology", "tdm", "usage", "network-topology-aware",
           "resourcequota"}


def release(plan) -> dict:
    return next(r.inputs for r in ours(plan) if r.type == "kubernetes:helm.sh/v3:Release")


def scheduler_conf(plan) -> dict:
    return yaml.safe_load(release(plan)["values"]["custom"]["scheduler_config_override"])


def plugins(conf: dict) -> list[dict]:
    return [p for tier in conf["tiers"] for p in tier["plugins"]]


def queues(plan) -> dict[str, dict]:
    return {name: whole(q["spec"]) for name, q in by_name(plan, "Queue").items()}


def test_every_queue_validates_against_the_volcano_crd():
    checked = checked_queues("volcano", STACKS, QUEUE_CRD, "v1beta1", "scheduling.volcano.sh/v1beta1")
    assert checked == sum(len(stack_config(s)["gpu-platform:teams"]) for s in STACKS)
    assert crd_errors(QUEUE_CRD, "v1beta1", {"apiVersion": volcano.API, "kind": "Queue", "metadata": {"name": "q"},
                                             "spec": {"guarantee": {"nvidia.com/gpu": 1}}})  # strictness bites


def test_aws_prod_as_volcano_maps_nominal_borrowing_and_lending():
    qs = queues(planned("aws-prod", "volcano"))
    assert qs["research"] == {"weight": 24, "reclaimable": True, "priority": 3,
                              "deserved": {"nvidia.com/gpu": 48}, "capability": {"nvidia.com/gpu": 64}}
    assert qs["applied"]["deserved"] == {"nvidia.com/gpu": 64} and qs["applied"]["capability"] == {"nvidia.com/gpu": 80}
    assert qs["serving"] == {"weight": 8, "reclaimable": True, "priority": 4,
                             "deserved": {"nvidia.com/gpu": 56}, "capability": {"nvidia.com/gpu": 56}}
    assert all("guarantee" not in q for q in qs.values())  # nobody sets lendingLimit: all nominal may be lent


def test_guarantee_is_the_quota_a_team_never_lends(raw):
    raw["teams"][0]["lendingLimit"] = 4
    raw["scheduler"] = {"kind": "volcano"}
    config = validate(raw)
    spec = volcano.queue_spec(config, config.teams[0])
    assert spec["guarantee"] == {"resource": {"nvidia.com/gpu": 12}}
    assert spec["deserved"] == {"nvidia.com/gpu": 16} and spec["capability"] == {"nvidia.com/gpu": 24}


def test_mixed_mig_queues_count_slices():
    qs = queues(planned("oci-prod", "volcano"))
    assert set(qs["genai"]["deserved"]) == {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb",
                                            "nvidia.com/mig-3g.40gb"}
    assert qs["genai"]["deserved"]["nvidia.com/mig-1g.10gb"] == 16  # 8 GPUs' worth of the balanced layout


def test_gcp_dev_queues_and_namespace_default_queue():
    plan = planned("gcp-dev", "volcano")
    assert queues(plan) == {
        "alpha": {"weight": 6, "reclaimable": True, "priority": 3, "deserved": {"nvidia.com/gpu": 6},
                  "capability": {"nvidia.com/gpu": 6}},
        "beta": {"weight": 6, "reclaimable": True, "priority": 2, "deserved": {"nvidia.com/gpu": 6},
                 "capability": {"nvidia.com/gpu": 6}},
    }
    for name, ns in by_name(plan, "Namespace").items():
        assert ns["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": name}


def test_scheduler_conf_has_reclaim_preempt_gang_and_capacity_not_proportion():
    for stack in STACKS:
        conf = scheduler_conf(planned(stack, "volcano"))
        actions = [a.strip() for a in conf["actions"].split(",")]
        assert actions == ["enqueue", "allocate", "preempt", "reclaim", "backfill"]
        names = [p["name"] for p in plugins(conf)]
        assert set(actions) <= ACTIONS and set(names) <= PLUGINS and len(names) == len(set(names))
        assert "capacity" in names and "proportion" not in names
        assert {"gang", "priority", "conformance", "drf", "predicates", "nodeorder", "binpack"} <= set(names)


def test_scheduler_conf_is_the_upstream_default_with_documented_swaps():
    default = yaml.safe_load(upstream("volcano/config/volcano-scheduler.conf").read_text())
    assert {p["name"] for p in plugins(default)} <= PLUGINS  # our plugin list knows every upstream default
    conf = scheduler_conf(planned("gcp-dev", "volcano"))
    ours_ = {p["name"]: p for p in plugins(conf)}
    theirs = {p["name"]: p for p in plugins(default)}
    assert set(ours_) == set(theirs) - {"proportion", "overcommit"} | {"capacity"}
    for name in ("gang", "drf"):
        assert ours_[name] == theirs[name]  # enablePreemptable: false kept
    assert [[p["name"] for p in t["plugins"]] for t in conf["tiers"]][0] == ["priority", "gang", "conformance"]


def test_binpack_packs_every_gpu_resource():
    conf = scheduler_conf(planned("oci-prod", "volcano"))
    args = next(p for p in plugins(conf) if p["name"] == "binpack")["arguments"]
    names = args["binpack.resources"].split(", ")
    assert names == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"]
    assert all(args[f"binpack.resources.{n}"] == 10 for n in names)


def test_release_is_pinned_and_sets_the_real_values_key():
    values = yaml.safe_load(upstream("volcano/values.yaml").read_text())
    chart = yaml.safe_load(upstream("volcano/Chart.yaml").read_text())
    assert "scheduler_config_override" in values["custom"]
    for stack in STACKS:
        rel = release(planned(stack, "volcano"))
        assert (rel["chart"], rel["version"], rel["namespace"], rel["name"]) == (
            "volcano", chart["version"], "volcano-system", "volcano")
        assert rel["repositoryOpts"] == {"repo": "https://volcano-sh.github.io/helm-charts"}
        assert "default_tolerations" in values["custom"]
        assert set(rel["values"]) == {"custom"} and set(rel["values"]["custom"]) == {"scheduler_config_override",
                                                                                      "default_tolerations"}


@pytest.mark.parametrize("stack", STACKS)
def test_queue_resources_match_the_namespace_quota(stack):
    plan = planned(stack, "volcano")
    for name, spec in queues(plan).items():
        hard = by_name(plan, "ResourceQuota")[f"{name}/gpu-quota"]["spec"]["hard"]
        assert {k: str(v) for k, v in spec["capability"].items()} == {
            k.removeprefix("requests."): v for k, v in hard.items() if v != "0"}
