"""The real Kueue (v0.19.2, built by tests/realparts) against a real API server (tests/support/realcluster.py), running
the manager configuration and queue objects a stack plans.

Everything Kueue is given comes from the offline plan: the chart is rendered by `helm template` with the planned
release's values, so the CRDs, the webhook configurations and the manager `Configuration` are the ones `pulumi up`
would install. Only what a local process needs is overridden (`local_overrides` says why, field by field). The
webhooks are served by the local process and reached by URL, the way Kueue's own integration tests run it.
"""
from __future__ import annotations

import base64
import json
import math
import shutil
import ssl
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from support.helm import Helm, chart_package
from support.realcluster import Cluster, Process, _http_ok, free_port, realparts, wait_for

RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_POOL = "gpu-platform:cluster:GpuNodePool"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
# The queue objects a stack plans, applied in this order (a ClusterQueue names its flavors and cohort).
QUEUE_KINDS = ("Namespace", "WorkloadPriorityClass", "PriorityClass", "Topology", "ResourceFlavor", "Cohort",
               "ClusterQueue", "LocalQueue")
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
METRICS_CERTS = Path("/etc/kueue/metrics/certs")
READY_TIMEOUT = 180.0  # seconds; Kueue's first cache sync on a busy 2-core machine


def integral(value: Any) -> Any:
    """The plan's numbers as Kubernetes wants them: Pulumi carries every number as a float (8.0), and an int32
    field such as a WorkloadPriorityClass `value` refuses 1000000.0 where it takes 1000000."""
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def planned_objects(plan: dict, kinds: Iterable[str] = QUEUE_KINDS) -> list[dict]:
    """The plan's Kubernetes objects of these kinds, in the order of `kinds`."""
    order = {k: i for i, k in enumerate(kinds)}
    objects = [integral(r["inputs"]) for r in plan["resources"]
               if r["type"].startswith("kubernetes:") and (r.get("inputs") or {}).get("kind") in order]
    return sorted(objects, key=lambda o: order[o["kind"]])


def kueue_release(plan: dict) -> dict:
    """The planned Kueue Helm release's inputs (chart, version, namespace, values)."""
    return next(r["inputs"] for r in plan["resources"]
                if r["type"] == RELEASE and r["inputs"].get("name") == "kueue")


def node_pools(plan: dict) -> list[dict]:
    return [integral(r["inputs"]) for r in plan["resources"] if r["type"] == NODE_POOL]


