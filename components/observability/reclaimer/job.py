"""gpu-reclaimer: take idle allocated GPUs back from teams that opted in, through their own scheduler.

Standard library only: the platform mounts this file from a ConfigMap into a pinned public Python image and runs it
as a CronJob. One run:

1. asks Prometheus which pods hold GPUs idle past the threshold: the firing `GPUIdleAllocated` alerts;
2. keeps the pods whose namespace carries `gpu-platform.io/reclaim=enabled` (set from `teams[].reclaim`);
3. maps each pod to what its scheduler admitted: the Kueue Workload owning the pod or its Job (ownerReferences or
   the `kueue.x-k8s.io/job-uid` label), or the Volcano Job owning the pod;
4. unless dry-run, deactivates the Workload (`spec.active: false`: Kueue evicts it and suspends its job until the
   owner sets it active again) or aborts the Volcano Job (a bus.volcano.sh Command `AbortJob`, what `vcctl job
   suspend` creates), and records a Kubernetes Event on it.

Every read happens before the first write, so a Prometheus or API failure changes nothing (exit code 1); a bad
environment exits 2. Dry-run (the default) only prints what it would do.
"""
from __future__ import annotations

import json
import os
import socket
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping, TextIO

RECLAIM_LABEL = "gpu-platform.io/reclaim"
RECLAIM_ENABLED = "enabled"
ALERT = "GPUIdleAllocated"
COMPONENT = "gpu-platform-reclaimer"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
VOLCANO_JOB_API = "batch.volcano.sh/v1alpha1"
VOLCANO_BUS_API = "bus.volcano.sh/v1alpha1"
VOLCANO_DONE = ("Aborting", "Aborted", "Completing", "Completed", "Failed", "Terminating", "Terminated")
SCHEDULERS = ("kueue", "volcano")
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
TIMEOUT_S = 10


class ReclaimError(Exception):
    """Why a run stopped; the message is printed as is."""


class HttpError(ReclaimError):
    """A request the server answered with an error status."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Settings:
    """Where to look and what to do, from the CronJob's environment."""

    prometheus_url: str
    api_url: str
    scheduler: str
    dry_run: bool = True
    token: str | None = None
    ca_file: str | None = None
    alert: str = ALERT

    @classmethod
    def from_env(cls, env: Mapping[str, str], service_account: str = SERVICE_ACCOUNT) -> "Settings":
        """In-cluster settings: the API server from the service environment, the pod's ServiceAccount token."""
        missing = [k for k in ("RECLAIM_PROMETHEUS_URL", "RECLAIM_SCHEDULER", "KUBERNETES_SERVICE_HOST")
                   if not env.get(k)]
        if missing:
            raise ReclaimError(f"missing environment: {', '.join(missing)}")
        scheduler = env["RECLAIM_SCHEDULER"]
        if scheduler not in SCHEDULERS:
            raise ReclaimError(f"RECLAIM_SCHEDULER={scheduler!r}; allowed: {', '.join(SCHEDULERS)}")
        host = env["KUBERNETES_SERVICE_HOST"]
        host = f"[{host}]" if ":" in host else host
        try:
            with open(os.path.join(service_account, "token"), encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as exc:
            raise ReclaimError(f"cannot read the ServiceAccount token: {exc}") from None
        return cls(prometheus_url=env["RECLAIM_PROMETHEUS_URL"],
                   api_url=f"https://{host}:{env.get('KUBERNETES_SERVICE_PORT', '443')}",
                   scheduler=scheduler,
                   # Anything but an explicit "false" is a dry run: acting must be asked for.
                   dry_run=env.get("RECLAIM_DRY_RUN", "true").strip().lower() != "false",
                   token=token, ca_file=os.path.join(service_account, "ca.crt"),
                   alert=env.get("RECLAIM_ALERT", ALERT))


class Http:
    """JSON over HTTP(S) with urllib; every failure becomes a ReclaimError naming the request."""

    def __init__(self, base: str, token: str | None = None, ca_file: str | None = None):
        self.base = base.rstrip("/")
        self.token = token
        try:
            self.context = ssl.create_default_context(cafile=ca_file) if base.startswith("https") else None
        except (OSError, ssl.SSLError) as exc:
            raise ReclaimError(f"cannot load the CA for {base}: {exc}") from None

    def __call__(self, method: str, path: str, body: Any = None, query: Mapping[str, str] | None = None,
                 content_type: str = "application/json") -> Any:
        url = self.base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=self.context) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:300]
            raise HttpError(f"{method} {url}: HTTP {exc.code} {exc.reason}: {detail}", exc.code) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ReclaimError(f"{method} {url}: {getattr(exc, 'reason', exc)}") from None
        try:
            return json.loads(payload) if payload else {}
        except ValueError:
            raise ReclaimError(f"{method} {url}: response is not JSON: {payload[:200]!r}") from None


