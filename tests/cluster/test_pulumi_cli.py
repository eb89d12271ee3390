"""The program and the policy pack under the real Pulumi engine (tests/support/pulumi_cli.py) against a real API server
(tests/support/realcluster.py), compared with the offline engine (`gpu-platform plan` / `check`) on the same stack.

One module-scoped project runs one `pulumi up` / `destroy` cycle; the previews are run on it before and after.
"""
from __future__ import annotations

import contextlib
import json
import re
import threading

import pytest
import yaml

from support.paths import UPSTREAM
from support.pulumi_cli import HELM_RELEASE, Project, local_charts, make_project

pytestmark = pytest.mark.pulumi_cli

STACK = "adopted"
CONFIG = {
    "cloud": "aws",
    "environment": "production",
    "cluster": {"name": "adopted", "region": "us-east-1"},
    "gpuPools": [{"name": "h100-train", "instanceType": "p5.48xlarge", "maxNodes": 2}],
    "teams": [{"name": "research", "quotas": {"h100-train": 8}}],
    # No Prometheus release: it would need the Grafana password from pulumi-random, whose provider module the Go
    # proxy does not serve. Its CRDs are applied from ../shared/upstream instead, as for a cluster that runs one.
    "observability": {"prometheus": {"install": False}},
}


def _bad(config: dict) -> dict:
    """GPU014 (mandatory): a team namespace without Pod Security baseline (an adopted cluster's pools are managed
    elsewhere, so the pool rules have nothing to judge)."""
    bad = json.loads(json.dumps(config))
    bad["teams"][0]["podSecurity"] = "privileged"
    return bad


@pytest.fixture(scope="module")
def cluster(control_plane):
    if not (UPSTREAM / "charts").is_dir():
        pytest.skip(f"../shared/upstream not present ({UPSTREAM}): the Helm releases install from its chart packages")
    c = control_plane.cluster("pulumi-cli")
    # The stack's external Prometheus (prometheus.install: false): its CRDs and its namespace are the cluster's.
    for crd in sorted((UPSTREAM / "prometheus-operator" / "crds").glob("*.yaml")):
        c.kubectl("apply", "--server-side", "-f", str(crd))
    c.kubectl("create", "namespace", "monitoring")
    return c


@pytest.fixture(scope="module")
def project(cluster, tmp_path_factory) -> Project:
    proj = make_project(tmp_path_factory.mktemp("pulumi-cli"), STACK)
    proj.set_config(CONFIG, secrets={"cluster.existingKubeconfig": cluster.kubeconfig_inline()})
    return proj


def _comparable(resource: dict) -> dict:
    """One resource as both engines describe it: what the program registered, with which options."""
    opts = resource.get("options", resource)
    return {"type": resource["type"], "parent": resource["parent"], "custom": resource["custom"],
            "protect": bool(opts.get("protect")), "ignoreChanges": sorted(opts.get("ignoreChanges", [])),
            "dependsOn": sorted(opts.get("dependsOn", [])), "inputs": resource["inputs"]}


