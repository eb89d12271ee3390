"""GKE GPUDirect-TCPX (A3 High) and GPUDirect-TCPXO (A3 Mega): catalog, gpuPools[].fabric resolution and refusals,
the GPU NIC VPCs, node pool networks, gVNIC and compact placement, the in-cluster Network/GKENetworkParamSet objects,
the NCCL plugin installer and NRI injector, and the nccl-test manifest that uses the NICs."""
from __future__ import annotations

import ipaddress
import json

import jsonschema
import kubernetes_validate
import pytest
import yaml

from components.clouds.gcp.catalog import INSTANCE_TYPES as GCP_TYPES
from components.clouds import PROFILES
from components.clouds.facts import DEFAULT_KUBERNETES_VERSION
from components.config import ConfigError
from components.clouds.gcp import facts as gcp_facts
from components.clouds.gcp import fabric as gcp_fabric
from gpu_platform import nccl_manifest
from gpu_platform.cli import main
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import validate_stack

from support.gke_network_crds import SCHEMAS as GKE_SCHEMAS
from support.paths import ROOT

NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
K8S_NETWORK = "kubernetes:networking.gke.io/v1:Network"
PARAM_SET = "kubernetes:networking.gke.io/v1:GKENetworkParamSet"
GCP = PROFILES["gcp"]
TCPX, TCPXO = GCP.fabrics["gpudirect-tcpx"], GCP.fabrics["gpudirect-tcpxo"]


def pools(*items, teams=None):
    # Privileged admits GPUDirect pods on every pool here (fabric-sidecar needs a GPUDirect pool in the quotas), so
    # `auto` picks the fabric: these tests are about the fabric, not the team's level.
    return {"gpu-platform:gpuPools": list(items),
            "gpu-platform:teams": teams or [{"name": "lab", "quotas": {items[0]["name"]: 8},
                                             "podSecurity": "privileged"}]}


def plan(*items, **extra):
    return plan_stack("gcp-prod", config_overrides={**pools(*items), **extra})


def errors(overrides):
    with pytest.raises(ConfigError) as exc:
        plan_stack("gcp-prod", config_overrides=overrides)
    return {p.path: p.message for p in exc.value.problems}


def node_pool(result, pool):
    (found,) = [r for r in result.of_type(NODE_POOL) if r.inputs["name"] == pool]
    return found.inputs


@pytest.fixture(scope="module")
def mega():
    """An A3 Mega training pool (TCPXO by auto) next to a plain L4 pool."""
    return plan({"name": "h100-mega", "instanceType": "a3-megagpu-8g", "maxNodes": 4},
                {"name": "l4", "instanceType": "g2-standard-8", "maxNodes": 2})


# --- catalog and config -------------------------------------------------------------------------------------------

def test_catalog_gives_a3_high_and_mega_their_fabric_and_gpu_nic_count():
    attached = {name: (t.interconnect, t.fabric_interfaces) for name, t in GCP_TYPES.items() if t.fabric_interfaces}
    assert attached == {"a3-highgpu-8g": ("gpudirect-tcpx", 4), "a3-megagpu-8g": ("gpudirect-tcpxo", 8)}
    # RDMA over RoCE (A3 Ultra, A4) is not attached: their interconnect names no GKE fabric.
    assert {GCP_TYPES[t].interconnect for t in ("a3-ultragpu-8g", "a4-highgpu-8g")} == {"rdma"}
    assert "rdma" not in GCP.fabrics


