"""The reclaimer script against a fake Prometheus and a fake Kubernetes API, both plain HTTP on 127.0.0.1."""
from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from components.observability.reclaimer import job
from components.observability.reclaimer.component import SCRIPT

FIRING = 'ALERTS{alertname="GPUIdleAllocated",alertstate="firing"}'
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/research/workloads"


class Fake:
    """A JSON server answering (method, path) from a table, recording every request; unknown paths are 404."""

    def __init__(self, routes: dict[tuple[str, str], tuple[int, Any]]):
        self.routes = routes
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                fake.requests.append({"method": self.command, "path": url.path,
                                      "query": dict(urllib.parse.parse_qsl(url.query)), "body": body,
                                      "content_type": self.headers.get("Content-Type")})
                status, answer = fake.routes.get((self.command, url.path), (404, {"kind": "Status", "code": 404}))
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = _answer

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def writes(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] != "GET"]

    def __enter__(self) -> "Fake":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def alerts(*pods: tuple[str, str, str]) -> dict:
    """Firing idle alerts for (namespace, pod, uid); an empty uid leaves the label out."""
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "ALERTS", "alertname": "GPUIdleAllocated", "alertstate": "firing", "namespace": ns,
                    "pod": pod, "team": ns, "pool": "h100-train", **({"uid": uid} if uid else {})},
         "value": [1700000000, "1"]} for ns, pod, uid in pods]}}


def meta(name: str, uid: str, owners: list[tuple[str, str, str, str]] = (), labels: dict | None = None) -> dict:
    return {"name": name, "uid": uid, "labels": labels or {}, "ownerReferences": [
        {"apiVersion": api, "kind": kind, "name": owner, "uid": owner_uid, "controller": True}
        for api, kind, owner, owner_uid in owners]}


def pod(name: str, uid: str, *owners) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, uid, list(owners))}


def workload(name: str, uid: str, owners=(), labels=None, active: bool | None = None) -> dict:
    spec = {"queueName": "default"} if active is None else {"queueName": "default", "active": active}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": meta(name, uid, list(owners), labels),
            "spec": spec}


