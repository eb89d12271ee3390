"""OKE: network, ENHANCED cluster, GPU node pools (shape, image, labels, cloud-init taints, preemptible, placement),
kubeconfig, the autoscaler's IAM and chart values, and the OCI config checks."""
from __future__ import annotations

import base64
import json
import re
import textwrap

import pytest
import yaml

from components.clouds.oci.cluster import build_kubeconfig
from components.clouds.oci.network import dns_label, subnet_plan
from components.clouds.oci.nodes import cloud_init, register_with_taints
from components.config import ConfigError, validate
from components.config.model import Taint
from gpu_platform.engine import plan_stack
from gpu_platform.engine.mocks import fake_id
from gpu_platform.engine.plan import read_stack_config, run_program
from gpu_platform.engine.wire import _SECRET_SIG, _SIG

from support.paths import ROOT
from support.plans import one, plan_file_fixture, plan_fixture

NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
GPU_POOL = "gpu-platform:cluster:GpuNodePool"
PROD = read_stack_config(ROOT / "stacks" / "Pulumi.oci-prod.yaml")
PROD_EXTRAS = PROD["gpu-platform:cluster"]["oci"]
MOCK_ADS = ["Offline:US-ASHBURN-AD-1", "Offline:US-ASHBURN-AD-2", "Offline:US-ASHBURN-AD-3"]  # the offline answer for us-ashburn-1

DEV = textwrap.dedent("""\
    config:
      gpu-platform:cloud: oci
      gpu-platform:environment: development
      gpu-platform:cluster:
        name: ml-dev-oke
        region: us-phoenix-1
        authorizedNetworks: [203.0.113.0/24]
        kubernetesVersion: "1.34"
        systemPool: {instanceType: VM.Standard3.Flex, minNodes: 1, maxNodes: 2}
        oci:
          compartmentId: ocid1.compartment.oc1..dev
          gpuImageId: ocid1.image.oc1.phx.gpu
          imageId: ocid1.image.oc1.phx.ol8
          availabilityDomain: "Uocm:PHX-AD-1"
          vcnCidr: 10.20.0.0/16
      gpu-platform:gpuPools:
        - {name: a10-dev, instanceType: VM.GPU.A10.1, maxNodes: 2, taints: ["team=ml:NoExecute"]}
        - {name: a10-op, instanceType: VM.GPU.A10.1, maxNodes: 1, driver: operator}
      gpu-platform:teams:
        - {name: sandbox, quotas: {a10-dev: 2}}
    """)

EXISTING = textwrap.dedent("""\
    config:
      gpu-platform:cloud: oci
      gpu-platform:cluster:
        name: ml-net
        region: us-ashburn-1
        oci:
          compartmentId: ocid1.compartment.oc1..net
          gpuImageId: ocid1.image.oc1.iad.gpu
          imageId: ocid1.image.oc1.iad.ol8
          vcnId: ocid1.vcn.oc1.iad.shared
          nodeSubnetId: ocid1.subnet.oc1.iad.nodes
          endpointSubnetId: ocid1.subnet.oc1.iad.api
          serviceLbSubnetId: ocid1.subnet.oc1.iad.lb
      gpu-platform:gpuPools:
        - {name: l40s, instanceType: BM.GPU.L40S.4, maxNodes: 2}
      gpu-platform:teams:
        - {name: vision, quotas: {l40s: 8}}
    """)


prod = plan_fixture("oci-prod")
dev = plan_file_fixture("Pulumi.oci-dev.yaml", DEV)
existing = plan_file_fixture("Pulumi.oci-net.yaml", EXISTING)


def gpu_node_pools(plan):
    """(GpuNodePool component, its OKE NodePool child) per GPU pool."""
    components = {r.urn: r for r in plan.of_type(GPU_POOL)}
    return [(components[r.parent], r) for r in plan.of_type(NODE_POOL) if r.parent in components]


def decoded_user_data(node_pool) -> str:
    return base64.b64decode(node_pool.inputs["nodeMetadata"]["user_data"]).decode()


def taints_in_script(script: str) -> list[dict[str, str]]:
    flag = re.search(r'--kubelet-extra-args "--register-with-taints=([^"]+)"', script).group(1)
    return [dict(zip(("key", "value", "effect"), re.fullmatch(r"([^=]+)=([^:]*):(\w+)", t).groups()))
            for t in flag.split(",")]


