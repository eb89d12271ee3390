"""A real Kubernetes control plane for the cluster tests: etcd, kube-apiserver and kube-controller-manager built
from their Go modules (tests/realparts), started on loopback ports with no kubelet, the way controller-runtime's
envtest runs one. The controller-manager is there for what the API server alone does not do: ResourceQuota usage,
ClusterRole aggregation, namespace deletion, service-account tokens, Job pods.

One etcd serves every cluster of a test session; each cluster is an API server with its own etcd prefix, so a test
module gets an empty cluster for the cost of starting an API server, not a whole control plane.
"""
from __future__ import annotations

import datetime
import ipaddress
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from support.paths import ROOT

BUILD = ROOT / "tests" / "realparts" / "build"
START_TIMEOUT = 120.0  # seconds; a cold API server on a busy 2-core machine takes well over ten


def realparts(part: str) -> Path:
    """The bin folder of a real part, built first if this machine has not built it (minutes cold, instant warm)."""
    done = subprocess.run([str(BUILD), part], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"tests/realparts/build {part} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return Path(done.stdout.split()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Pki:
    """A throwaway CA, the API server's serving certificate, an admin client certificate (system:masters) and the
    service-account signing key, written as PEM files into one folder."""
    folder: Path

    def __post_init__(self):
        now = datetime.datetime.now(datetime.timezone.utc)
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpu-platform-test-ca")])
        self.ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
                   .public_key(self.ca_key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                content_commitment=False, key_encipherment=False,
                                                data_encipherment=False, key_agreement=False,
                                                encipher_only=False, decipher_only=False), critical=True)
                   .sign(self.ca_key, hashes.SHA256()))
        self._write("ca.crt", self.ca.public_bytes(serialization.Encoding.PEM))
        self.issue("serving", "kube-apiserver", [], server=True)
        self.issue("admin", "gpu-platform-test-admin", ["system:masters"])
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._write("sa.key", sa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))
        self._write("sa.pub", sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                               serialization.PublicFormat.SubjectPublicKeyInfo))

    def path(self, name: str) -> Path:
        return self.folder / name

    def _write(self, name: str, data: bytes) -> None:
        self.path(name).write_bytes(data)

    def issue(self, name: str, common_name: str, groups: list[str], server: bool = False) -> None:
        now = datetime.datetime.now(datetime.timezone.utc)
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                             *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups)])
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(self.ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1)))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.DNSName("kubernetes.default.svc"),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        cert = builder.sign(self.ca_key, hashes.SHA256())
        self._write(f"{name}.crt", cert.public_bytes(serialization.Encoding.PEM))
        self._write(f"{name}.key", key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()))


