"""The scheduler registry (components/scheduling/kinds.py): one row per scheduler package, read everywhere instead
of names."""
from __future__ import annotations

import ast

import pytest

from components.config.teams import RESERVED_NAMESPACES
from components.observability import monitoring
from components.observability.reclaimer import job as reclaimer_job
from components.scheduling.kai import component as kai
from components.scheduling.kinds import KINDS, SCHEDULERS, scheduler_kind
from components.scheduling.kueue import component as kueue
from components.scheduling.registry import register
from components.scheduling.volcano import component as volcano
from components.pins import PINS
from gpu_platform.simulator import scheduler as simulated
from policies import charts as policy_charts
from policies import k8s as policy_k8s
from policies import pool_reach
from policies.rules import gpu004_priorities_and_preemption as gpu004
from policies.rules import gpu005_gang_admission as gpu005

from support.paths import ROOT

# Files allowed to spell scheduler names and namespaces: each scheduler's own package, and the reclaimer script,
# which runs from a ConfigMap with the standard library only and so keeps its own copy (checked below).
OWN_PACKAGES = tuple(f"components/scheduling/{name}/" for name in SCHEDULERS)
# The pins name charts, and KAI's chart is named like the namespace it runs in.
OWN_COPIES = {"components/observability/reclaimer/job.py", "components/pins.py"}


def test_an_unknown_kind_names_the_allowed_values():
    assert scheduler_kind("volcano") is KINDS["volcano"]
    with pytest.raises(ValueError, match=r"unknown scheduler kind 'slurm'; allowed: kueue, volcano, kai"):
        scheduler_kind("slurm")


def test_a_kind_registers_once():
    with pytest.raises(ValueError, match="scheduler kind 'kueue' is registered twice"):
        register(KINDS["kueue"])


def test_the_components_install_what_their_row_says():
    for module in (kueue, volcano, kai):
        row = module.KIND
        assert (module.CHART, module.VERSION, module.NAMESPACE, module.API) == (
            row.chart, row.version, row.namespace, row.api)
    assert volcano.REPOSITORY == KINDS["volcano"].repository
    assert kueue.LOCAL_QUEUE == KINDS["kueue"].local_queue


@pytest.mark.parametrize("name", SCHEDULERS)
def test_every_row_is_wired(name):
    row = KINDS[name]
    assert callable(row.parts().install)
    assert row.namespace in RESERVED_NAMESPACES  # no team may take the scheduler's namespace
    monitor = monitoring.scheduler_monitor_spec(name)
    assert monitor is None or monitor["namespaceSelector"] == {"matchNames": [row.namespace]}
    watched = row.monitoring()
    alert = watched.pending_alert(30)
    assert alert is None or all(alert)
    assert isinstance(watched.recording_rules(), list) and isinstance(watched.dashboard_panels(), list)


def test_rows_load_no_pulumi():
    """Config validation imports only facts: loading the registry must not load a scheduler's components."""
    import subprocess
    import sys
    code = ("import sys, components.scheduling.kinds, components.config.parse; "
            "print(sorted(m for m in sys.modules if m.startswith('pulumi') or m.endswith('.component')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT)}).stdout.strip()
    assert out == "[]"


def test_the_simulator_models_exactly_the_rows_that_do_not_say_otherwise():
    assert set(simulated._REGISTRY) == {name for name, row in KINDS.items() if row.not_simulated is None}


def test_queue_names_as_jobs_use_them():
    assert KINDS["kueue"].queue_of("research") == "research/default"
    assert KINDS["volcano"].queue_of("research") == "research"


def test_copies_outside_the_table_agree_with_it():
    """The policy pack must not import components/ and the reclaimer script only the standard library."""
    assert reclaimer_job.SCHEDULERS == tuple(name for name, row in KINDS.items() if row.reclaim_rules)
    assert reclaimer_job.KUEUE_API == KINDS["kueue"].api
    acted_on = {group for row in KINDS.values() for groups, _, _ in row.reclaim_rules or () for group in groups}
    assert acted_on == {"batch", *(api.split("/")[0] for api in (reclaimer_job.KUEUE_API,
                                                                reclaimer_job.VOLCANO_JOB_API,
                                                                reclaimer_job.VOLCANO_BUS_API))}
    assert (gpu005.KUEUE, gpu005.VOLCANO, gpu004.VOLCANO) == ("kueue", "volcano", "volcano")
    assert KINDS["kueue"].namespace in gpu005.KUEUE_DEFAULT_NAMESPACES["matchExpressions"][0]["values"]
    assert f"kubernetes:{KINDS['kueue'].api}:ClusterQueue" in policy_k8s.CLUSTER_QUEUES
    assert policy_k8s.VOLCANO_QUEUE == f"kubernetes:{KINDS['volcano'].api}:Queue"
    assert policy_k8s.KAI_QUEUE == pool_reach.KAI_QUEUE == f"kubernetes:{KINDS['kai'].api}:Queue"
    assert policy_charts.KAI == PINS["kai-scheduler"].chart == KINDS["kai"].chart.rsplit("/", 1)[-1]


def _name_checks(tree: ast.AST) -> list[int]:
    """Lines comparing something with a scheduler name (`x == "kueue"`, `x != "volcano"`, `x in ("kueue", ...)`)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                names = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
                if any(isinstance(n, ast.Constant) and n.value in SCHEDULERS for n in names):
                    found.append(node.lineno)
    return found


def test_no_scheduler_name_checks_or_namespaces_outside_the_table():
    offenders = []
    for path in sorted((ROOT / "components").rglob("*.py")) + sorted((ROOT / "gpu_platform").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in OWN_COPIES or rel.startswith(OWN_PACKAGES) or rel.startswith("gpu_platform/simulator/"):
            continue  # the simulator reads the planned graph on its own terms (refactored separately)
        text = path.read_text()
        offenders += [f"{rel}:{line}" for line in _name_checks(ast.parse(text))]
        offenders += [f"{rel}: {row.namespace}" for row in KINDS.values() if f'"{row.namespace}"' in text]
    assert offenders == []
