"""`gpu-platform nccl-test`: a Kueue-admitted, multi-node NCCL all-reduce Job per GPU pool, valid Kubernetes, on the
pool's nodes with its fabric; bad input exits 2."""
from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from components.config.labels import pool_taints
from components.clouds import PROFILES, profile
from components.clouds.facts import DEFAULT_KUBERNETES_VERSION
from components.clouds.gcp.facts import GPUDIRECT
from gpu_platform.cli import main
from gpu_platform.engine.plan import validate_stack
from gpu_platform import nccl_manifest

from support.paths import ROOT

KUEUE_STACKS = ("aws-prod", "aws-dev", "azure-prod", "gcp-prod", "oci-prod")
# Where each cloud's test images come from: its own vendor's registry, or for AKS NVIDIA's (Microsoft publishes no
# version-tagged nccl-tests image). GKE GPUDirect's plugin images and its gIB diagnostic image share Google's.
REGISTRIES = {"aws": "public.ecr.aws/hpc-cloud/nccl-tests:", "azure": "nvcr.io/nvidia/pytorch:",
              "gcp": "us-docker.pkg.dev/gce-ai-infra/", "oci": "iad.ocir.io/idxzjcdglx2s/nccl-tests:"}


def stack_pools():
    for stack in KUEUE_STACKS:
        config = validate_stack(stack)[3]
        for pool in config.gpu_pools:
            if pool.sharing.mode == "none" and pool.max_nodes >= 2 and any(t.quotas.get(pool.name) for t in config.teams):
                yield stack, pool.name


def manifest(capsys, *argv):
    assert main(["nccl-test", *argv]) == 0
    return list(yaml.safe_load_all(capsys.readouterr().out))