def nodes_for(pool: dict, count: int | None = None) -> list[tuple[dict, dict]]:
    """(Node object, status patch) per node of a planned pool: its labels, taints, and what each node advertises
    (whole GPUs, MIG slices or shared replicas) next to a p5-sized CPU and memory."""
    count = count if count is not None else pool["maxNodes"]
    per_node = {name: str(units) for name, units in pool["advertised"].items()}
    resources = {"cpu": "192", "memory": "2048Gi", "pods": "110", **per_node}
    result = []
    for i in range(count):
        name = f"{pool['poolName']}-{i}"
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {**pool["labels"], "kubernetes.io/hostname": name}},
                "spec": {"taints": [{k: t[k] for k in ("key", "value", "effect") if t.get(k)} for t in pool["taints"]]}}
        status = {"status": {"capacity": resources, "allocatable": resources,
                             "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                             "message": "stand-in node: no kubelet"}]}}
        result.append((node, status))
    return result


def create_nodes(cluster: Cluster, plan: dict) -> list[str]:
    """Node objects shaped like every planned pool at its maximum size; status set through its subresource, as a
    kubelet would."""
    names = []
    for pool in node_pools(plan):
        for node, status in nodes_for(pool):
            cluster.kubectl("create", "-f", "-", stdin=json.dumps(node))
            cluster.kubectl("patch", "node", node["metadata"]["name"], "--subresource=status", "--type=merge",
                            "-p", json.dumps(status))
            names.append(node["metadata"]["name"])
    return names


def rewrite_client_config(client_config: dict, port: int, ca_bundle: str) -> dict:
    """A chart webhook's service reference as a URL on the local Kueue: no Service or Pod runs here."""
    path = client_config.get("service", {}).get("path", "/")
    return {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}


def local_overrides(config: dict, folder: Path, webhook_port: int) -> dict:
    """The planned manager Configuration with only what a local process must change."""
    conf = json.loads(json.dumps(config))
    # One process and no other replica: a Lease would only delay the start by its acquisition.
    conf["leaderElection"] = {**conf.get("leaderElection", {}), "leaderElect": False}
    # Internal cert management writes the serving cert into a Secret and patches the webhook configurations for the
    # in-cluster Service; here the cert comes from the cluster's CA and the configurations point at a URL instead.
    conf["internalCertManagement"] = {"enable": False}
    # Loopback on a free port: the API server calls it by URL, and parallel clusters must not collide on 9443.
    conf["webhook"] = {**conf.get("webhook", {}), "host": "127.0.0.1", "port": webhook_port,
                       "certDir": str(folder / "webhook-certs")}
    # Fixed ports (:8081, :8443) on every interface would collide with other clusters and helpers on this machine.
    conf["health"] = {**conf.get("health", {}), "healthProbeBindAddress": f"127.0.0.1:{free_port()}"}
    conf["metrics"] = {**conf.get("metrics", {}), "bindAddress": f"127.0.0.1:{free_port()}"}
    return conf


class RealKueue:
    """Kueue's CRDs and webhooks installed from the rendered chart, and its manager running locally on the
    planned configuration. `config` is the Configuration it runs; `planned_config` the one the chart renders."""

    def __init__(self, cluster: Cluster, plan: dict, helm: Helm):
        self.cluster = cluster
        release = kueue_release(plan)
        rendered = helm.template(chart_package(release["chart"], release["version"]), release["name"],
                                 release["namespace"], release["values"])
        by_kind: dict[str, list[dict]] = {}
        for doc in rendered:
            by_kind.setdefault(doc["kind"], []).append(doc)
        config_map = next(c for c in by_kind["ConfigMap"] if "controller_manager_config.yaml" in c.get("data", {}))
        self.planned_config = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])
        self.folder = cluster.folder / "kueue"
        certs = self.folder / "webhook-certs"
        cluster.pki.issue("kueue-webhook", "kueue-webhook-service", [], server=True)
        # Without internal cert management Kueue also reads its metrics serving cert from a fixed path
        # (cmd/kueue/main.go: /etc/kueue/metrics/certs), and exits if it is missing. Nothing here scrapes metrics:
        # any valid pair will do, so the webhook's is copied there too.
        for folder in (certs, METRICS_CERTS):
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copy(cluster.pki.path("kueue-webhook.crt"), folder / "tls.crt")
            shutil.copy(cluster.pki.path("kueue-webhook.key"), folder / "tls.key")
        self.port = free_port()
        self._context = ssl.create_default_context(cafile=str(cluster.pki.path("ca.crt")))
        self._context.load_cert_chain(str(cluster.pki.path("admin.crt")), str(cluster.pki.path("admin.key")))
        self.config = local_overrides(self.planned_config, self.folder, self.port)
        ca_bundle = base64.b64encode(cluster.pki.path("ca.crt").read_bytes()).decode()

        cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": release["namespace"]}}])
        crds = by_kind["CustomResourceDefinition"]
        for crd in crds:
            webhook = crd["spec"].get("conversion", {}).get("webhook")
            if webhook:
                webhook["clientConfig"] = rewrite_client_config(webhook["clientConfig"], self.port, ca_bundle)
        cluster.apply(crds)
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                        *(f"crd/{c['metadata']['name']}" for c in crds))

        config_file = self.folder / "controller_manager_config.yaml"
        config_file.write_text(yaml.safe_dump(self.config, sort_keys=False))
        binary = realparts("controlplane") / "kueue"
        self.process = Process([
            str(binary), f"--config={config_file}", f"--kubeconfig={cluster.kubeconfig}", "--zap-log-level=2",
            # The visibility API (pending workloads, an aggregated APIService) serves from a fixed /visibility cert
            # folder and port; nothing here reads it.
            "--feature-gates=VisibilityOnDemand=false",
        ], self.folder / "kueue.log")
        cluster.processes.append(self.process)

        webhooks = [w for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
                    for w in by_kind.get(kind, [])]
        for configuration in webhooks:
            for hook in configuration["webhooks"]:
                hook["clientConfig"] = rewrite_client_config(hook["clientConfig"], self.port, ca_bundle)
        cluster.apply(webhooks)
        health = self.config["health"]["healthProbeBindAddress"]
        wait_for("kueue", lambda: _http_ok(f"http://{health}/readyz"), self.process, timeout=READY_TIMEOUT)
        # Ready means the webhook server is up; a ClusterQueue dry-run proves the API server reaches it by URL.
        self._wait_webhook()

    def _wait_webhook(self) -> None:
        probe = {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "webhook-probe"}}
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            done = self.cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(probe), check=False)
            if done.returncode == 0:
                return
            if time.monotonic() > deadline or not self.process.alive():
                raise RuntimeError(f"Kueue's webhooks never answered: {done.stderr}\n{self.process.tail()}")
            time.sleep(0.5)

    def api(self, method: str, path: str, body: dict | None = None) -> dict:
        """One API request without kubectl: a kubectl process costs a few hundred milliseconds on this machine, which
        the trace replay would count as Kueue's latency."""
        request = urllib.request.Request(self.cluster.url + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=self._context, timeout=30) as response:
            return json.loads(response.read())

    def log(self, lines: int = 60) -> str:
        return self.process.tail(lines)