def test_nccl_environment_names_exactly_the_catalogued_nics():
    for fabric, variable, machine in ((TCPX, "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "a3-highgpu-8g"),
                                      (TCPXO, "NCCL_FASTRAK_IFNAME", "a3-megagpu-8g")):
        nics = GCP_TYPES[machine].fabric_interfaces
        assert dict(fabric.env)[variable].split(",") == [f"eth{i + 1}" for i in range(nics)]
        assert [i["interfaceName"] for i in gcp_facts.pod_interfaces(fabric.name, nics)] == [
            f"eth{i}" for i in range(nics + 1)]
        assert not fabric.resource and not fabric.chart  # no device plugin: multi-networking instead
        direct = gcp_facts.GPUDIRECT[fabric.name]
        for image in (direct.installer_image, direct.rxdm_image):
            assert image.startswith("us-docker.pkg.dev/gce-ai-infra/") and ":latest" not in image


@pytest.mark.parametrize("pool, expected", [
    ({"instanceType": "a3-highgpu-8g"}, "gpudirect-tcpx"),  # auto on training
    ({"instanceType": "a3-megagpu-8g"}, "gpudirect-tcpxo"),
    ({"instanceType": "a3-megagpu-8g", "workload": "inference"}, "none"),
    ({"instanceType": "a3-megagpu-8g", "fabric": "none"}, "none"),
    ({"instanceType": "a3-megagpu-8g", "workload": "inference", "fabric": "gpudirect-tcpxo"}, "gpudirect-tcpxo"),
    ({"instanceType": "a3-highgpu-8g", "driver": "operator"}, "none"),  # the plugin lives next to GKE's driver
    ({"instanceType": "a3-ultragpu-8g"}, "none"),  # RDMA over RoCE: not attached
    ({"instanceType": "a3-highgpu-4g"}, "none"),
])
def test_fabric_resolution(pool, expected):
    config = validate_stack("gcp-prod", config_overrides=pools({"name": "p", "maxNodes": 2, **pool}))[3]
    assert config.gpu_pools[0].fabric == expected


def test_refusals_name_the_path_and_the_allowed_values():
    problems = errors(pools(
        {"name": "a", "instanceType": "a3-highgpu-8g", "maxNodes": 1, "fabric": "efa"},
        {"name": "b", "instanceType": "a3-megagpu-8g", "maxNodes": 1, "fabric": "gpudirect-tcpx"},
        {"name": "c", "instanceType": "a3-ultragpu-8g", "maxNodes": 1, "fabric": "gpudirect-tcpxo"},
        {"name": "d", "instanceType": "a3-highgpu-8g", "maxNodes": 1, "fabric": "gpudirect-tcpx", "driver": "operator"},
        {"name": "e", "instanceType": "g2-standard-8", "maxNodes": 1, "fabric": "gpudirect-tcpx"}))
    assert "allowed: auto, none, gpudirect-tcpx, gpudirect-tcpxo" in problems["gpuPools[0].fabric"]
    assert problems["gpuPools[1].fabric"] == ("a3-megagpu-8g has no gpudirect-tcpx (catalog interconnect: "
                                              "gpudirect-tcpxo); allowed for it: auto, none")
    assert "a3-ultragpu-8g has no gpudirect-tcpxo (catalog interconnect: rdma)" in problems["gpuPools[2].fabric"]
    assert "driver: managed" in problems["gpuPools[3].fabric"] and "auto, none" in problems["gpuPools[3].fabric"]
    assert "g2-standard-8 has no gpudirect-tcpx (catalog interconnect: none)" in problems["gpuPools[4].fabric"]


def test_compact_pools_past_gke_compact_size_are_warned_about():
    config = validate_stack("gcp-prod", config_overrides=pools(
        {"name": "big", "instanceType": "a3-megagpu-8g", "maxNodes": 200},
        {"name": "small", "instanceType": "a3-megagpu-8g", "maxNodes": 150}))[3]
    warned = [w for w in config.warnings if "compact placement" in w]
    assert len(warned) == 1 and warned[0].startswith("gpuPools[0].maxNodes") and "at most 150" in warned[0]


# --- cloud resources ----------------------------------------------------------------------------------------------

def test_one_vpc_subnet_and_firewall_per_gpu_nic(mega):
    vpcs = {r.inputs["name"]: r.inputs for r in mega.of_type(NETWORK) if "-tcpxo-" in r.inputs["name"]}
    assert sorted(vpcs) == [f"ml-prod-gke-tcpxo-net-{i}" for i in range(8)]
    assert {v["mtu"] for v in vpcs.values()} == {8244} and not any(v["autoCreateSubnetworks"] for v in vpcs.values())
    subnets = [r.inputs for r in mega.of_type(SUBNET) if "-tcpxo-" in r.inputs["name"]]
    ranges = [ipaddress.ip_network(s["ipCidrRange"]) for s in subnets]
    assert len(ranges) == 8 and all(r.subnet_of(ipaddress.ip_network("192.168.0.0/16")) for r in ranges)
    assert all(not a.overlaps(b) for i, a in enumerate(ranges) for b in ranges[i + 1:])
    assert {s["region"] for s in subnets} == {"us-central1"}
    rules = [r.inputs for r in mega.of_type(FIREWALL)]
    assert sorted(r["network"] for r in rules) == sorted(vpcs)
    assert all(r["sourceRanges"] == ["192.168.0.0/16"] and r["direction"] == "INGRESS" for r in rules)
    assert {a["protocol"] for a in rules[0]["allows"]} == {"tcp", "udp", "icmp"}


def test_fabric_pool_attaches_every_nic_with_gvnic_and_compact_placement_in_one_zone(mega):
    pool = node_pool(mega, "h100-mega")
    assert pool["networkConfig"]["additionalNodeNetworkConfigs"] == [
        {"network": f"ml-prod-gke-tcpxo-net-{i}", "subnetwork": f"ml-prod-gke-tcpxo-sub-{i}"} for i in range(8)]
    assert pool["placementPolicy"] == {"type": "COMPACT"}
    assert pool["nodeConfig"]["gvnic"] == {"enabled": True}
    assert pool["nodeLocations"] == ["us-central1-a"]
    assert pool["nodeConfig"]["labels"]["gpu-platform.io/fabric"] == "gpudirect-tcpxo"
    (cluster,) = mega.of_type(CLUSTER)
    assert cluster.inputs["enableMultiNetworking"] is True
    assert cluster.inputs["datapathProvider"] == "ADVANCED_DATAPATH"  # multi-networking needs Dataplane V2
    plain = node_pool(mega, "l4")
    assert not {"networkConfig", "placementPolicy"} & set(plain) and "gvnic" not in plain["nodeConfig"]
    assert plain["nodeLocations"] == ["us-central1-a", "us-central1-c"]


@pytest.mark.parametrize("extra", [{"capacityType": "reserved"}, {"provisioning": "queued"}])
def test_reserved_and_queued_pools_get_their_nics_without_compact_placement(extra):
    result = plan({"name": "h100", "instanceType": "a3-highgpu-8g", "maxNodes": 2, **extra})
    pool = node_pool(result, "h100")
    assert len(pool["networkConfig"]["additionalNodeNetworkConfigs"]) == 4
    assert "placementPolicy" not in pool


def test_fabric_none_creates_no_networks_and_leaves_the_cluster_as_before():
    off = plan({"name": "h100", "instanceType": "a3-megagpu-8g", "maxNodes": 2, "fabric": "none"})
    assert not [r for r in off.of_type(NETWORK) if "-tcpx" in r.inputs["name"]]
    assert not off.of_type(FIREWALL) and not off.of_type(K8S_NETWORK) and not off.of_type(DAEMONSET)
    (cluster,) = off.of_type(CLUSTER)
    assert "enableMultiNetworking" not in cluster.inputs
    assert not {"networkConfig", "placementPolicy"} & set(node_pool(off, "h100"))


def test_both_fabrics_in_one_cluster_keep_separate_nic_ranges():
    result = plan({"name": "high", "instanceType": "a3-highgpu-8g", "maxNodes": 2},
                  {"name": "mega", "instanceType": "a3-megagpu-8g", "maxNodes": 2},
                  teams=[{"name": "lab", "quotas": {"high": 8, "mega": 8}, "podSecurity": "fabric-sidecar"}])
    ranges = [ipaddress.ip_network(r.inputs["ipCidrRange"]) for r in result.of_type(SUBNET)
              if "-tcpx" in r.inputs["name"]]
    assert len(ranges) == 12 and all(not a.overlaps(b) for i, a in enumerate(ranges) for b in ranges[i + 1:])
    (injector,) = [d for d in result.of_type(DAEMONSET) if d.inputs["metadata"]["name"] == "device-injector"]
    terms = injector.inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["gpudirect-tcpx", "gpudirect-tcpxo"]
    assert {d.inputs["metadata"]["name"] for d in result.of_type(DAEMONSET)} == {
        "device-injector", "nccl-tcpx-installer", "nccl-tcpxo-installer"}


# --- in-cluster objects -------------------------------------------------------------------------------------------

def test_network_objects_match_the_gke_api_types_and_the_cloud_names(mega):
    vpcs = {r.inputs["name"] for r in mega.of_type(NETWORK)}
    subnets = {r.inputs["name"] for r in mega.of_type(SUBNET)}
    params = {r.inputs["metadata"]["name"]: r.inputs for r in mega.of_type(PARAM_SET)}
    networks = {r.inputs["metadata"]["name"]: r.inputs for r in mega.of_type(K8S_NETWORK)}
    assert sorted(networks) == sorted(params) == [f"tcpxo-nic{i}" for i in range(8)]
    for obj in [*params.values(), *networks.values()]:
        errors_found = list(jsonschema.Draft7Validator(GKE_SCHEMAS[(obj["apiVersion"], obj["kind"])]).iter_errors(obj))
        assert not errors_found, [e.message for e in errors_found]
    for name, obj in params.items():
        assert obj["spec"]["deviceMode"] == "NetDevice"
        assert obj["spec"]["vpc"] in vpcs and obj["spec"]["vpcSubnet"] in subnets
    for name, obj in networks.items():
        assert obj["spec"]["type"] == "Device" and obj["spec"]["parametersRef"]["name"] == name


def test_gke_network_schemas_refuse_what_gke_would():
    bad = {"apiVersion": "networking.gke.io/v1", "kind": "GKENetworkParamSet", "metadata": {"name": "x"},
           "spec": {"vpc": "v", "vpcSubnet": "s", "deviceMode": "Netdevice", "vpcsubnet": "typo"}}
    messages = [e.message for e in jsonschema.Draft7Validator(
        GKE_SCHEMAS[("networking.gke.io/v1", "GKENetworkParamSet")]).iter_errors(bad)]
    assert len(messages) == 2 and any("Netdevice" in m for m in messages) and any("vpcsubnet" in m for m in messages)


def test_installer_and_injector_are_valid_daemonsets_on_the_fabric_pools_only(mega):
    sets = {d.inputs["metadata"]["name"]: d.inputs for d in mega.of_type(DAEMONSET)}
    assert set(sets) == {"nccl-tcpxo-installer", "device-injector"}
    for obj in sets.values():
        kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)
        assert obj["metadata"]["namespace"] == "kube-system"
    installer = sets["nccl-tcpxo-installer"]["spec"]["template"]["spec"]
    assert installer["nodeSelector"] == {"gpu-platform.io/fabric": "gpudirect-tcpxo"}
    assert [c["name"] for c in installer["initContainers"]] == ["pre-installation", "nccl-tcpxo-installer"]
    assert installer["initContainers"][1]["image"] == gcp_facts.GPUDIRECT[TCPXO.name].installer_image
    assert "cp -r /var/lib/tcpxo/lib64/. /usr/local/nvidia/lib64" in installer["initContainers"][1]["args"][0]
    assert {v["hostPath"]["path"] for v in installer["volumes"]} == {"/var/lib", "/home/kubernetes/bin"}
    injector = sets["device-injector"]["spec"]["template"]["spec"]["containers"][0]
    assert "@sha256:" in injector["image"]