def kueue_cluster() -> dict[tuple[str, str], tuple[int, Any]]:
    """research opted in: a batch Job with two idle pods, a JobSet, a plain pod, an already inactive Workload and a
    pod that finished meanwhile. applied (not opted in) has an idle pod too."""
    job_ref = ("batch/v1", "Job", "train", "uid-job-train")
    return {
        ("GET", "/api/v1/namespaces/research/pods/train-0"): (200, pod("train-0", "uid-p0", job_ref)),
        ("GET", "/api/v1/namespaces/research/pods/train-1"): (200, pod("train-1", "uid-p1", job_ref)),
        ("GET", "/apis/batch/v1/namespaces/research/jobs/train"): (200, {"metadata": meta("train", "uid-job-train")}),
        ("GET", "/api/v1/namespaces/research/pods/js-0"): (200, pod("js-0", "uid-p2", (
            "batch/v1", "Job", "js-workers-0", "uid-job-js"))),
        ("GET", "/apis/batch/v1/namespaces/research/jobs/js-workers-0"): (200, {"metadata": meta(
            "js-workers-0", "uid-job-js", [("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "uid-jobset")])}),
        ("GET", "/api/v1/namespaces/research/pods/notebook"): (200, pod("notebook", "uid-plain")),
        ("GET", "/api/v1/namespaces/research/pods/paused-0"): (200, pod("paused-0", "uid-p3", (
            "batch/v1", "Job", "paused", "uid-job-paused"))),
        ("GET", "/apis/batch/v1/namespaces/research/jobs/paused"): (200, {"metadata": meta("paused", "uid-job-paused")}),
        ("GET", WORKLOADS): (200, {"items": [
            workload("job-train-1a2b3", "uid-wl-train", [("batch/v1", "Job", "train", "uid-job-train")], active=True),
            workload("jobset-js-4c5d6", "uid-wl-js", [("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "uid-jobset")],
                     labels={job.JOB_UID_LABEL: "uid-jobset"}),
            workload("pod-notebook-7e8f9", "uid-wl-plain", [("v1", "Pod", "notebook", "uid-plain")]),
            workload("job-paused-0a1b2", "uid-wl-paused", [("batch/v1", "Job", "paused", "uid-job-paused")],
                     active=False),
        ]}),
        ("PATCH", f"{WORKLOADS}/job-train-1a2b3"): (200, {}),
        ("PATCH", f"{WORKLOADS}/jobset-js-4c5d6"): (200, {}),
        ("PATCH", f"{WORKLOADS}/pod-notebook-7e8f9"): (200, {}),
        ("POST", "/api/v1/namespaces/research/events"): (201, {}),
    }


IDLE = [("research", "train-0", "uid-p0"), ("research", "train-1", "uid-p1"), ("research", "js-0", "uid-p2"),
        ("research", "notebook", "uid-plain"), ("research", "paused-0", "uid-p3"), ("research", "finished-0", "uid-f0"),
        ("applied", "hoard-0", "uid-h")]
OPTED_IN = ("research", "alpha")  # RECLAIM_NAMESPACES: research (Kueue) and alpha (Volcano)


def settings(prometheus: Fake, api: Fake, scheduler: str = "kueue", dry_run: bool = True) -> job.Settings:
    return job.Settings(prometheus_url=prometheus.url, api_url=api.url, scheduler=scheduler, dry_run=dry_run,
                        namespaces=OPTED_IN, token="t0ken")


def run(prometheus_routes, api_routes, scheduler="kueue", dry_run=True):
    out, err = io.StringIO(), io.StringIO()
    with Fake(prometheus_routes) as prometheus, Fake(api_routes) as api:
        code = job.run(settings(prometheus, api, scheduler, dry_run), out, err)
    return code, out.getvalue(), err.getvalue(), prometheus, api


def test_dry_run_reads_and_reports_but_changes_nothing():
    code, out, err, prometheus, api = run({("GET", "/api/v1/query"): (200, alerts(*IDLE))}, kueue_cluster())
    assert (code, err) == (0, "")
    assert prometheus.requests[0]["query"] == {"query": FIRING}
    assert api.writes() == []
    # Opt-in comes from RECLAIM_NAMESPACES (and RBAC): nothing lists namespaces cluster-wide.
    assert all(r["path"].startswith(("/api/v1/namespaces/research/", "/apis/")) for r in api.requests)
    lines = out.splitlines()
    assert "dry run: would deactivate Kueue Workload research/job-train-1a2b3 (idle pods: train-0, train-1)" in lines
    assert "dry run: would deactivate Kueue Workload research/jobset-js-4c5d6 (idle pods: js-0)" in lines
    assert "dry run: would deactivate Kueue Workload research/pod-notebook-7e8f9 (idle pods: notebook)" in lines
    assert "Workload research/job-paused-0a1b2 is already inactive" in lines
    assert "pod research/finished-0 is gone" in lines
    assert "1 idle pod(s) in namespaces whose team did not opt in: ignored" in lines
    assert lines[-1] == "dry run: 3 reclaim(s) planned, nothing changed"


def test_real_run_deactivates_the_right_workloads_and_records_events():
    code, out, err, _, api = run({("GET", "/api/v1/query"): (200, alerts(*IDLE))}, kueue_cluster(), dry_run=False)
    assert (code, err) == (0, "")
    patches = [r for r in api.writes() if r["method"] == "PATCH"]
    # In the order of the idle pods: js-0, notebook, train-0 (train-1 shares its Workload).
    assert [r["path"].rsplit("/", 1)[1] for r in patches] == ["jobset-js-4c5d6", "pod-notebook-7e8f9",
                                                              "job-train-1a2b3"]
    # Each patch names the Workload's UID: the API server refuses it for a re-created namesake.
    assert [r["body"] for r in patches] == [{"metadata": {"uid": uid}, "spec": {"active": False}}
                                            for uid in ("uid-wl-js", "uid-wl-plain", "uid-wl-train")]
    assert all(r["content_type"] == "application/merge-patch+json" for r in patches)
    events = [r["body"] for r in api.writes() if r["method"] == "POST"]
    assert [e["involvedObject"] for e in events] == [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": name, "namespace": "research", "uid": uid}
        for name, uid in (("jobset-js-4c5d6", "uid-wl-js"), ("pod-notebook-7e8f9", "uid-wl-plain"),
                          ("job-train-1a2b3", "uid-wl-train"))]
    first = events[2]
    assert (first["reason"], first["type"], first["action"], first["source"]) == (
        "IdleGPUsReclaimed", "Warning", "Deactivate", {"component": "gpu-platform-reclaimer"})
    assert "train-0, train-1" in first["message"] and '"active":true' in first["message"]
    assert "teams[].reclaim: false" in first["message"]
    assert first["metadata"] == {"generateName": "job-train-1a2b3.", "namespace": "research"}
    assert out.splitlines()[-1] == "3 reclaim(s) done"
    # Every write went where each one belongs: a patch, then its Event.
    assert [r["method"] for r in api.writes()] == ["PATCH", "POST"] * 3


def test_opted_out_teams_are_never_touched():
    routes = kueue_cluster()
    routes[("GET", "/api/v1/namespaces/applied/pods/hoard-0")] = (200, pod("hoard-0", "uid-h"))
    for dry_run in (True, False):
        code, out, _, _, api = run({("GET", "/api/v1/query"): (200, alerts(("applied", "hoard-0", "uid-h")))}, routes,
                                   dry_run=dry_run)
        assert code == 0
        assert [r for r in api.requests if "/applied" in r["path"]] == []
        assert api.writes() == []
        assert "0 reclaim(s)" in out


@pytest.mark.parametrize("answer", [
    (500, {"status": "error", "error": "query timed out"}),
    (200, {"status": "error", "errorType": "bad_data", "error": "parse error"}),
    (200, ["not", "an", "object"]),
])
def test_a_prometheus_failure_changes_nothing_and_fails(answer):
    code, out, err, _, api = run({("GET", "/api/v1/query"): answer}, kueue_cluster(), dry_run=False)
    assert code == 1
    assert err.startswith("gpu-reclaimer: nothing changed: ")
    assert api.requests == []
    assert out == ""


def test_an_unreachable_prometheus_changes_nothing_and_fails():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    err = io.StringIO()
    with Fake(kueue_cluster()) as api:
        code = job.run(job.Settings(prometheus_url=dead, api_url=api.url, scheduler="kueue", dry_run=False),
                       io.StringIO(), err)
    assert code == 1 and "nothing changed" in err.getvalue() and dead in err.getvalue()
    assert api.requests == []



def test_an_unreadable_cluster_ca_changes_nothing_and_fails(tmp_path):
    err = io.StringIO()
    with Fake({("GET", "/api/v1/query"): (200, alerts(*IDLE))}) as prometheus:
        code = job.run(job.Settings(prometheus_url=prometheus.url, api_url="https://10.0.0.1:443", scheduler="kueue",
                                    dry_run=False, ca_file=str(tmp_path / "missing-ca.crt")), io.StringIO(), err)
    assert code == 1
    assert err.getvalue().startswith("gpu-reclaimer: nothing changed: cannot load the CA for https://10.0.0.1:443")
    assert prometheus.requests == []

@pytest.mark.parametrize("broken", [("GET", "/apis/batch/v1/namespaces/research/jobs/train"), ("GET", WORKLOADS),
                                    ("GET", "/api/v1/namespaces/research/pods/js-0")])
def test_an_api_failure_while_planning_changes_nothing_and_fails(broken):
    routes = kueue_cluster()
    routes[broken] = (403, {"kind": "Status", "code": 403, "message": "forbidden"})
    code, _, err, _, api = run({("GET", "/api/v1/query"): (200, alerts(*IDLE))}, routes, dry_run=False)
    assert code == 1
    assert "nothing changed" in err and "HTTP 403" in err and broken[1] in err
    assert api.writes() == []


def test_a_failed_write_stops_the_run_with_what_was_done():
    routes = kueue_cluster()
    routes[("PATCH", f"{WORKLOADS}/pod-notebook-7e8f9")] = (409, {"kind": "Status", "code": 409})
    code, out, err, _, api = run({("GET", "/api/v1/query"): (200, alerts(*IDLE))}, routes, dry_run=False)
    assert code == 1
    assert "stopped after 1 of 3 reclaim(s)" in err and "HTTP 409" in err
    assert [r["path"].rsplit("/", 1)[1] for r in api.writes()] == ["jobset-js-4c5d6", "events", "pod-notebook-7e8f9"]


def volcano_cluster(phase: str) -> dict[tuple[str, str], tuple[int, Any]]:
    vcjob = ("batch.volcano.sh/v1alpha1", "Job", "train", "uid-vc-train")
    return {
        ("GET", "/api/v1/namespaces/alpha/pods/train-worker-0"): (200, pod("train-worker-0", "uid-w0", vcjob)),
        ("GET", "/api/v1/namespaces/alpha/pods/loose"): (200, pod("loose", "uid-loose")),
        ("GET", "/apis/batch.volcano.sh/v1alpha1/namespaces/alpha/jobs/train"): (200, {
            "metadata": meta("train", "uid-vc-train"), "status": {"state": {"phase": phase}}}),
        ("POST", "/apis/bus.volcano.sh/v1alpha1/namespaces/alpha/commands"): (201, {}),
        ("POST", "/api/v1/namespaces/alpha/events"): (201, {}),
    }


def test_volcano_jobs_are_aborted_through_a_bus_command():
    prom = {("GET", "/api/v1/query"): (200, alerts(("alpha", "train-worker-0", "uid-w0"),
                                                   ("alpha", "loose", "uid-loose")))}
    code, out, err, _, api = run(prom, volcano_cluster("Running"), scheduler="volcano", dry_run=False)
    assert (code, err) == (0, "")
    command, event = [r["body"] for r in api.writes()]
    owner = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train", "uid": "uid-vc-train",
             "controller": True}
    assert command == {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "action": "AbortJob",
                       "target": owner, "metadata": {"generateName": "train-abortjob-", "namespace": "alpha",
                                                     "ownerReferences": [owner]}}
    assert event["involvedObject"]["kind"] == "Job" and "vcctl job resume -n alpha -N train" in event["message"]
    assert "pod alpha/loose belongs to no Volcano Job; left alone" in out


def test_volcano_jobs_already_stopping_are_left_alone():
    prom = {("GET", "/api/v1/query"): (200, alerts(("alpha", "train-worker-0", "uid-w0")))}
    code, out, _, _, api = run(prom, volcano_cluster("Aborted"), scheduler="volcano", dry_run=False)
    assert code == 0 and api.writes() == []
    assert "Volcano Job alpha/train is already Aborted" in out


# --- settings from the CronJob's environment ------------------------------------------------------------------


@pytest.fixture
def service_account(tmp_path):
    (tmp_path / "token").write_text("sa-token\n")
    (tmp_path / "ca.crt").write_text("")
    return tmp_path


ENV = {"RECLAIM_PROMETHEUS_URL": "http://prom:9090", "RECLAIM_SCHEDULER": "kueue", "RECLAIM_NAMESPACES": "b, a,,a",
       "KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def test_settings_default_to_a_dry_run(service_account):
    settings = job.Settings.from_env(ENV, str(service_account))
    assert (settings.api_url, settings.token, settings.dry_run, settings.alert) == (
        "https://10.0.0.1:443", "sa-token", True, "GPUIdleAllocated")
    assert settings.ca_file == str(service_account / "ca.crt")
    assert settings.namespaces == ("a", "b")
    assert job.Settings.from_env({**ENV, "RECLAIM_NAMESPACES": ""}, str(service_account)).namespaces == ()
    for value, dry in (("false", False), (" False ", False), ("true", True), ("no", True), ("", True)):
        assert job.Settings.from_env({**ENV, "RECLAIM_DRY_RUN": value}, str(service_account)).dry_run is dry
    assert job.Settings.from_env({**ENV, "KUBERNETES_SERVICE_HOST": "fd00::1"},
                                 str(service_account)).api_url == "https://[fd00::1]:443"


@pytest.mark.parametrize("env, message", [
    ({k: v for k, v in ENV.items() if k != "RECLAIM_PROMETHEUS_URL"}, "missing environment: RECLAIM_PROMETHEUS_URL"),
    ({**ENV, "RECLAIM_SCHEDULER": "slurm"}, "RECLAIM_SCHEDULER='slurm'; allowed: kueue, volcano"),
])
def test_bad_settings_are_explained(service_account, env, message):
    with pytest.raises(job.ReclaimError, match=message):
        job.Settings.from_env(env, str(service_account))


def test_missing_service_account_token(tmp_path):
    with pytest.raises(job.ReclaimError, match="cannot read the ServiceAccount token"):
        job.Settings.from_env(ENV, str(tmp_path / "nowhere"))


def test_the_script_runs_alone_with_the_standard_library():
    """As the CronJob runs it (`python3 -I job.py`), outside a cluster: a clear message and exit code 2."""
    result = subprocess.run([sys.executable, "-I", str(SCRIPT)], capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2
    assert result.stderr.strip() == ("gpu-reclaimer: missing environment: RECLAIM_PROMETHEUS_URL, RECLAIM_SCHEDULER, "
                                     "RECLAIM_NAMESPACES, KUBERNETES_SERVICE_HOST")


# --- the pod the alert is about, honest reports, malformed answers ---------------------------------------------


def test_a_re_created_pod_with_the_same_name_is_never_touched():
    """The alert fired for train-0 uid-old; train-0 now is another pod (uid-p0), so neither it nor its Workload is
    reclaimed, dry run or not."""
    for dry_run in (True, False):
        code, out, err, _, api = run({("GET", "/api/v1/query"): (200, alerts(("research", "train-0", "uid-old")))},
                                     kueue_cluster(), dry_run=dry_run)
        assert (code, err) == (0, "")
        assert api.writes() == []
        assert ("pod research/train-0 is not the pod the alert is about (uid uid-p0, alert for uid-old: re-created "
                "since); left alone") in out.splitlines()
        assert [r["path"] for r in api.requests] == ["/api/v1/namespaces/research/pods/train-0"]


def test_an_alert_without_a_pod_uid_is_never_acted_on():
    code, out, _, _, api = run({("GET", "/api/v1/query"): (200, alerts(("research", "train-0", "")))},
                               kueue_cluster(), dry_run=False)
    assert code == 0 and api.requests == []
    assert "alert for pod research/train-0 names no pod uid; left alone" in out.splitlines()


def test_namespaces_outside_reclaim_namespaces_are_never_read():
    routes = kueue_cluster()
    code, out, _, _, api = run({("GET", "/api/v1/query"): (200, alerts(("applied", "hoard-0", "uid-h"),
                                                                       ("kube-system", "x", "uid-x")))},
                               routes, dry_run=False)
    assert code == 0 and api.requests == []
    assert "2 idle pod(s) in namespaces whose team did not opt in: ignored" in out


def test_an_event_failing_after_the_reclaim_is_reported_as_done_and_fails_the_run():
    routes = kueue_cluster()
    routes[("POST", "/api/v1/namespaces/research/events")] = (403, {"kind": "Status", "code": 403})
    code, out, err, _, api = run({("GET", "/api/v1/query"): (200, alerts(*IDLE))}, routes, dry_run=False)
    assert code == 1
    # Every reclaim still happened and is said to have happened; each missing Event is named.
    assert [r["method"] for r in api.writes()] == ["PATCH", "POST"] * 3
    assert "deactivated Kueue Workload research/job-train-1a2b3 (idle pods: train-0, train-1)" in out.splitlines()
    assert out.splitlines()[-1] == "3 reclaim(s) done, 3 without an Event"
    assert err.count("but could not record its Event: ") == 3 and "HTTP 403" in err
    assert "gpu-reclaimer: deactivated research/jobset-js-4c5d6 but could not record its Event" in err
    assert "stopped after" not in err


def _malformed(routes: dict, key: tuple[str, str], answer) -> dict:
    routes = dict(routes)
    routes[key] = (200, answer)
    return routes


TRAIN_0 = ("GET", "/api/v1/namespaces/research/pods/train-0")


@pytest.mark.parametrize("key, answer", [
    (TRAIN_0, ["a", "list"]),
    (TRAIN_0, {"metadata": {"name": "train-0"}}),  # no uid
    (TRAIN_0, {"metadata": {"name": "train-0", "uid": "uid-p0", "ownerReferences": "batch/v1 Job train"}}),
    (TRAIN_0, {"metadata": {"name": "train-0", "uid": "uid-p0", "ownerReferences": [{"kind": "Job"}]}}),
    (("GET", WORKLOADS), {"items": {"job-train": {}}}),
    (("GET", WORKLOADS), {"items": [{"metadata": {"uid": "no-name"}}]}),
    (("GET", "/apis/batch/v1/namespaces/research/jobs/train"), "not an object"),
], ids=["pod-is-a-list", "pod-without-uid", "owners-a-string", "owner-without-uid", "items-a-map",
        "workload-without-name", "job-a-string"])
def test_a_malformed_api_answer_changes_nothing_and_fails_without_a_traceback(key, answer):
    routes = _malformed(kueue_cluster(), key, answer)
    code, out, err, _, api = run({("GET", "/api/v1/query"): (200, alerts(("research", "train-0", "uid-p0")))},
                                 routes, dry_run=False)
    assert code == 1
    assert err.startswith("gpu-reclaimer: nothing changed: unexpected answer")
    assert "Traceback" not in err and api.writes() == []


@pytest.mark.parametrize("answer", [
    {"status": "success", "data": {"result": "none"}},
    {"status": "success", "data": {"result": [1, 2]}},
])
def test_a_malformed_prometheus_answer_changes_nothing(answer):
    code, _, err, _, api = run({("GET", "/api/v1/query"): (200, answer)}, kueue_cluster(), dry_run=False)
    assert code == 1 and err.startswith("gpu-reclaimer: nothing changed: unexpected answer")
    assert api.requests == []


def test_a_malformed_volcano_job_changes_nothing():
    routes = volcano_cluster("Running")
    routes[("GET", "/apis/batch.volcano.sh/v1alpha1/namespaces/alpha/jobs/train")] = (200, {"status": "odd"})
    prom = {("GET", "/api/v1/query"): (200, alerts(("alpha", "train-worker-0", "uid-w0")))}
    code, _, err, _, api = run(prom, routes, scheduler="volcano", dry_run=False)
    assert code == 1 and "unexpected answer: no metadata.name" in err and api.writes() == []
