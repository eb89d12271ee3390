"""gpu-reclaimer: take idle allocated GPUs back from teams that opted in, through their own scheduler.

Standard library only: the platform mounts this file from a ConfigMap into a pinned public Python image and runs it
as a CronJob. One run:

1. asks Prometheus which pods hold GPUs idle past the threshold: the firing `GPUIdleAllocated` alerts, each
   naming the pod's UID;
2. keeps the pods in `RECLAIM_NAMESPACES` (the teams with `teams[].reclaim`, the only namespaces its RoleBindings
   exist in), and of those only the pod the alert is about: a pod re-created under the same name has another UID
   and is never touched;
3. maps each pod to what its scheduler admitted: the Kueue Workload owning the pod or its Job (ownerReferences or
   the `kueue.x-k8s.io/job-uid` label), or the Volcano Job owning the pod;
4. unless dry-run, deactivates the Workload (`spec.active: false`, with its UID as a precondition: Kueue evicts it
   and suspends its job until the owner sets it active again) or aborts the Volcano Job (a bus.volcano.sh Command
   `AbortJob`, what `vcctl job suspend` creates), and records a Kubernetes Event on it saying how to undo it.

Every read happens before the first write, so a Prometheus or API failure changes nothing (exit code 1); a bad
environment exits 2. A reclaim whose Event could not be recorded is reported as done, with the Event's failure
(exit code 1). An API answer of an unexpected shape stops the run with a message, never a traceback. Dry-run (the
default) only prints what it would do.
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
    namespaces: tuple[str, ...] = ()
    dry_run: bool = True
    token: str | None = None
    ca_file: str | None = None
    alert: str = ALERT

    @classmethod
    def from_env(cls, env: Mapping[str, str], service_account: str = SERVICE_ACCOUNT) -> "Settings":
        """In-cluster settings: the API server from the service environment, the pod's ServiceAccount token."""
        # RECLAIM_NAMESPACES must be set but may be empty: no team opted in, so the run acts nowhere.
        optional_value = {"RECLAIM_NAMESPACES"}
        missing = [k for k in ("RECLAIM_PROMETHEUS_URL", "RECLAIM_SCHEDULER", "RECLAIM_NAMESPACES",
                               "KUBERNETES_SERVICE_HOST") if not env.get(k) and not (k in optional_value and k in env)]
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
                   namespaces=tuple(sorted({n.strip() for n in env["RECLAIM_NAMESPACES"].split(",") if n.strip()})),
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


class MalformedAnswer(ReclaimError):
    """An API or Prometheus answer without the fields every such object has."""


def _text(obj: Any, *path: str) -> str:
    """The string at `path` in a JSON answer, or MalformedAnswer naming what is missing."""
    value = obj
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    if not isinstance(value, str) or not value:
        raise MalformedAnswer(f"unexpected answer: no {'.'.join(path)} in {str(obj)[:200]}")
    return value


def _objects(obj: Any, *path: str) -> list[dict[str, Any]]:
    """The list of objects at `path` (missing or null: empty), or MalformedAnswer when it is anything else."""
    value = obj
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise MalformedAnswer(f"unexpected answer: {'.'.join(path)} is not a list of objects in {str(obj)[:200]}")
    return value


@dataclass(frozen=True)
class IdlePod:
    """One firing idle-GPU alert: the pod it is about, by name and UID."""

    namespace: str
    name: str
    uid: str


def idle_pods(prometheus: Http, alert: str) -> tuple[list[IdlePod], list[str]]:
    """Every firing idle-GPU alert that names a pod's UID; notes on those that do not (never acted on)."""
    answer = prometheus("GET", "/api/v1/query", query={"query": f'ALERTS{{alertname="{alert}",alertstate="firing"}}'})
    if not isinstance(answer, dict) or answer.get("status") != "success":
        raise ReclaimError(f"Prometheus query failed: {str(answer)[:300]}")
    pods, notes = set(), []
    for sample in _objects(answer, "data", "result"):
        metric = sample.get("metric") if isinstance(sample.get("metric"), dict) else {}
        namespace, pod, uid = (metric.get(k) for k in ("namespace", "pod", "uid"))
        if not (isinstance(namespace, str) and namespace and isinstance(pod, str) and pod):
            continue
        if not isinstance(uid, str) or not uid:
            notes.append(f"alert for pod {namespace}/{pod} names no pod uid; left alone")
            continue
        pods.add(IdlePod(namespace, pod, uid))
    return sorted(pods, key=lambda p: (p.namespace, p.name, p.uid)), notes


def _get_or_none(api: Http, path: str) -> dict[str, Any] | None:
    """The object, or None when it is gone (404): a pod may finish between the query and the lookup."""
    try:
        answer = api("GET", path)
    except HttpError as exc:
        if exc.status == 404:
            return None
        raise
    if not isinstance(answer, dict):
        raise MalformedAnswer(f"unexpected answer to GET {path}: {str(answer)[:200]}")
    return answer


def _owner_uids(api: Http, namespace: str, pod: dict[str, Any]) -> set[str]:
    """UIDs a Kueue Workload may be owned by: the pod (plain pods), its owner, and the owner of a batch Job (JobSet)."""
    uids = {_text(pod, "metadata", "uid")}
    for ref in _objects(pod, "metadata", "ownerReferences"):
        uids.add(_text(ref, "uid"))
        if ref.get("apiVersion") == "batch/v1" and ref.get("kind") == "Job":
            job = _get_or_none(api, f"/apis/batch/v1/namespaces/{namespace}/jobs/{_text(ref, 'name')}")
            uids.update(_text(r, "uid") for r in _objects(job or {}, "metadata", "ownerReferences"))
    return uids