@dataclass
class Action:
    """One scheduler object to reclaim, and the idle pods that led to it."""

    namespace: str
    kind: str  # Workload | Job
    api_version: str
    name: str
    uid: str
    pods: list[str] = field(default_factory=list)

    @property
    def verb(self) -> str:
        return "deactivate" if self.kind == "Workload" else "abort"

    @property
    def done(self) -> str:
        return "deactivated" if self.kind == "Workload" else "aborted"

    def __str__(self) -> str:
        what = "Kueue Workload" if self.kind == "Workload" else "Volcano Job"
        return f"{what} {self.namespace}/{self.name} (idle pods: {', '.join(self.pods)})"


def idle_pods(prometheus: Http, alert: str) -> list[tuple[str, str]]:
    """(namespace, pod) of every firing idle-GPU alert."""
    answer = prometheus("GET", "/api/v1/query", query={"query": f'ALERTS{{alertname="{alert}",alertstate="firing"}}'})
    if not isinstance(answer, dict) or answer.get("status") != "success":
        raise ReclaimError(f"Prometheus query failed: {str(answer)[:300]}")
    pods = set()
    for sample in answer.get("data", {}).get("result", []):
        metric = sample.get("metric", {})
        if metric.get("namespace") and metric.get("pod"):
            pods.add((metric["namespace"], metric["pod"]))
    return sorted(pods)


def opted_in_namespaces(api: Http) -> set[str]:
    answer = api("GET", "/api/v1/namespaces", query={"labelSelector": f"{RECLAIM_LABEL}={RECLAIM_ENABLED}"})
    return {item["metadata"]["name"] for item in answer.get("items", [])}


def _get_or_none(api: Http, path: str) -> dict[str, Any] | None:
    """The object, or None when it is gone (404): a pod may finish between the query and the lookup."""
    try:
        return api("GET", path)
    except HttpError as exc:
        if exc.status == 404:
            return None
        raise


def _owner_uids(api: Http, namespace: str, pod: dict[str, Any]) -> set[str]:
    """UIDs a Kueue Workload may be owned by: the pod (plain pods), its owner, and the owner of a batch Job (JobSet)."""
    uids = {pod["metadata"]["uid"]}
    for ref in pod["metadata"].get("ownerReferences", []):
        uids.add(ref["uid"])
        if ref.get("apiVersion") == "batch/v1" and ref.get("kind") == "Job":
            job = _get_or_none(api, f"/apis/batch/v1/namespaces/{namespace}/jobs/{ref['name']}")
            uids.update(r["uid"] for r in (job or {}).get("metadata", {}).get("ownerReferences", []))
    return uids


def _kueue_target(api: Http, namespace: str, pod: dict[str, Any], workloads: list[dict[str, Any]]) -> Action | str:
    uids = _owner_uids(api, namespace, pod)
    for workload in workloads:
        meta = workload["metadata"]
        owners = {r["uid"] for r in meta.get("ownerReferences", [])} | {meta.get("labels", {}).get(JOB_UID_LABEL)}
        if owners & uids:
            if workload.get("spec", {}).get("active") is False:
                return f"Workload {namespace}/{meta['name']} is already inactive"
            return Action(namespace, "Workload", KUEUE_API, meta["name"], meta["uid"])
    return f"pod {namespace}/{pod['metadata']['name']} belongs to no Kueue Workload; left alone"


def _volcano_target(api: Http, namespace: str, pod: dict[str, Any]) -> Action | str:
    for ref in pod["metadata"].get("ownerReferences", []):
        if ref.get("apiVersion", "").startswith("batch.volcano.sh/") and ref.get("kind") == "Job":
            job = _get_or_none(api, f"/apis/{VOLCANO_JOB_API}/namespaces/{namespace}/jobs/{ref['name']}")
            if job is None:
                return f"Volcano Job {namespace}/{ref['name']} is gone"
            phase = job.get("status", {}).get("state", {}).get("phase", "")
            if phase in VOLCANO_DONE:
                return f"Volcano Job {namespace}/{ref['name']} is already {phase}"
            return Action(namespace, "Job", VOLCANO_JOB_API, job["metadata"]["name"], job["metadata"]["uid"])
    return f"pod {namespace}/{pod['metadata']['name']} belongs to no Volcano Job; left alone"