# --- cluster and network ----------------------------------------------------------------------------------------

def test_production_cluster_is_enhanced_private_flannel_and_protected(prod):
    cluster = one(prod, "oci:ContainerEngine/cluster:Cluster", "ml-prod-oke-cluster")
    assert cluster.inputs["type"] == "ENHANCED_CLUSTER"
    assert cluster.inputs["kubernetesVersion"] == "v1.35.1"
    assert cluster.inputs["endpointConfig"]["isPublicIpEnabled"] is False
    assert cluster.inputs["clusterPodNetworkOptions"] == [{"cniType": "FLANNEL_OVERLAY"}]
    assert cluster.inputs["options"]["kubernetesNetworkConfig"] == {"podsCidr": "10.244.0.0/16",
                                                                     "servicesCidr": "10.96.0.0/16"}
    assert cluster.inputs["compartmentId"] == PROD_EXTRAS["compartmentId"]
    assert cluster.options["protect"] is True
    oke = [r for r in prod.resources if r.type.startswith("oci:")]
    assert oke and all(r.options["protect"] for r in oke)


def test_production_network_keeps_api_and_nodes_private(prod):
    subnets = {r.name.removeprefix("ml-prod-oke-network-"): r.inputs for r in prod.of_type("oci:Core/subnet:Subnet")}
    assert set(subnets) == {"endpoint", "lb", "nodes"}
    assert {k: v["cidrBlock"] for k, v in subnets.items()} == {
        "endpoint": "10.0.0.0/28", "lb": "10.0.1.0/24", "nodes": "10.0.16.0/20"}
    assert {k: v["prohibitPublicIpOnVnic"] for k, v in subnets.items()} == {
        "endpoint": True, "lb": False, "nodes": True}
    private_rt = one(prod, "oci:Core/routeTable:RouteTable", "ml-prod-oke-network-private-rt")
    rules = {r["destinationType"]: r for r in private_rt.inputs["routeRules"]}
    assert rules["SERVICE_CIDR_BLOCK"]["destination"] == "all-off-services-in-oracle-services-network"
    assert rules["CIDR_BLOCK"]["networkEntityId"].startswith("ml-prod-oke-network-nat-")
    assert subnets["endpoint"]["routeTableId"] == subnets["nodes"]["routeTableId"]
    sgw = one(prod, "oci:Core/serviceGateway:ServiceGateway", "ml-prod-oke-network-sgw")
    assert sgw.inputs["services"] == [{"serviceId": "ocid1.service.oc1.offline.all"}]
    endpoint_sl = one(prod, "oci:Core/securityList:SecurityList", "ml-prod-oke-network-endpoint-sl")
    api_rule = next(r for r in endpoint_sl.inputs["ingressSecurityRules"] if r.get("tcpOptions"))
    assert api_rule == {"protocol": "6", "source": "10.0.0.0/16", "tcpOptions": {"max": 6443, "min": 6443}}


def test_development_endpoint_is_public(dev):
    cluster = one(dev, "oci:ContainerEngine/cluster:Cluster", "ml-dev-oke-cluster")
    assert cluster.inputs["endpointConfig"]["isPublicIpEnabled"] is True
    assert cluster.inputs["kubernetesVersion"] == "v1.34.1"
    assert cluster.options["protect"] is False
    endpoint = one(dev, "oci:Core/subnet:Subnet", "ml-dev-oke-network-endpoint")
    assert endpoint.inputs["prohibitPublicIpOnVnic"] is False
    assert endpoint.inputs["routeTableId"].startswith("ml-dev-oke-network-public-rt-")
    assert endpoint.inputs["cidrBlock"] == "10.20.0.0/28"


def test_existing_network_is_used_not_created(existing):
    assert not [r for r in existing.resources if r.type.startswith("oci:Core/")]
    cluster = one(existing, "oci:ContainerEngine/cluster:Cluster", "ml-net-cluster")
    assert cluster.inputs["vcnId"] == "ocid1.vcn.oc1.iad.shared"
    assert cluster.inputs["endpointConfig"]["subnetId"] == "ocid1.subnet.oc1.iad.api"
    assert cluster.inputs["options"]["serviceLbSubnetIds"] == ["ocid1.subnet.oc1.iad.lb"]
    (_, nodes), = gpu_node_pools(existing)
    details = nodes.inputs["nodeConfigDetails"]
    assert {p["subnetId"] for p in details["placementConfigs"]} == {"ocid1.subnet.oc1.iad.nodes"}
    assert details["nodePoolPodNetworkOptionDetails"] == {"cniType": "FLANNEL_OVERLAY"}