def _kueue_target(api: Http, namespace: str, pod: dict[str, Any], workloads: list[dict[str, Any]]) -> Action | str:
    uids = _owner_uids(api, namespace, pod)
    for workload in workloads:
        name = _text(workload, "metadata", "name")
        labels = workload["metadata"].get("labels")
        owners = {_text(r, "uid") for r in _objects(workload, "metadata", "ownerReferences")}
        owners |= {labels.get(JOB_UID_LABEL)} if isinstance(labels, dict) else set()
        if owners & uids:
            spec = workload.get("spec")
            if isinstance(spec, dict) and spec.get("active") is False:
                return f"Workload {namespace}/{name} is already inactive"
            return Action(namespace, "Workload", KUEUE_API, name, _text(workload, "metadata", "uid"))
    return f"pod {namespace}/{_text(pod, 'metadata', 'name')} belongs to no Kueue Workload; left alone"


def _volcano_target(api: Http, namespace: str, pod: dict[str, Any]) -> Action | str:
    for ref in _objects(pod, "metadata", "ownerReferences"):
        if str(ref.get("apiVersion", "")).startswith("batch.volcano.sh/") and ref.get("kind") == "Job":
            name = _text(ref, "name")
            job = _get_or_none(api, f"/apis/{VOLCANO_JOB_API}/namespaces/{namespace}/jobs/{name}")
            if job is None:
                return f"Volcano Job {namespace}/{name} is gone"
            status = job.get("status") if isinstance(job.get("status"), dict) else {}
            state = status.get("state") if isinstance(status.get("state"), dict) else {}
            phase = state.get("phase", "")
            if phase in VOLCANO_DONE:
                return f"Volcano Job {namespace}/{name} is already {phase}"
            return Action(namespace, "Job", VOLCANO_JOB_API, _text(job, "metadata", "name"),
                          _text(job, "metadata", "uid"))
    return f"pod {namespace}/{_text(pod, 'metadata', 'name')} belongs to no Volcano Job; left alone"


def plan(settings: Settings, prometheus: Http, api: Http) -> tuple[list[Action], list[str]]:
    """What to reclaim, using reads only; also notes on idle pods that are left alone and why."""
    pods, notes = idle_pods(prometheus, settings.alert)
    allowed = set(settings.namespaces)
    mine = [p for p in pods if p.namespace in allowed]
    if len(mine) < len(pods):
        notes.append(f"{len(pods) - len(mine)} idle pod(s) in namespaces whose team did not opt in: ignored")
    actions: dict[tuple[str, str], Action] = {}
    workloads: dict[str, list[Any]] = {}
    for idle in mine:
        namespace, name = idle.namespace, idle.name
        if (pod := _get_or_none(api, f"/api/v1/namespaces/{namespace}/pods/{name}")) is None:
            notes.append(f"pod {namespace}/{name} is gone")
            continue
        if (uid := _text(pod, "metadata", "uid")) != idle.uid:
            notes.append(f"pod {namespace}/{name} is not the pod the alert is about (uid {uid}, alert for "
                         f"{idle.uid}: re-created since); left alone")
            continue
        if settings.scheduler == "kueue":
            if namespace not in workloads:
                workloads[namespace] = _objects(api("GET", f"/apis/{KUEUE_API}/namespaces/{namespace}/workloads"),
                                             "items")
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
               f"the threshold ({settings.alert}). Its GPUs return to the queue; to run it again: {undo} . To stop "
               "reclaims for this team, set teams[].reclaim: false in the platform's stack config.")
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


def reclaim(api: Http, action: Action) -> None:
    """Reclaim through the scheduler; the Workload patch carries its UID, so a re-created namesake is refused."""
    ns = action.namespace
    if action.kind == "Workload":
        api("PATCH", f"/apis/{KUEUE_API}/namespaces/{ns}/workloads/{action.name}",
            {"metadata": {"uid": action.uid}, "spec": {"active": False}}, content_type="application/merge-patch+json")
    else:
        owner = {"apiVersion": VOLCANO_JOB_API, "kind": "Job", "name": action.name, "uid": action.uid,
                 "controller": True}
        api("POST", f"/apis/{VOLCANO_BUS_API}/namespaces/{ns}/commands", {
            "apiVersion": VOLCANO_BUS_API, "kind": "Command",
            "metadata": {"generateName": f"{action.name}-abortjob-", "namespace": ns, "ownerReferences": [owner]},
            "action": "AbortJob", "target": owner,
        })


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
    unrecorded = 0
    for done, action in enumerate(actions):
        try:
            reclaim(api, action)
        except ReclaimError as exc:
            print(f"gpu-reclaimer: stopped after {done} of {len(actions)} reclaim(s): {exc}", file=err)
            return 1
        print(f"{action.done} {action}", file=out)
        # The reclaim happened whatever becomes of its Event: say so, and keep going.
        try:
            api("POST", f"/api/v1/namespaces/{action.namespace}/events", _event(settings, action))
        except ReclaimError as exc:
            unrecorded += 1
            print(f"gpu-reclaimer: {action.done} {action.namespace}/{action.name} but could not record its Event: "
                  f"{exc}", file=err)
    print(f"{len(actions)} reclaim(s) done" + (f", {unrecorded} without an Event" if unrecorded else ""), file=out)
    return 1 if unrecorded else 0


def main(env: Mapping[str, str] | None = None) -> int:
    try:
        settings = Settings.from_env(os.environ if env is None else env)
    except ReclaimError as exc:
        print(f"gpu-reclaimer: {exc}", file=sys.stderr)
        return 2
    return run(settings)


if __name__ == "__main__":
    sys.exit(main())