def _differences(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            sub = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                yield sub, a.get(k), b.get(k)
            else:
                yield from _differences(a[k], b[k], sub)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _differences(x, y, f"{path}[{i}]")
    elif a != b:
        yield path, a, b


def test_offline_plan_registers_what_the_real_engine_registers(project):
    real = {r["urn"]: _comparable(r) for r in project.registrations()}
    offline = {r["urn"]: _comparable(local_charts(r)) for r in project.offline_plan()["resources"]}
    assert sorted(real) == sorted(offline)
    found = {(urn.split("::")[-1], path): (old, new) for urn in real
             for path, old, new in _differences(offline[urn], real[urn])}
    assert found == {}, json.dumps({f"{k[0]} {k[1]}": v for k, v in found.items()}, indent=1)[:20000]


# --- the policy pack under the real CLI ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def policy_pack(tmp_path_factory):
    """policies/ as `pulumi preview --policy-pack` loads it, with its `venv` being this interpreter's virtualenv."""
    import shutil
    import sys

    from support.paths import ROOT
    pack = tmp_path_factory.mktemp("pack") / "policies"
    shutil.copytree(ROOT / "policies", pack, ignore=shutil.ignore_patterns("__pycache__", "venv"))
    (pack / "venv").symlink_to(sys.prefix)
    return pack


def _check(project: Project) -> dict:
    import os
    import subprocess
    import sys

    from support.paths import ROOT
    done = subprocess.run([sys.executable, "-m", "gpu_platform.cli", "check", "--file", str(project.stack_file),
                           "--format", "json"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _policy_preview(project: Project, pack) -> tuple[int, str]:
    """`pulumi preview --policy-pack`: its exit code and everything it printed."""
    done = project.pulumi("preview", "--policy-pack", str(pack), check=False)
    return done.returncode, done.stdout + done.stderr


def test_policy_pack_passes_the_good_stack_and_agrees_with_check(project, policy_pack):
    code, out = _policy_preview(project, policy_pack)
    offline = _check(project)
    assert offline["summary"]["findings"] == 0
    assert code == 0, out[-6000:]
    assert "Policy Violations" not in out and "gpu-platform@v1.0.0" in out, out[-6000:]


def test_policy_pack_blocks_the_bad_stack_with_the_rule_message(cluster, policy_pack, tmp_path_factory):
    bad = make_project(tmp_path_factory.mktemp("pulumi-cli-bad"), STACK)
    bad.set_config(_bad(CONFIG), secrets={"cluster.existingKubeconfig": cluster.kubeconfig_inline()})
    offline = _check(bad)
    failing = [f for f in offline["findings"] if f.get("enforcement") == "mandatory"]
    assert failing and {f["rule"] for f in failing} == {"GPU014"}, json.dumps(offline["findings"], indent=1)
    code, out = _policy_preview(bad, policy_pack)
    assert code != 0
    flat = " ".join(out.split())
    for finding in failing:
        assert "mandatory" in flat and finding["policy"] in flat, flat[-6000:]
        assert " ".join(finding["message"].split()) in flat, (finding["message"], flat[-6000:])


# --- one up / preview / edit / destroy cycle ----------------------------------------------------------------------

def _needed(plan: dict, urns: list[str]) -> set[str]:
    """Resources and everything they need registered first: parents up to the stack, what they depend on, and every
    provider (a targeted update creates only what it is given)."""
    by_urn = {r["urn"]: r for r in plan["resources"]}
    out: set[str] = set()
    todo = [*urns, *(r["urn"] for r in plan["resources"] if r["type"].startswith("pulumi:providers:"))]
    while todo:
        urn = todo.pop()
        if urn in out or urn not in by_urn:
            continue
        out.add(urn)
        todo += [by_urn[urn]["parent"], *by_urn[urn]["options"].get("dependsOn", [])]
    return out


def _stand_in_for_kueue_pods(cluster) -> list[str]:
    """Kueue's admission webhooks and its visibility API are served by its pods, which no kubelet starts here. Let
    the API server go on without the webhooks (failurePolicy Ignore), as it would with them up and allowing, and drop
    the visibility APIServices: an aggregated API nobody serves fails discovery, and the namespace controller then
    never finishes deleting a namespace (`pulumi destroy` would wait on the GPU Operator's forever)."""
    changed = []
    for item in cluster.get("apiservices")["items"]:
        if item["spec"].get("group") == "visibility.kueue.x-k8s.io":
            cluster.kubectl("delete", "apiservice", item["metadata"]["name"])
            changed.append(item["metadata"]["name"])
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        for item in cluster.get(kind)["items"]:
            if not any(w.get("failurePolicy") == "Fail" for w in item.get("webhooks", [])):
                continue
            for w in item["webhooks"]:
                w["failurePolicy"] = "Ignore"
            cluster.kubectl("replace", "-f", "-", stdin=json.dumps(item))
            changed.append(item["metadata"]["name"])
    return changed


@contextlib.contextmanager
def helm_hooks_done(cluster, every: float = 2.0):
    """Stand in for the kubelet that would run Helm's hook Jobs (the GPU Operator's pre-delete cleanup-gpucluster,
    NFD's post-delete prune). Helm waits on a hook with no deadline when the provider gives it none (uninstall
    under skipAwait), and a Job no kubelet runs never finishes. Helm 3 takes a hook's Deleted watch event as done,
    so while the block runs each hook Job or Pod is deleted once it has been seen on two polls (Helm is watching
    it by then; deleting one before its watch starts would leave Helm waiting for an event that never comes)."""
    stop = threading.Event()
    seen: set[tuple[str, str, str]] = set()
    deleted: list[str] = []

    def reap():
        while not stop.wait(every):
            for kind in ("jobs", "pods"):
                items = json.loads(cluster.kubectl("get", kind, "-A", "-o", "json", check=False).stdout or "{}")
                for item in items.get("items", []):
                    meta = item["metadata"]
                    if "helm.sh/hook" not in (meta.get("annotations") or {}):
                        continue
                    key = (kind, meta["namespace"], meta["name"])
                    if key in seen:
                        cluster.kubectl("delete", kind, meta["name"], "-n", meta["namespace"], "--wait=false",
                                        "--ignore-not-found", "--cascade=background", check=False)
                        deleted.append("/".join(key))
                    seen.add(key)

    thread = threading.Thread(target=reap, daemon=True)
    thread.start()
    try:
        yield deleted
    finally:
        stop.set()
        thread.join()


@pytest.fixture(scope="module")
def deployed(project, cluster):
    plan = project.offline_plan()
    kueue = [r["urn"] for r in plan["resources"] if r["type"] == HELM_RELEASE and r["name"] == "kueue-release"]
    targets = sorted(_needed(plan, kueue))
    args = [a for t in targets for a in ("--target", t)]
    project.pulumi("up", "--yes", "--skip-preview", *args)
    stood_in = _stand_in_for_kueue_pods(cluster)
    assert any("visibility" in name for name in stood_in), stood_in
    assert any("webhook" in name for name in stood_in), stood_in
    project.pulumi("up", "--yes", "--skip-preview")
    yield plan
    with helm_hooks_done(cluster):
        project.pulumi("state", "unprotect", "--all", "--yes", check=False)
        project.pulumi("destroy", "--yes", "--skip-preview", check=False, timeout=600)


def _cluster_objects(cluster, plan: dict) -> list[str]:
    """Every Kubernetes object the plan names that the cluster still has (Helm releases by their release Secret)."""
    found = []
    for r in plan["resources"]:
        if not r["custom"] or not r["type"].startswith("kubernetes:"):
            continue
        inputs = r["inputs"]
        if r["type"] == HELM_RELEASE:
            args = ("secrets", "-n", inputs["namespace"], "-l", f"owner=helm,name={inputs['name']}", "-o", "name")
        else:
            meta = inputs.get("metadata") or {}
            if not isinstance(meta.get("name"), str):
                continue
            kind = r["type"].rsplit(":", 1)[1].lower()
            group = r["type"].split(":")[1].split("/")[0]
            resource = kind if group == "core" else f"{kind}.{group}"
            args = (resource, meta["name"], "-o", "name", "--ignore-not-found")
            if meta.get("namespace"):
                args += ("-n", meta["namespace"])
        out = cluster.kubectl("get", *args, check=False)
        if out.returncode == 0 and out.stdout.strip():
            found.append(f"{r['urn']}: {out.stdout.strip()}")
    return found


def test_up_creates_the_layers_and_a_second_preview_shows_no_changes(project, cluster, deployed):
    state = json.loads(project.pulumi("stack", "export").stdout)
    urns = {r["urn"] for r in state["deployment"]["resources"]}
    assert {r["urn"] for r in deployed["resources"]} <= urns
    assert len(_cluster_objects(cluster, deployed)) > 0
    assert cluster.get("namespace", "research")["metadata"]["name"] == "research"
    project.pulumi("preview", "--expect-no-changes", "--diff")


def test_an_edit_previews_as_plan_diff_says(project, deployed, tmp_path):
    import os
    import subprocess
    import sys

    from support.paths import ROOT
    old = tmp_path / "old.json"
    old.write_text(json.dumps(deployed))
    edited = json.loads(json.dumps(CONFIG))
    edited["teams"][0]["quotas"]["h100-train"] = 12
    edited["teams"].append({"name": "vision", "quotas": {"h100-train": 4}})
    original = project.stack_file.read_text()
    data = yaml.safe_load(original)
    data["config"]["gpu-platform:teams"] = edited["teams"]
    project.stack_file.write_text(yaml.safe_dump(data, sort_keys=False))
    try:
        done = subprocess.run([sys.executable, "-m", "gpu_platform.cli", "plan", "--file", str(project.stack_file),
                               "--diff", str(old), "--format", "json"], cwd=ROOT, capture_output=True, text=True,
                              timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode in (0, 1), done.stderr
        offline = json.loads(done.stdout)
        edited_plan = project.offline_plan()
        preview = json.loads(project.pulumi("preview", "--json").stdout)
    finally:
        project.stack_file.write_text(original)
    ops = {"create": "add", "update": "change", "replace": "replace", "create-replacement": "replace",
           "delete": "delete"}
    # Only custom resources, as `plan --diff` compares them: the real preview also lists a component whose inputs
    # changed (Team::research) or that is new (Team::vision), but a component holds no state `up` would change.
    custom = {r["urn"] for r in (*deployed["resources"], *edited_plan["resources"]) if r["custom"]}
    real = {a: set() for a in ("add", "change", "replace", "delete")}
    for step in preview.get("steps", []):
        if step["op"] in ops and step["urn"] in custom and not step["urn"].split("::")[2].startswith("pulumi:providers:"):
            real[ops[step["op"]]].add(step["urn"])
    expected = {a: {c["urn"] for c in offline[a]} for a in real}
    assert real == expected, {a: {"real only": sorted(real[a] - expected[a]), "plan --diff only":
                                  sorted(expected[a] - real[a])} for a in real if real[a] != expected[a]}


def test_destroy_leaves_nothing_behind(project, cluster, deployed):
    # A production stack protects its team namespaces, quotas and queues: destroy refuses them and keeps them.
    protected = {r["urn"] for r in deployed["resources"] if r["options"].get("protect")}
    assert protected
    with helm_hooks_done(cluster) as hooks:
        refused = project.pulumi("destroy", "--yes", "--skip-preview", timeout=600, check=False)
        assert refused.returncode != 0 and "because it is protected" in refused.stdout + refused.stderr
        left = {r["urn"] for r in json.loads(project.pulumi("stack", "export").stdout)["deployment"]["resources"]}
        assert protected <= left
        # What an operator retiring the platform runs.
        project.pulumi("state", "unprotect", "--all", "--yes")
        project.pulumi("destroy", "--yes", "--skip-preview", timeout=600)
    assert any("cleanup-gpucluster" in h for h in hooks), hooks  # the GPU Operator's pre-delete hook ran
    state = json.loads(project.pulumi("stack", "export").stdout)
    assert state["deployment"].get("resources") in (None, [])
    assert _cluster_objects(cluster, deployed) == []