def test_subnet_plan_and_dns_label():
    assert subnet_plan("172.16.0.0/16") == {"endpoint": "172.16.0.0/28", "lb": "172.16.1.0/24",
                                            "nodes": "172.16.16.0/20"}
    assert dns_label("ml-prod-oke") == "mlprodoke"
    assert dns_label("4090-cluster-number-one") == "k4090clusternum"


# --- GPU node pools ---------------------------------------------------------------------------------------------

def test_every_gpu_pool_has_one_node_pool_with_its_shape_image_size_and_labels(prod):
    config = validate({k.split(":", 1)[1]: v for k, v in PROD.items() if k.startswith("gpu-platform:")})
    pairs = gpu_node_pools(prod)
    assert sorted(c.inputs["poolName"] for c, _ in pairs) == sorted(p.name for p in config.gpu_pools)
    for component, nodes in pairs:
        pool = config.pool(component.inputs["poolName"])
        assert nodes.inputs["name"] == pool.cloud_name
        assert nodes.inputs["nodeShape"] == pool.instance_type
        assert nodes.inputs["nodeSourceDetails"] == {"imageId": PROD_EXTRAS["gpuImageId"], "sourceType": "IMAGE",
                                                     "bootVolumeSizeInGbs": "200"}
        assert nodes.inputs["nodeConfigDetails"]["size"] == pool.min_nodes
        assert nodes.inputs["kubernetesVersion"] == "v1.35.1"
        assert {lbl["key"]: lbl["value"] for lbl in nodes.inputs["initialNodeLabels"]} == component.inputs["labels"]
        assert component.inputs["labels"]["gpu-platform.io/pool"] == pool.name
        assert "nodeShapeConfig" not in nodes.inputs  # GPU shapes are fixed-size
        assert nodes.options["ignoreChanges"] == ["nodeConfigDetails.size"]
        assert nodes.options["protect"] is True


def test_cloud_init_taints_are_exactly_the_pool_taints(prod, dev):
    checked = 0
    for plan in (prod, dev):
        for component, nodes in gpu_node_pools(plan):
            script = decoded_user_data(nodes)
            assert script.startswith("#!/bin/bash\nset -euo pipefail\n")
            assert ("curl --fail -H \"Authorization: Bearer Oracle\" -L0 "
                    "http://169.254.169.254/opc/v2/instance/metadata/oke_init_script | base64 --decode "
                    ">/var/run/oke-init.sh\nbash /var/run/oke-init.sh --kubelet-extra-args ") in script
            assert taints_in_script(script) == component.inputs["taints"]
            # The autoscaler's template reads the same flag from this metadata key.
            flag = nodes.inputs["nodeMetadata"]["kubelet-extra-args"]
            assert f'--kubelet-extra-args "{flag}"' in script
            checked += 1
    assert checked == 6


def test_gpu_and_spot_and_extra_taints_reach_cloud_init(prod, dev):
    by_pool = {c.inputs["poolName"]: taints_in_script(decoded_user_data(n))
               for plan in (prod, dev) for c, n in gpu_node_pools(plan)}
    gpu = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    spot = {"key": "gpu-platform.io/spot", "value": "true", "effect": "NoSchedule"}
    assert by_pool["h100-train"] == [gpu]
    assert by_pool["a10-spot"] == [gpu, spot]
    assert by_pool["a10-dev"] == [gpu, {"key": "team", "value": "ml", "effect": "NoExecute"}]


def test_spot_pools_are_preemptible_and_others_are_not(prod):
    for component, nodes in gpu_node_pools(prod):
        placements = nodes.inputs["nodeConfigDetails"]["placementConfigs"]
        assert [p["availabilityDomain"] for p in placements] == MOCK_ADS
        assert all(p["subnetId"].startswith("ml-prod-oke-network-nodes-") for p in placements)
        if component.inputs["capacityType"] == "spot":
            assert all(p["preemptibleNodeConfig"] == {"preemptionAction": {
                "type": "TERMINATE", "isPreserveBootVolume": False}} for p in placements)
        else:
            assert not any("preemptibleNodeConfig" in p for p in placements)
    assert [c.inputs["poolName"] for c, _ in gpu_node_pools(prod) if c.inputs["capacityType"] == "spot"] == ["a10-spot"]