def plan(settings: Settings, prometheus: Http, api: Http) -> tuple[list[Action], list[str]]:
    """What to reclaim, using reads only; also notes on idle pods that are left alone and why."""
    pods = idle_pods(prometheus, settings.alert)
    allowed = opted_in_namespaces(api)
    mine = [(namespace, name) for namespace, name in pods if namespace in allowed]
    notes = []
    if len(mine) < len(pods):
        notes.append(f"{len(pods) - len(mine)} idle pod(s) in namespaces without {RECLAIM_LABEL}={RECLAIM_ENABLED}: "
                     "ignored")
    actions: dict[tuple[str, str], Action] = {}
    workloads: dict[str, list[dict[str, Any]]] = {}
    for namespace, name in mine:
        pod = _get_or_none(api, f"/api/v1/namespaces/{namespace}/pods/{name}")
        if pod is None:
            notes.append(f"pod {namespace}/{name} is gone")
            continue
        if settings.scheduler == "kueue":
            if namespace not in workloads:
                workloads[namespace] = api("GET", f"/apis/{KUEUE_API}/namespaces/{namespace}/workloads").get("items", [])
            target = _kueue_target(api, namespace, pod, workloads[namespace])
        else:
            target = _volcano_target(api, namespace, pod)
        if isinstance(target, str):
            notes.append(target)
            continue
        actions.setdefault((namespace, target.uid), target).pods.append(name)
    return list(actions.values()), notes


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _event(settings: Settings, action: Action) -> dict[str, Any]:
    if action.kind == "Workload":
        undo = (f"kubectl -n {action.namespace} patch workloads.kueue.x-k8s.io {action.name} --type merge "
                "-p '{\"spec\":{\"active\":true}}'")
    else:
        undo = f"vcctl job resume -n {action.namespace} -N {action.name}"
    message = (f"gpu-platform reclaimer: {action.done} because pod(s) {', '.join(action.pods)} held GPUs idle past "
               f"the threshold ({settings.alert}). Its GPUs return to the queue; to run it again: {undo}")
    now = _now()
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{action.name}.", "namespace": action.namespace},
        "involvedObject": {"apiVersion": action.api_version, "kind": action.kind, "name": action.name,
                           "namespace": action.namespace, "uid": action.uid},
        "reason": "IdleGPUsReclaimed", "type": "Warning", "action": action.verb.capitalize(),
        "message": message[:1024],
        "source": {"component": COMPONENT}, "reportingComponent": COMPONENT, "reportingInstance": socket.gethostname(),
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
    }


def act(settings: Settings, api: Http, action: Action) -> None:
    """Reclaim through the scheduler, then record what was done on the object itself."""
    ns = action.namespace
    if action.kind == "Workload":
        api("PATCH", f"/apis/{KUEUE_API}/namespaces/{ns}/workloads/{action.name}", {"spec": {"active": False}},
            content_type="application/merge-patch+json")
    else:
        owner = {"apiVersion": VOLCANO_JOB_API, "kind": "Job", "name": action.name, "uid": action.uid,
                 "controller": True}
        api("POST", f"/apis/{VOLCANO_BUS_API}/namespaces/{ns}/commands", {
            "apiVersion": VOLCANO_BUS_API, "kind": "Command",
            "metadata": {"generateName": f"{action.name}-abortjob-", "namespace": ns, "ownerReferences": [owner]},
            "action": "AbortJob", "target": owner,
        })
    api("POST", f"/api/v1/namespaces/{ns}/events", _event(settings, action))


def run(settings: Settings, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """One reclaim pass; returns the process exit code."""
    try:
        prometheus = Http(settings.prometheus_url)
        api = Http(settings.api_url, settings.token, settings.ca_file)
        actions, notes = plan(settings, prometheus, api)
    except ReclaimError as exc:
        print(f"gpu-reclaimer: nothing changed: {exc}", file=err)
        return 1
    for note in notes:
        print(note, file=out)
    if settings.dry_run:
        for action in actions:
            print(f"dry run: would {action.verb} {action}", file=out)
        print(f"dry run: {len(actions)} reclaim(s) planned, nothing changed", file=out)
        return 0
    for done, action in enumerate(actions):
        try:
            act(settings, api, action)
        except ReclaimError as exc:
            print(f"gpu-reclaimer: stopped after {done} of {len(actions)} reclaim(s): {exc}", file=err)
            return 1
        print(f"{action.done} {action}", file=out)
    print(f"{len(actions)} reclaim(s) done", file=out)
    return 0


def main(env: Mapping[str, str] | None = None) -> int:
    try:
        settings = Settings.from_env(os.environ if env is None else env)
    except ReclaimError as exc:
        print(f"gpu-reclaimer: {exc}", file=sys.stderr)
        return 2
    return run(settings)


if __name__ == "__main__":
    sys.exit(main())