def job(namespace: str, name: str, units: int, pods: int = 1, resource: str = "nvidia.com/gpu",
        pool: str | None = None, priority: str | None = None, queue: str = "default") -> dict:
    """A suspended Job of `pods` pods of `units` GPU units each, submitted to a LocalQueue. `pool` pins it to one
    GPU pool by node label, so Kueue assigns that pool's flavor whatever the ClusterQueue's flavor order."""
    labels = {QUEUE_NAME_LABEL: queue}
    if priority:
        labels[PRIORITY_LABEL] = priority
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {resource: str(units)}, "limits": {resource: str(units)}}}],
    }
    if pool:
        pod_spec["nodeSelector"] = {"gpu-platform.io/pool": pool}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"suspend": True, "parallelism": pods, "completions": pods, "backoffLimit": 0,
                     "template": {"spec": pod_spec}}}


def workloads(cluster: Cluster, namespace: str | None = None) -> dict[tuple[str, str], dict]:
    """Workloads by (namespace, owning Job name)."""
    scope = ["-n", namespace] if namespace else ["-A"]
    items = cluster.get("workloads.kueue.x-k8s.io", *scope)["items"]
    return {(w["metadata"]["namespace"], owner["name"]): w for w in items
            for owner in w["metadata"].get("ownerReferences", []) if owner["kind"] == "Job"}


def condition(workload: dict, kind: str) -> dict | None:
    return next((c for c in workload.get("status", {}).get("conditions", []) if c["type"] == kind), None)


def is_true(workload: dict | None, kind: str) -> bool:
    found = condition(workload, kind) if workload else None
    return bool(found) and found["status"] == "True"


def admitted_units(workload: dict) -> dict[tuple[str, str], int]:
    """(flavor, resource) -> units the workload's admission assigned, over all its pod sets."""
    total: dict[tuple[str, str], int] = {}
    for pod_set in workload["status"]["admission"]["podSetAssignments"]:
        for resource, flavor in pod_set["flavors"].items():
            units = int(pod_set["resourceUsage"][resource])
            total[(flavor, resource)] = total.get((flavor, resource), 0) + units
    return total