def test_pool_pods_use_flannel_like_the_cluster(prod):
    """Calico's policy-only layout needs the node podCIDR flannel gives; VCN-native pods have none."""
    for _, nodes in gpu_node_pools(prod):
        assert nodes.inputs["nodeConfigDetails"]["nodePoolPodNetworkOptionDetails"] == {"cniType": "FLANNEL_OVERLAY"}


@pytest.mark.parametrize("key, value, expected", [
    ("podSubnetId", "ocid1.subnet.oc1.iad.pods", "flannel overlay"),
    ("vcnCidr", "10.244.0.0/16", "overlaps 10.244.0.0/16"),
    ("vcnCidr", "10.96.0.0/16", "overlaps 10.96.0.0/16"),
    ("vcnCidr", "129.146.0.0/16", "129.146.0.0/16 is not private address space"),
])
def test_network_keys_that_clash_with_flannel_are_refused_at_their_path(key, value, expected):
    extras = {**PROD_EXTRAS, key: value}
    if key == "podSubnetId":
        extras.update(vcnId="ocid1.vcn.oc1.iad.v", nodeSubnetId="ocid1.subnet.oc1.iad.n",
                      endpointSubnetId="ocid1.subnet.oc1.iad.e", serviceLbSubnetId="ocid1.subnet.oc1.iad.l")
    with pytest.raises(ConfigError) as info:
        plan_stack("oci-prod", config_overrides={"gpu-platform:cluster": {**PROD["gpu-platform:cluster"], "oci": extras}})
    assert expected in str(info.value) and f"cluster.oci.{key}" in str(info.value)


def test_one_availability_domain_when_configured_and_operator_pools_boot_the_plain_image(dev):
    pools = {c.inputs["poolName"]: n for c, n in gpu_node_pools(dev)}
    for nodes in pools.values():
        assert [p["availabilityDomain"] for p in nodes.inputs["nodeConfigDetails"]["placementConfigs"]] == [
            "Uocm:PHX-AD-1"]
    assert pools["a10-dev"].inputs["nodeSourceDetails"]["imageId"] == "ocid1.image.oc1.phx.gpu"
    assert pools["a10-op"].inputs["nodeSourceDetails"]["imageId"] == "ocid1.image.oc1.phx.ol8"


def test_system_pool_is_flex_sized_tainted_and_autoscaled(prod, dev):
    system = one(prod, NODE_POOL, "ml-prod-oke-system")
    assert system.inputs["nodeShape"] == "VM.Standard.E5.Flex"
    assert system.inputs["nodeShapeConfig"] == {"ocpus": 4, "memoryInGbs": 32}
    assert system.inputs["nodeSourceDetails"]["imageId"] == PROD_EXTRAS["imageId"]
    assert system.inputs["nodeConfigDetails"]["size"] == 2
    # OKE node pools have no taint field: the kubelet registers the node tainted.
    assert system.inputs["nodeMetadata"]["kubelet-extra-args"] == \
        "--register-with-taints=CriticalAddonsOnly=true:NoSchedule"
    assert system.options["ignoreChanges"] == ["nodeConfigDetails.size"]
    assert one(dev, NODE_POOL, "ml-dev-oke-system").inputs["nodeConfigDetails"]["size"] == 1


def test_register_with_taints_and_cloud_init_helpers():
    flag = register_with_taints([Taint("nvidia.com/gpu", "present"), Taint("x", "", "NoExecute")],
                                {"NoSchedule": "NoSchedule", "NoExecute": "NoExecute"})
    assert flag == "--register-with-taints=nvidia.com/gpu=present:NoSchedule,x=:NoExecute"
    script = base64.b64decode(cloud_init(flag)).decode()
    assert script.splitlines()[-1] == f'bash /var/run/oke-init.sh --kubelet-extra-args "{flag}"'


# --- kubeconfig ---------------------------------------------------------------------------------------------------