def refused(capsys, *argv) -> str:
    assert main(["nccl-test", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    return captured.err


def test_every_kueue_stack_has_a_testable_pool():
    assert {stack for stack, _ in stack_pools()} == set(KUEUE_STACKS)


@pytest.mark.parametrize("stack, pool_name", list(stack_pools()))
def test_manifest_is_valid_kubernetes_on_the_pools_nodes(stack, pool_name, capsys):
    objects = manifest(capsys, stack, "--pool", pool_name, "--nodes", "2")
    assert [o["kind"] for o in objects] == ["Secret", "Service", "Job"]
    for obj in objects:
        kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)
    config = validate_stack(stack)[3]
    pool = next(p for p in config.gpu_pools if p.name == pool_name)
    team = next(t for t in config.teams if t.quotas.get(pool_name))
    secret, service, job = objects
    assert {o["metadata"]["namespace"] for o in objects} == {team.name}
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    spec = job["spec"]
    assert spec["suspend"] is True and spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 2 and spec["backoffLimit"] == 0
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"] and service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"batch.kubernetes.io/job-name": job["metadata"]["name"]}
    assert pod["nodeSelector"] == {"gpu-platform.io/pool": pool_name}
    prof = profile(config.cloud)
    assert pod["tolerations"] == [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
                                  for t in pool_taints(pool, prof)]
    container = pod["containers"][0]
    direct = GPUDIRECT.get(pool.fabric)
    image = container["image"]
    assert image.startswith(REGISTRIES[config.cloud]) and ":latest" not in image
    if direct:  # Google's installer image carries nccl-tests built against the plugin it installs
        assert image == direct.installer_image
    env = {e["name"]: e["value"] for e in container["env"]}
    expected = {"nvidia.com/gpu": str(pool.instance.gpus)}
    if pool.fabric == "efa":
        expected["vpc.amazonaws.com/efa"] = str(pool.instance.fabric_interfaces)
        assert env["FI_PROVIDER"] == "efa" and "NCCL_NET" not in env
    elif pool.fabric == "infiniband":
        expected["rdma/ib"] = str(pool.instance.fabric_interfaces)
        assert env["NCCL_NET"] == "IB" and "FI_PROVIDER" not in env
    elif direct:
        assert "NCCL_NET" not in env and env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"
    else:
        assert env["NCCL_NET"] == "Socket" and "FI_PROVIDER" not in env
    assert container["resources"]["limits"] == container["resources"]["requests"] == expected
    command = container["command"][2]
    test = nccl_manifest.test_image(config, pool)
    assert test.image == image and f"-np {2 * pool.instance.gpus} " in command and test.binary in command
    assert f"{test.mpirun} --allow-run-as-root" in command
    assert all(f"-x {name}" in command for name in env) and set(dict(test.env)) <= set(env)
    if test.setup:  # what the image leaves out is in place before sshd starts
        assert command.index(test.setup) < command.index("/usr/sbin/sshd")
    assert secret["stringData"]["authorized_keys"] == secret["stringData"]["id_ed25519.pub"]
    assert secret["stringData"]["id_ed25519"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")


def test_efa_pool_asks_for_every_interface(capsys):
    pod = manifest(capsys, "aws-prod", "--pool", "h100-train", "--nodes", "4")[2]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}


def test_spot_pool_tolerates_the_spot_taint_and_its_own():
    config = validate_stack("aws-prod", config_overrides={
        "gpu-platform:gpuPools": [{"name": "h100-spot", "instanceType": "p5.48xlarge", "maxNodes": 2,
                                   "capacityType": "spot", "taints": ["example.com/lab=yes:NoExecute"]}],
        "gpu-platform:teams": [{"name": "lab", "quotas": {"h100-spot": 16}}]})[3]
    pool, team = config.gpu_pools[0], config.teams[0]
    job = nccl_manifest.manifest(config, pool, 2, team, ("private", "public"))[2]
    tolerations = {(t["key"], t["value"], t["effect"]) for t in job["spec"]["template"]["spec"]["tolerations"]}
    assert tolerations == {("nvidia.com/gpu", "present", "NoSchedule"), ("gpu-platform.io/spot", "true", "NoSchedule"),
                           ("example.com/lab", "yes", "NoExecute")}


def test_topology_pool_prefers_its_narrowest_network_block(capsys):
    plain = manifest(capsys, "aws-prod", "--pool", "h100-train")[2]["spec"]["template"]["metadata"]
    assert "annotations" not in plain
    config = validate_stack("aws-prod", config_overrides={
        "gpu-platform:gpuPools": [{"name": "h100", "instanceType": "p5.48xlarge", "maxNodes": 4, "topology": True}],
        "gpu-platform:teams": [{"name": "lab", "quotas": {"h100": 32}}]})[3]
    job = nccl_manifest.manifest(config, config.gpu_pools[0], 2, config.teams[0], ("private", "public"))[2]
    assert job["spec"]["template"]["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-preferred-topology": "topology.k8s.aws/network-node-layer-3"}


def test_team_option_picks_namespace(capsys):
    objects = manifest(capsys, "aws-prod", "--pool", "h100-train", "--team", "applied")
    assert {o["metadata"]["namespace"] for o in objects} == {"applied"}


def test_each_run_gets_its_own_key(capsys):
    first = manifest(capsys, "aws-prod", "--pool", "h100-train")[0]["stringData"]["id_ed25519"]
    second = manifest(capsys, "aws-prod", "--pool", "h100-train")[0]["stringData"]["id_ed25519"]
    assert first != second


def test_bad_pool_lists_the_pools(capsys):
    err = refused(capsys, "aws-prod", "--pool", "nope")
    assert "--pool 'nope' is not a GPU pool" in err and "pools: h100-train, a100-infer, l4-notebooks" in err


@pytest.mark.parametrize("argv, message", [
    (("aws-prod", "--pool", "a100-infer"), "shares its GPUs (mig)"),
    (("aws-prod", "--pool", "h100-train", "--nodes", "5"), "--nodes must be 2..4"),
    (("aws-prod", "--pool", "h100-train", "--nodes", "1"), "--nodes must be 2..4"),
    (("aws-prod", "--pool", "h100-train", "--team", "serving"), "team 'serving' has no quota on pool 'h100-train'; "
                                                                 "teams with quota: research, applied"),
    (("aws-prod", "--pool", "h100-train", "--team", "ghost"), "teams: research, applied, serving"),
    (("gcp-dev", "--pool", "l4-train"), "this stack schedules with Volcano"),
])
def test_refused_with_exit_2(argv, message, capsys):
    assert message in refused(capsys, *argv)


def test_a_restricted_team_is_skipped_or_refused_its_pods_run_sshd_as_root(tmp_path, capsys):
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.aws-prod.yaml").read_text())
    stack["config"]["gpu-platform:teams"][0]["podSecurity"] = "restricted"  # research, first with h100-train quota
    path = tmp_path / "Pulumi.aws-prod.yaml"
    path.write_text(yaml.safe_dump(stack))
    objects = manifest(capsys, "--file", str(path), "--pool", "h100-train")
    assert {o["metadata"]["namespace"] for o in objects} == {"applied"}  # the next team whose level admits them
    err = refused(capsys, "--file", str(path), "--pool", "h100-train", "--team", "research")
    assert "the test's pods run sshd as root, which Pod Security restricted refuses in 'research'" in err
    assert "teams[].podSecurity: baseline" in err and "GPU014" not in err


def fabric_off(tmp_path, stack: str, pool_name: str) -> str:
    """The stack file with one pool's fabric set to none, and a team that excepted GPUDirect's sidecar at baseline."""
    raw = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    next(p for p in raw["config"]["gpu-platform:gpuPools"] if p["name"] == pool_name)["fabric"] = "none"
    for team in raw["config"]["gpu-platform:teams"]:
        if team.get("podSecurity") == "fabric-sidecar":
            team["podSecurity"] = "baseline"
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


@pytest.mark.parametrize("stack, pool_name, fabric_none, image, publisher, idle", [
    ("aws-dev", "a10g-train", False, "public.ecr.aws/hpc-cloud/nccl-tests:", "AWS's", "g5.12xlarge's efa is not attached"),
    ("oci-prod", "h100-train", False, "iad.ocir.io/idxzjcdglx2s/nccl-tests:", "Oracle's",
     "BM.GPU.H100.8's rdma is not attached"),
    ("azure-prod", "a10-spot", False, "nvcr.io/nvidia/pytorch:", "NVIDIA's NGC PyTorch image", ""),
    ("azure-prod", "h100-train", True, "nvcr.io/nvidia/pytorch:", "NVIDIA's NGC PyTorch image",
     "Standard_ND96isr_H100_v5's infiniband is not attached"),
    ("gcp-prod", "h100-train", True, "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:",
     "Google's NCCL/gIB diagnostic image", "a3-highgpu-8g's gpudirect-tcpx is not attached"),
])
def test_a_fabric_less_pool_says_it_measures_sockets_with_its_clouds_image(
        stack, pool_name, fabric_none, image, publisher, idle, capsys, tmp_path):
    where = ["--file", fabric_off(tmp_path, stack, pool_name)] if fabric_none else []
    assert main(["nccl-test", stack, *where, "--pool", pool_name]) == 0
    captured = capsys.readouterr()
    (note,) = [line for line in captured.err.splitlines() if line.startswith("note: ")]
    assert f"pool {pool_name!r} has no fabric: this test measures NCCL over TCP sockets" in note and idle in note
    (job,) = [o for o in yaml.safe_load_all(captured.out) if o["kind"] == "Job"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["image"].startswith(image) and f"image {image}" in note and publisher in note
    assert {e["name"]: e["value"] for e in container["env"]}["NCCL_NET"] == "Socket"


@pytest.mark.parametrize("stack, pool_name, fabric_none", [
    ("azure-prod", "a10-spot", False), ("azure-prod", "h100-train", True), ("gcp-prod", "h100-train", True)])
def test_aks_and_gke_pools_without_a_fabric_run_no_aws_image(stack, pool_name, fabric_none, capsys, tmp_path):
    """AWS's image bundles the EFA installer and aws-ofi-nccl, a network stack of another cloud."""
    where = ["--file", fabric_off(tmp_path, stack, pool_name)] if fabric_none else []
    assert main(["nccl-test", stack, *where, "--pool", pool_name]) == 0
    (job,) = [o for o in yaml.safe_load_all(capsys.readouterr().out) if o["kind"] == "Job"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert not any(word in container["image"] for word in ("ecr.aws", "amazonaws", "efa"))


def test_the_gke_socket_image_uses_its_own_nccl_and_the_aks_one_installs_sshd_first(capsys, tmp_path):
    assert main(["nccl-test", "gcp-prod", "--file", fabric_off(tmp_path, "gcp-prod", "h100-train"),
                 "--pool", "h100-train"]) == 0
    (job,) = [o for o in yaml.safe_load_all(capsys.readouterr().out) if o["kind"] == "Job"]
    (gke,) = job["spec"]["template"]["spec"]["containers"]
    command = gke["command"][2]
    # No installer DaemonSet serves a fabric-less pool: the image unpacks its NCCL, found before the node's driver.
    assert {e["name"]: e["value"] for e in gke["env"]}["LD_LIBRARY_PATH"] == "/var/lib/gib/lib64:/usr/local/nvidia/lib64"
    assert command.index("/scripts/container_entry.sh install --install-nccl") < command.index("/usr/sbin/sshd")
    assert "/third_party/nccl-tests/build/all_reduce_perf -b 8" in command
    assert main(["nccl-test", "azure-prod", "--pool", "a10-spot"]) == 0
    (job,) = [o for o in yaml.safe_load_all(capsys.readouterr().out) if o["kind"] == "Job"]
    command = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert command.index("apt-get install") < command.index("/usr/sbin/sshd")
    # Open MPI off sshd's PATH: mpirun by absolute path, so the remote ranks find orted under its prefix.
    assert "/usr/local/mpi/bin/mpirun --allow-run-as-root" in command
    assert "/usr/local/bin/all_reduce_perf_mpi -b 8" in command


@pytest.mark.parametrize("cloud", sorted(PROFILES))
def test_every_clouds_test_images_are_its_own_and_pinned(cloud):
    prof = PROFILES[cloud]
    images = [prof.nccl_test, *(f.nccl_test for f in prof.fabrics.values() if f.nccl_test)]
    for test in images:
        assert test.image.startswith(REGISTRIES[cloud]), test.image
        tag = test.image.rsplit(":", 1)[1]
        assert tag != "latest" and test.binary.startswith("/") and test.source


def test_a_fabric_pool_has_no_socket_note(capsys):
    assert main(["nccl-test", "aws-prod", "--pool", "h100-train"]) == 0
    assert "note: " not in capsys.readouterr().err