@dataclass
class Replayed:
    """What happened to one trace job on the real Kueue, in seconds since the replay started."""

    submitted: float | None = None
    admissions: list[float] = field(default_factory=list)
    evictions: int = 0
    finish_at: float | None = None  # when it is deleted: its latest admission plus its duration
    finished: float | None = None


def priority_classes(real: RealKueue, trace: list) -> dict[int, str]:
    """A WorkloadPriorityClass for each integer priority of the trace (the simulator reads an integer as the
    workload's priority value), created before the replay starts so no creation is counted as Kueue's latency."""
    named = sorted({str(j.priority) for j in trace if j.priority is not None and not isinstance(j.priority, int)})
    if named:  # a class name or level would need the stack's classes resolved as the simulator does: not done here
        raise ValueError(f"replay takes integer priorities only, not {', '.join(named)}")
    values = sorted({j.priority for j in trace if j.priority is not None})
    names = {v: f"replay-{v}" for v in values}
    if values:
        real.cluster.apply([{"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass",
                             "metadata": {"name": name}, "value": v} for v, name in names.items()])
    return names


def replay(real: RealKueue, plan: dict, trace: list, namespaces: dict[str, str], timeout: float,
           poll_s: float = 0.1) -> dict[str, Replayed]:
    """Run trace jobs (`TraceJob`s, times in wall-clock seconds) through the real Kueue: each is created at its
    submit time, and deleted `duration_s` after its latest admission, the way a job that runs exactly that long
    finishes. A preempted job starts over when it is admitted again, as the simulator assumes (no checkpoints).
    Admission is read from the Workloads every `poll_s`, so times are as precise as one poll plus one request."""
    per_node = {p["poolName"]: p["advertised"] for p in node_pools(plan)}
    classes = priority_classes(real, trace)
    state = {j.job_id: Replayed() for j in trace}
    by_id = {j.job_id: j for j in trace}
    pending = sorted(trace, key=lambda j: j.submit_s)
    start = time.monotonic()
    while any(r.finished is None for r in state.values()):
        now = time.monotonic() - start
        if now > timeout:
            raise AssertionError(f"replay unfinished after {timeout:.0f} s: "
                                 f"{[k for k, r in state.items() if r.finished is None]}\n{real.log()}")
        while pending and pending[0].submit_s <= now:
            tj = pending.pop(0)
            units = tj.units
            size = math.gcd(units, int(per_node[tj.pool].get("nvidia.com/gpu", units)))
            ns = namespaces[tj.team]
            real.api("POST", f"/apis/batch/v1/namespaces/{ns}/jobs",
                     job(ns, tj.job_id, size, pods=units // size, pool=tj.pool, priority=classes.get(tj.priority)))
            state[tj.job_id].submitted = time.monotonic() - start
        seen = real.api("GET", f"/apis/{KUEUE_API}/workloads")["items"]
        now = time.monotonic() - start
        for w in seen:
            owner = next((o["name"] for o in w["metadata"].get("ownerReferences", []) if o["kind"] == "Job"), None)
            r = state.get(owner)
            if r is None or r.finished is not None:
                continue
            running = r.finish_at is not None
            if is_true(w, "Admitted") and not is_true(w, "Evicted") and not running:
                r.admissions.append(now)
                r.finish_at = now + by_id[owner].duration_s
            elif running and (is_true(w, "Evicted") or not is_true(w, "Admitted")):
                r.evictions += 1
                r.finish_at = None
        for name, r in state.items():
            if r.finish_at is not None and r.finished is None and r.finish_at <= now:
                real.api("DELETE", f"/apis/batch/v1/namespaces/{namespaces[by_id[name].team]}/jobs/{name}",
                         {"propagationPolicy": "Background"})
                r.finished = now
        time.sleep(poll_s)
    return state