def _unsecret(value):
    assert value[_SIG] == _SECRET_SIG
    return value["value"]


def test_kubeconfig_uses_the_private_endpoint_and_oci_cli_tokens():
    registrations, outputs = run_program("oci-prod", PROD)
    provider = next(r for r in registrations if r.type == "pulumi:providers:kubernetes")
    kubeconfig = json.loads(_unsecret(provider.inputs["kubeconfig"]))
    cluster = kubeconfig["clusters"][0]["cluster"]
    assert cluster == {"server": "https://10.0.0.2:6443", "certificate-authority-data": "T0ZGTElORQ=="}
    exec_ = kubeconfig["users"][0]["user"]["exec"]
    cluster_id = fake_id("oci:ContainerEngine/cluster:Cluster", "ml-prod-oke-cluster")
    assert exec_["command"] == "oci"
    assert exec_["args"] == ["ce", "cluster", "generate-token", "--cluster-id", cluster_id, "--region", "us-ashburn-1"]
    assert kubeconfig["current-context"] == "ml-prod-oke"
    assert outputs["kubeconfig"] == "[secret]"


def test_build_kubeconfig_is_a_valid_exec_kubeconfig():
    config = yaml.safe_load(build_kubeconfig("c", "ocid1.cluster.x", "192.0.2.10:6443", "Q0E=", "eu-frankfurt-1"))
    assert config["clusters"][0]["cluster"]["server"] == "https://192.0.2.10:6443"
    assert config["contexts"][0]["context"] == {"cluster": "c", "user": "c-user"}
    assert config["users"][0]["user"]["exec"]["apiVersion"] == "client.authentication.k8s.io/v1beta1"


# --- Cluster Autoscaler: IAM and cloud values --------------------------------------------------------------------

def test_only_the_autoscaler_service_account_of_this_cluster_may_manage_node_pools(prod):
    # No dynamic group: it could only match every instance of the compartment (and so every pod on them).
    assert not prod.of_type("oci:Identity/dynamicGroup:DynamicGroup")
    policy = one(prod, "oci:Identity/policy:Policy", "ml-prod-oke-autoscaler")
    assert policy.inputs["compartmentId"] == PROD_EXTRAS["compartmentId"]
    compartment = PROD_EXTRAS["compartmentId"]
    cluster = one(prod, "oci:ContainerEngine/cluster:Cluster", "ml-prod-oke-cluster")
    cluster_id = fake_id(cluster.type, cluster.name)
    assert policy.inputs["statements"] == [
        f"Allow any-user to {verb} in compartment id {compartment} where ALL {{request.principal.type = 'workload', "
        f"request.principal.namespace = 'kube-system', request.principal.service_account = 'cluster-autoscaler', "
        f"request.principal.cluster_id = '{cluster_id}'}}"
        for verb in ("manage cluster-node-pools", "manage instance-family", "use subnets",
                     "read virtual-network-family", "use vnics", "inspect compartments")]
    assert cluster.urn in policy.options["dependsOn"]


def test_autoscaler_values_name_every_node_pool_by_ocid(prod):
    values = one(prod, "kubernetes:helm.sh/v3:Release", "cluster-autoscaler-release").inputs["values"]
    assert values["cloudProvider"] == "oci"
    assert values["extraEnv"] == {"OCI_USE_WORKLOAD_IDENTITY": "true", "OCI_RESOURCE_PRINCIPAL_VERSION": "2.2",
                                  "OCI_RESOURCE_PRINCIPAL_REGION": "us-ashburn-1", "OCI_REGION": "us-ashburn-1"}
    assert values["rbac"]["serviceAccount"]["name"] == "cluster-autoscaler"  # the name the policy conditions on
    pools = {c.inputs["poolName"]: (c, n) for c, n in gpu_node_pools(prod)}
    expected = [{"name": fake_id(NODE_POOL, n.name), "minSize": c.inputs["minNodes"], "maxSize": c.inputs["maxNodes"]}
                for c, n in pools.values()]
    expected.append({"name": fake_id(NODE_POOL, "ml-prod-oke-system"), "minSize": 2, "maxSize": 4})
    assert sorted(values["autoscalingGroups"], key=lambda g: g["name"]) == sorted(expected, key=lambda g: g["name"])
    spot_id = fake_id(NODE_POOL, pools["a10-spot"][1].name)
    assert values["expanderPriorities"]["20"] == [f"^{re.escape(spot_id)}$"]
    assert len(values["expanderPriorities"]["10"]) == 3
    assert {values["extraArgs"][f"balancing-ignore-label_{i}"] for i in range(1, 5)} == {
        "displayName", "hostname", "internal_addr", "oci.oraclecloud.com/fault-domain"}