def test_tcpx_installer_has_no_host_preparation_step():
    spec = gcp_fabric.installer_spec(TCPX)["template"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["nccl-tcpx-installer"]
    assert "/var/lib/tcpx/lib64/." in spec["initContainers"][0]["args"][0]


def test_adopted_cluster_gets_the_installer_but_no_network_objects():
    result = plan_stack("gcp-prod", config_overrides={
        **pools({"name": "h100", "instanceType": "a3-megagpu-8g", "maxNodes": 2}),
        "gpu-platform:cluster": {"name": "adopted", "region": "us-central1", "existingKubeconfig": "apiVersion: v1",
                                 "gcp": {"project": "acme-ml-prod", "zones": ["us-central1-a"]}}})
    assert not result.of_type(K8S_NETWORK) and not result.of_type(NETWORK)
    assert {d.inputs["metadata"]["name"] for d in result.of_type(DAEMONSET)} == {"nccl-tcpxo-installer",
                                                                                 "device-injector"}


# --- nccl-test ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("machine, fabric", [("a3-highgpu-8g", TCPX), ("a3-megagpu-8g", TCPXO)])
def test_nccl_test_uses_the_gpu_nics(machine, fabric):
    config = validate_stack("gcp-prod", config_overrides=pools({"name": "h100", "instanceType": machine,
                                                               "maxNodes": 4}))[3]
    pool, team = config.gpu_pools[0], config.teams[0]
    nics, direct = pool.instance.fabric_interfaces, gcp_facts.GPUDIRECT[fabric.name]
    objects = nccl_manifest.manifest(config, pool, 3, team, ("private", "public"))
    for obj in objects:
        kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)
    template = objects[2]["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    interfaces = json.loads(annotations["networking.gke.io/interfaces"])
    assert interfaces[0] == {"interfaceName": "eth0", "network": "default"}
    assert [i["network"] for i in interfaces[1:]] == [gcp_facts.network_name(fabric.name, i) for i in range(nics)]
    assert annotations["networking.gke.io/default-interface"] == "eth0"
    devices = [d["path"] for d in yaml.safe_load(annotations[f"devices.gke.io/container.{direct.rxdm_container}"])]
    assert devices[:8] == [f"/dev/nvidia{i}" for i in range(8)] and "/dev/nvidiactl" in devices
    assert ("/dev/dmabuf_import_helper" in devices) == (fabric is TCPXO)
    spec = template["spec"]
    (sidecar,) = spec["initContainers"]
    assert sidecar["name"] == direct.rxdm_container and sidecar["restartPolicy"] == "Always"
    assert sidecar["image"] == direct.rxdm_image
    assert "NET_ADMIN" in sidecar["securityContext"]["capabilities"]["add"]
    volumes = {v["name"] for v in spec["volumes"]}
    assert {m["name"] for m in sidecar["volumeMounts"]} <= volumes
    (nccl,) = spec["containers"]
    assert nccl["image"] == direct.installer_image
    assert {m["name"] for m in nccl["volumeMounts"]} <= volumes
    # Read-only: the node's NCCL plugin is shared by every pod on it (the team's admission policy requires it).
    assert {"name": "libraries", "mountPath": "/usr/local/nvidia/lib64", "readOnly": True} in nccl["volumeMounts"]
    env = {e["name"]: e["value"] for e in nccl["env"]}
    assert env == dict(fabric.env) and "NCCL_NET" not in env  # no socket fallback
    assert nccl["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    command = nccl["command"][2]
    assert fabric.nccl_test.binary == "/third_party/nccl-tests-mpi/build/all_reduce_perf"
    assert fabric.nccl_test.binary in command and "--mca btl_tcp_if_include eth0" in command
    assert command.count("-x LD_LIBRARY_PATH") == 1


def test_nccl_test_runs_in_a_team_whose_pod_security_admits_gpudirect(capsys):
    # gcp-prod: research (podSecurity fabric-sidecar) is picked; the pool is research's alone (host access), so
    # search has no quota there. A baseline team on the pool is refused below (explicit fabric no team can use).
    assert main(["nccl-test", "gcp-prod", "--pool", "h100-train"]) == 0
    captured = capsys.readouterr()
    (job,) = [o for o in yaml.safe_load_all(captured.out) if o["kind"] == "Job"]
    assert job["metadata"]["namespace"] == "research" and captured.err == ""
    assert main(["nccl-test", "gcp-prod", "--pool", "h100-train", "--team", "search"]) == 2
    err = capsys.readouterr().err
    assert "team 'search' has no quota on pool 'h100-train'; teams with quota: research" in err
    assert "Traceback" not in err


def without_fabric_teams(tmp_path, fabric: str | None):
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.gcp-prod.yaml").read_text())
    for team in stack["config"]["gpu-platform:teams"]:
        team.pop("podSecurity", None)
    if fabric:
        stack["config"]["gpu-platform:gpuPools"][0]["fabric"] = fabric
    path = tmp_path / "Pulumi.gcp-prod.yaml"
    path.write_text(yaml.safe_dump(stack))
    return path


def test_auto_never_resolves_to_a_fabric_no_team_can_use(tmp_path, capsys):
    path = without_fabric_teams(tmp_path, None)
    config = validate_stack(None, path)[3]
    assert config.gpu_pools[0].fabric == "none"
    (warning,) = [w for w in config.warnings if w.startswith("gpuPools[0].fabric: ")]
    assert "auto leaves 'h100-train' without gpudirect-tcpx" in warning and "(research)" in warning
    assert main(["plan", "--file", str(path)]) == 0
    pools = capsys.readouterr().out.split("teams:")[0]
    assert "none (gpudirect-tcpx unused: not attached)" in pools and "gpudirect-tcpx (unused" not in pools


def test_an_explicit_fabric_no_team_can_use_is_warned_shown_unused_and_nccl_test_refused(tmp_path, capsys):
    path = without_fabric_teams(tmp_path, "gpudirect-tcpx")
    config = validate_stack(None, path)[3]
    (warning,) = [w for w in config.warnings if w.startswith("gpuPools[0].fabric: ")]
    assert "gpudirect-tcpx pods need Pod Security fabric-sidecar" in warning and "(research)" in warning
    assert main(["plan", "--file", str(path)]) == 0
    assert "gpudirect-tcpx (unused: no team with quota admits its pods)" in capsys.readouterr().out
    assert main(["nccl-test", "--file", str(path), "--pool", "h100-train"]) == 2
    assert "Pod Security baseline refuses in 'research'" in capsys.readouterr().err


def test_the_summary_shows_a_used_fabric_plainly(capsys):
    assert main(["plan", "gcp-prod"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("h100-train"))
    assert row.split()[-2:] == ["gpudirect-tcpx", "none"]  # the fabric, then no unreachable GPUs


def test_turning_the_fabric_on_replaces_only_the_fabric_pool():
    """Replace-triggering inputs (engine/replacements.py) of every node pool, gcp-prod with and without TCPX."""
    from gpu_platform.engine.plan import PROJECT_ROOT, read_stack_config
    from gpu_platform.engine.replacements import replace_paths, value_at

    raw = read_stack_config(PROJECT_ROOT / "stacks" / "Pulumi.gcp-prod.yaml")
    # Without the fabric there is no sidecar to except: its team goes back to baseline.
    off = plan_stack("gcp-prod", config_overrides={
        "gpu-platform:gpuPools": [{**p, "fabric": "none"} for p in raw["gpu-platform:gpuPools"]],
        "gpu-platform:teams": [{k: v for k, v in t.items() if k != "podSecurity"} for t in raw["gpu-platform:teams"]]})
    on = plan_stack("gcp-prod")

    def keys(result):
        return {r.name: {path: json.dumps(value_at(r.inputs, path)) for path in replace_paths(NODE_POOL)}
                for r in result.of_type(NODE_POOL)}
    before, after = keys(off), keys(on)
    changed = {name: [p for p in replace_paths(NODE_POOL) if before[name][p] != after[name][p]] for name in before}
    assert {name: paths for name, paths in changed.items() if paths} == {"ml-prod-gke-h100-train-nodepool": [
        "placementPolicy", "networkConfig.additionalNodeNetworkConfigs", "nodeConfig.gvnic"]}