class Process:
    """A child process with its output in a log file, stopped (and its log kept for failures) at close."""

    def __init__(self, argv: list[str], log: Path):
        self.argv, self.log = argv, log
        self._out = log.open("wb")
        self.proc = subprocess.Popen(argv, stdout=self._out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def close(self) -> None:
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()


def wait_for(what: str, ready, proc: Process, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise RuntimeError(f"{what} exited ({proc.proc.returncode}) while starting:\n{proc.tail()}")
        if ready():
            return
        time.sleep(0.25)
    raise RuntimeError(f"{what} not ready after {timeout:.0f} s:\n{proc.tail()}")


class Etcd:
    def __init__(self, bin_dir: Path, folder: Path):
        self.url = f"http://127.0.0.1:{free_port()}"
        peer = f"http://127.0.0.1:{free_port()}"
        self.process = Process([str(bin_dir / "etcd"), "--data-dir", str(folder / "etcd"),
                                "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
                                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                                "--initial-cluster", f"default={peer}",
                                # Tests throw the data away: fsync only slows them down.
                                "--unsafe-no-fsync", "--log-level", "warn"], folder / "etcd.log")
        wait_for("etcd", lambda: _http_ok(f"{self.url}/health"), self.process)

    def close(self) -> None:
        self.process.close()


def _http_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as r:
            return r.status == 200
    except OSError:
        return False


@dataclass
class Cluster:
    """An API server (plus, unless asked otherwise, a controller-manager) on its own etcd prefix."""
    bin_dir: Path
    etcd: Etcd
    folder: Path
    controllers: bool = True
    processes: list[Process] = field(default_factory=list)

    def __post_init__(self):
        self.folder.mkdir(parents=True, exist_ok=True)
        self.pki = Pki(self.folder)
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        p = self.pki.path
        apiserver = Process([
            str(self.bin_dir / "kube-apiserver"),
            "--etcd-servers", self.etcd.url, "--etcd-prefix", f"/{self.folder.name}",
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(self.port),
            "--tls-cert-file", str(p("serving.crt")), "--tls-private-key-file", str(p("serving.key")),
            "--client-ca-file", str(p("ca.crt")),
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", str(p("sa.pub")), "--service-account-signing-key-file", str(p("sa.key")),
            "--service-cluster-ip-range", "10.96.0.0/16",
            # As a managed cluster runs: RBAC, the default admission chain (Pod Security, ResourceQuota, Priority,
            # ValidatingAdmissionPolicy included), privileged pods allowed cluster-wide and refused per namespace.
            "--authorization-mode", "Node,RBAC", "--allow-privileged=true",
            "--disable-admission-plugins", "DefaultStorageClass",
        ], self.folder / "kube-apiserver.log")
        self.processes.append(apiserver)
        self.kubeconfig = self._write_kubeconfig()
        context = ssl.create_default_context(cafile=str(p("ca.crt")))
        context.load_cert_chain(str(p("admin.crt")), str(p("admin.key")))
        wait_for("kube-apiserver", lambda: _http_ok(f"{self.url}/readyz", context), apiserver)
        if self.controllers:
            manager = Process([
                str(self.bin_dir / "kube-controller-manager"), "--kubeconfig", str(self.kubeconfig),
                "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", str(free_port()),
                "--service-account-private-key-file", str(p("sa.key")), "--root-ca-file", str(p("ca.crt")),
                # Each controller as its own kube-system service account, as managed clusters run them: the queue-gate
                # policy (tenancy/queue_gate.py) tells the Job controller's pods from a team's by that identity.
                "--use-service-account-credentials=true", "--controllers", "*",
                # Quota usage is what the tests read right after creating pods: recount quickly.
                "--resource-quota-sync-period", "5s", "--concurrent-resource-quota-syncs", "2",
            ], self.folder / "kube-controller-manager.log")
            self.processes.append(manager)
            wait_for("kube-controller-manager",
                     lambda: self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False)
                     .returncode == 0, manager)

    def _write_kubeconfig(self) -> Path:
        p = self.pki.path
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": self.url, "certificate-authority": str(p("ca.crt"))}}],
            "users": [{"name": "admin", "user": {"client-certificate": str(p("admin.crt")),
                                                 "client-key": str(p("admin.key"))}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}],
        }
        path = self.folder / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        return path

    def kubeconfig_inline(self) -> str:
        """The admin kubeconfig with every file embedded, as a stack's cluster.existingKubeconfig holds it."""
        import base64
        p = self.pki.path
        b64 = lambda name: base64.b64encode(p(name).read_bytes()).decode()
        config = yaml.safe_load(self.kubeconfig.read_text())
        config["clusters"][0]["cluster"] = {"server": self.url, "certificate-authority-data": b64("ca.crt")}
        config["users"][0]["user"] = {"client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")}
        return yaml.safe_dump(config)

    def kubectl(self, *args: str, stdin: str | None = None, as_user: str | None = None,
                as_groups: tuple[str, ...] = (), check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        """kubectl as the admin, or impersonating a user and groups (how the tests act as a tenant)."""
        # Its own discovery cache: a later cluster on a reused port must not read this one's API list.
        argv = [str(self.bin_dir / "kubectl"), "--kubeconfig", str(self.kubeconfig),
                "--cache-dir", str(self.folder / "kubectl-cache")]
        if as_user:
            argv += ["--as", as_user, *(f"--as-group={g}" for g in as_groups)]
        done = subprocess.run([*argv, *args], input=stdin, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stderr}{done.stdout}")
        return done

    def apply(self, objects: list[dict], namespace: str | None = None, **kw) -> subprocess.CompletedProcess:
        """Server-side apply with strict field validation: an unknown or duplicate field is an error. `namespace`
        is where namespaced objects without one go (as Helm installs a chart's objects in the release namespace)."""
        stream = yaml.safe_dump_all(objects, sort_keys=False)
        where = ["--namespace", namespace] if namespace else []
        return self.kubectl("apply", "--server-side", "--field-manager", "gpu-platform-tests",
                            "--validate=strict", *where, "-f", "-", stdin=stream, **kw)

    def get(self, *args: str) -> dict:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def close(self) -> None:
        for proc in reversed(self.processes):
            proc.close()


class ControlPlane:
    """The session's etcd and the clusters started on it. `cluster()` gives a fresh, empty cluster."""

    def __init__(self):
        self.bin_dir = realparts("controlplane")
        self.folder = Path(tempfile.mkdtemp(prefix="gpu-platform-cluster-"))
        self.etcd = Etcd(self.bin_dir, self.folder)
        self.clusters: list[Cluster] = []

    def cluster(self, name: str, controllers: bool = True) -> Cluster:
        safe = "".join(c if c.isalnum() else "-" for c in name)[:40]
        cluster = Cluster(self.bin_dir, self.etcd, self.folder / f"{len(self.clusters)}-{safe}", controllers)
        self.clusters.append(cluster)
        return cluster

    def close(self) -> None:
        for cluster in self.clusters:
            cluster.close()
        self.etcd.close()
        if not os.environ.get("GPU_PLATFORM_KEEP_CLUSTER_LOGS"):
            shutil.rmtree(self.folder, ignore_errors=True)