# --- OCI config checks ---------------------------------------------------------------------------------------------

def _raw(**oci):
    base = {"compartmentId": "ocid1.compartment.oc1..c",
            "gpuImageId": "ocid1.image.oc1.iad.g", "imageId": "ocid1.image.oc1.iad.i"}
    base.update(oci)
    return {
        "cloud": "oci",
        "cluster": {"name": "oke", "region": "us-ashburn-1", "authorizedNetworks": ["203.0.113.0/24"],
                    "oci": {k: v for k, v in base.items() if v is not None}},
        "gpuPools": [{"name": "h100", "instanceType": "BM.GPU.H100.8", "maxNodes": 2}],
        "teams": [{"name": "research", "quotas": {"h100": 16}}],
    }


def _problems(raw) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        validate(raw)
    return {p.path: p.message for p in info.value.problems}


@pytest.mark.parametrize("oci, path, fragment", [
    ({"gpuImageId": None}, "cluster.oci.gpuImageId", "is required on oci"),
    ({"imageId": None}, "cluster.oci.imageId", "is required on oci"),
    ({"gpuImageId": "ami-123"}, "cluster.oci.gpuImageId", "must be a image OCID"),
    # Only RDMA pools need the tenancy (their dynamic group); tests/clouds/test_oke_rdma.py covers its use.
    ({"tenancyId": "ocid1.compartment.oc1..t"}, "cluster.oci.tenancyId", "must be a tenancy OCID"),
    ({"vcnId": "ocid1.vcn.oc1.iad.v"}, "cluster.oci.nodeSubnetId", "is required with vcnId"),
    ({"nodeSubnetId": "ocid1.subnet.oc1.iad.s"}, "cluster.oci.vcnId", "is required with nodeSubnetId"),
    ({"vcnCidr": "10.0.0.0/20"}, "cluster.oci.vcnCidr", "must be a /16"),
    ({"vcnCidr": "10.0.0.1/16"}, "cluster.oci.vcnCidr", "is not an IPv4 network"),
])
def test_oci_block_errors(oci, path, fragment):
    found = _problems(_raw(**oci))
    assert path in found and fragment in found[path], found


def test_unsupported_kubernetes_minor_on_oke_lists_the_offered_ones():
    raw = _raw()
    raw["cluster"]["kubernetesVersion"] = "1.30"
    assert _problems(raw)["cluster.kubernetesVersion"] == (
        "'1.30' is not a version OKE offers here; allowed: 1.34, 1.35 (CloudProfile.kubernetes_versions, as of "
        "2026-12-03)")


def _from_zero_warnings(raw) -> list[str]:
    """Leaving out what the one team's quota leaves unreachable (warned at teams[].quotas), not the subject here."""
    return [w for w in validate(raw).warnings if not w.startswith("teams[].quotas.")]


def test_mixed_mig_pool_from_zero_warns_on_oke_only():
    raw = _raw()
    raw["gpuPools"] = [{"name": "a100", "instanceType": "BM.GPU.A100-v2.8", "maxNodes": 2,
                        "sharing": {"mode": "mig", "migProfile": "all-balanced"}}]
    raw["teams"] = [{"name": "research", "quotas": {"a100": 8}}]
    warnings = _from_zero_warnings(raw)
    assert len(warnings) == 1
    assert warnings[0].startswith("gpuPools[0].minNodes: pool 'a100' starts at 0 nodes but its pods ask for "
                                  "nvidia.com/mig-1g.10gb, nvidia.com/mig-2g.20gb, nvidia.com/mig-3g.40gb")
    raw["gpuPools"][0]["minNodes"] = 1
    assert _from_zero_warnings(raw) == []
    # Time-slicing still advertises nvidia.com/gpu, which the template counts: no warning.
    raw["gpuPools"][0].update(minNodes=0, sharing={"mode": "time-slicing", "replicas": 4})
    assert _from_zero_warnings(raw) == []
