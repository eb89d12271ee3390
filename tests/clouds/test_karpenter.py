"""EKS GPU pools made by Karpenter (`cluster.aws.provisioner: karpenter`): config checks, the planned charts, IAM,
NodePools and EC2NodeClasses (checked against the Karpenter v1 CRD schemas), and the GPU policies reading them."""
from __future__ import annotations

import json
from dataclasses import replace

import jsonschema
import pytest
import yaml

from components.provisioning.karpenter.component import CHART_VERSION
from components.clouds import PROFILES
from components.config import ConfigError, validate
from components.config.errors import Problems
from components.provisioning.karpenter.checks import provisioner_version_check
from gpu_platform.engine import plan_stack
from gpu_platform.engine.plan import read_stack_config

from support.clouds import NODE_POOL_SPEC, assert_node_pools_follow, by_pool, integral, karpenter_cluster
from support.helm import Helm, chart_package, extract_helm
from support.paths import ROOT, strict_schema, upstream
from support.plans import plan_fixture

NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
RELEASE = "kubernetes:helm.sh/v3:Release"
COMPATIBILITY = "karpenter/v1.14.1/compatibility.yaml"

_SELECTOR = {"type": "array", "minItems": 1, "maxItems": 30}
NODE_CLASS_SPEC = {
    "type": "object", "required": ["amiSelectorTerms", "securityGroupSelectorTerms", "subnetSelectorTerms"],
    "additionalProperties": False, "properties": {
        "role": {"type": "string", "minLength": 1},
        "amiSelectorTerms": {**_SELECTOR, "items": {"type": "object", "properties": {
            "alias": {"type": "string", "maxLength": 30,
                      "pattern": r"^(al2|al2023|bottlerocket|windows2019|windows2022)@.+$"}}}},
        "subnetSelectorTerms": {**_SELECTOR, "items": {"type": "object", "properties": {
            # Offline subnet ids are resource names (ml-dev-private-N-...), not subnet-...
            "id": {"type": "string", "pattern": r"subnet-[0-9a-z]+|^ml-dev-private-"}}}},
        "securityGroupSelectorTerms": {**_SELECTOR, "items": {"type": "object", "properties": {
            "id": {"type": "string", "pattern": r"sg-[0-9a-z]+"}}}},
        "metadataOptions": {"type": "object", "additionalProperties": False, "properties": {
            "httpEndpoint": {"enum": ["enabled", "disabled"]}, "httpProtocolIPv6": {"enum": ["enabled", "disabled"]},
            "httpPutResponseHopLimit": {"type": "integer", "minimum": 1, "maximum": 64},
            "httpTokens": {"enum": ["required", "optional"]}}},
        "blockDeviceMappings": {"type": "array", "maxItems": 50, "items": {
            "type": "object", "additionalProperties": False, "properties": {
                "deviceName": {"type": "string"}, "rootVolume": {"type": "boolean"},
                "ebs": {"type": "object", "additionalProperties": False, "properties": {
                    "deleteOnTermination": {"type": "boolean"}, "encrypted": {"type": "boolean"},
                    "volumeSize": {"type": "string", "pattern": r"^[1-9][0-9]{0,4}Gi$"},
                    "volumeType": {"enum": ["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"]}}}}}},
        "tags": {"type": "object", "additionalProperties": {"type": "string"}}}}


plan = plan_fixture("aws-dev", karpenter_cluster())
default_plan = plan_fixture("aws-dev")


def raw_config(**changes):
    raw = {k.split(":", 1)[1]: v for k, v in read_stack_config(ROOT / "stacks" / "Pulumi.aws-dev.yaml").items()
           if k.startswith("gpu-platform:")}
    raw["cluster"] = {**raw["cluster"], "aws": {"provisioner": "karpenter"}}
    raw.update(changes)
    return raw


def errors(raw):
    with pytest.raises(ConfigError) as info:
        validate(raw)
    return {p.path: p.message for p in info.value.problems}


# --- config -----------------------------------------------------------------------------------------------------

def test_default_is_the_cluster_autoscaler_with_node_groups(default_plan):
    assert [r.inputs["chart"] for r in default_plan.of_type(RELEASE) if "karpenter" in r.inputs["chart"]] == []
    assert any(r.inputs["chart"] == "cluster-autoscaler" for r in default_plan.of_type(RELEASE))
    assert {r.inputs["nodeGroupName"] for r in default_plan.of_type("aws:eks/nodeGroup:NodeGroup")} == {
        "system", "gpu-l4-dev", "gpu-a10g-train"}
    assert default_plan.of_type(NODE_POOL) == []


def test_unknown_provisioner_is_refused():
    raw = raw_config()
    raw["cluster"]["aws"] = {"provisioner": "karpenter-v0"}
    assert "allowed: cluster-autoscaler, karpenter" in errors(raw)["cluster.aws.provisioner"]


def test_reserved_pool_and_min_nodes_are_refused_all_at_once():
    raw = raw_config()
    raw["gpuPools"] = [{**raw["gpuPools"][0], "minNodes": 1},
                       {**raw["gpuPools"][1], "capacityType": "reserved"}]
    raw["cluster"]["aws"]["capacityBlocks"] = {"a10g-train": {"reservationId": "cr-0123456789abcdef0",
                                                              "availabilityZone": "us-west-2a"}}
    found = errors(raw)
    assert "must be 0 with cluster.aws.provisioner" in found["gpuPools[0].minNodes"]
    assert "'reserved' is not supported" in found["gpuPools[1].capacityType"]
    assert "allowed: on-demand, spot" in found["gpuPools[1].capacityType"]


def test_efa_is_refused_when_asked_for_and_auto_resolves_to_none():
    train = {"name": "h100", "instanceType": "p5.48xlarge", "maxNodes": 2, "workload": "training"}
    raw = raw_config(gpuPools=[{**train, "fabric": "efa"}],
                     teams=[{"name": "sandbox", "quotas": {"h100": 8}}])
    message = errors(raw)["gpuPools[0].fabric"]
    assert "efa is not available with cluster.aws.provisioner: karpenter" in message
    assert "EC2NodeClasses carry none of them" in message and message.endswith("allowed: none")
    # Without the key, `auto` is the best Karpenter nodes can get: none, not an error.
    raw = raw_config(gpuPools=[train], teams=[{"name": "sandbox", "quotas": {"h100": 8}}])
    assert [p.fabric for p in validate(raw).gpu_pools] == ["none"]
    raw["cluster"]["aws"] = {}
    assert [p.fabric for p in validate(raw).gpu_pools] == ["efa"]


def test_kubernetes_1_36_runs_karpenter():
    raw = raw_config()
    raw["cluster"] = {**raw["cluster"], "kubernetesVersion": "1.36"}
    assert validate(raw).cluster.kubernetes_version == "1.36"


def test_kubernetes_minor_beyond_the_pinned_release_is_refused():
    # Every EKS minor runs Karpenter 1.14.1 today; a minor EKS adds before the pin moves must be refused.
    eks = replace(PROFILES["aws"], provisioner_kubernetes_versions=("1.35",))
    problems = Problems()
    provisioner_version_check({"provisioner": "karpenter"}, "1.36", eks, problems)
    [problem] = problems.errors
    assert problem.path == "cluster.kubernetesVersion"
    assert problem.message == ("1.36 is not supported by the karpenter release the stack pins "
                               "(cluster.aws.provisioner); allowed with it: 1.35")
    problems = Problems()
    provisioner_version_check({"provisioner": "cluster-autoscaler"}, "1.36", eks, problems)
    assert problems.errors == []  # the Cluster Autoscaler follows every minor


def karpenter_supported_minors(matrix: dict) -> set[str]:
    """Minors the matrix's rows give to the pinned release (minimum Karpenter per minor) up to the release line's
    maxK8sVersion (the matrix generator's input, quoted in the file)."""
    def version(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.removeprefix(">=").strip().split(".") if part != "x")
    [line] = [row for source in matrix["sources"] if source["path"].startswith("hack/docs/compatibilitymatrix_gen")
              for row in yaml.load(source["lines"], Loader=yaml.BaseLoader)]
    assert version(line["appVersion"]) == version(CHART_VERSION)[:2], "the matrix is for another Karpenter minor"
    return {row["kubernetes"] for row in matrix["matrix"]
            if version(row["karpenter"]) <= version(CHART_VERSION)
            and version(line["minK8sVersion"]) <= version(row["kubernetes"]) <= version(line["maxK8sVersion"])}


def test_supported_minors_are_those_of_the_pinned_release():
    matrix = yaml.load(upstream(COMPATIBILITY).read_text(), Loader=yaml.BaseLoader)
    assert matrix["release"] == CHART_VERSION
    supported = karpenter_supported_minors(matrix)
    assert supported >= set(matrix["supports"])
    eks = PROFILES["aws"]
    assert set(eks.provisioner_kubernetes_versions) == supported & set(eks.kubernetes_versions)


def test_other_clouds_have_no_provisioner_key():
    raw = read_stack_config(ROOT / "stacks" / "Pulumi.gcp-dev.yaml")
    raw = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("gpu-platform:")}
    raw["cluster"] = {**raw["cluster"], "gcp": {**raw["cluster"].get("gcp", {}), "provisioner": "karpenter"}}
    assert "cluster.gcp.provisioner" in errors(raw)


# --- plan -------------------------------------------------------------------------------------------------------

def test_karpenter_replaces_autoscaler_and_gpu_node_groups(plan):
    charts = {r.inputs["chart"]: r for r in plan.of_type(RELEASE)}
    assert "cluster-autoscaler" not in charts
    crds, controller = charts["oci://public.ecr.aws/karpenter/karpenter-crd"], charts["oci://public.ecr.aws/karpenter/karpenter"]
    assert crds.inputs["version"] == controller.inputs["version"] == CHART_VERSION
    assert CHART_VERSION.startswith("1.")
    assert controller.inputs["skipCrds"] is True and controller.inputs["namespace"] == "kube-system"
    values = controller.inputs["values"]
    assert values["settings"]["clusterName"] == "ml-dev"
    assert values["serviceAccount"] == {"name": "karpenter", "annotations": {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::000000000000:role/ml-dev-karpenter"}}
    assert values["nodeSelector"] == {"gpu-platform.io/node-role": "system"}
    # The system node group stays; GPU capacity is Karpenter's.
    assert [r.inputs["nodeGroupName"] for r in plan.of_type("aws:eks/nodeGroup:NodeGroup")] == ["system"]
    assert not [r for r in plan.of_type("aws:iam/role:Role") if "cluster-autoscaler" in r.name]


def test_objects_follow_the_charts_and_sit_under_their_pools(plan):
    assert_node_pools_follow(plan, NODE_POOL, "ml-dev", "karpenter-crds", "karpenter-release")


def test_node_pools_carry_the_pool(plan):
    pools = by_pool(plan, NODE_POOL)
    assert set(pools) == {"l4-dev", "a10g-train"}
    spot, on_demand = pools["l4-dev"].inputs["spec"], pools["a10g-train"].inputs["spec"]
    assert spot["template"]["spec"]["requirements"] == [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6.xlarge"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]
    assert on_demand["template"]["spec"]["requirements"][1]["values"] == ["on-demand"]
    assert spot["template"]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "gpu-platform.io/spot", "value": "true", "effect": "NoSchedule"}]
    assert on_demand["template"]["metadata"]["labels"]["gpu-platform.io/pool"] == "a10g-train"
    # maxNodes x GPUs per node: g6.xlarge has 1 L4, g5.12xlarge 4 A10G; both pools have maxNodes 2.
    assert spot["limits"] == {"nvidia.com/gpu": "2"} and on_demand["limits"] == {"nvidia.com/gpu": "8"}
    assert integral(spot["weight"]) > integral(on_demand["weight"])
    for spec in (spot, on_demand):
        assert spec["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "15m",
                                      "budgets": [{"nodes": "1"}]}
        assert spec["template"]["spec"]["expireAfter"] == "Never"
        assert spec["template"]["spec"]["nodeClassRef"]["group"] == "karpenter.k8s.aws"


def test_node_classes_lock_metadata_and_size_the_image_volume(plan):
    for pool, node_class in by_pool(plan, NODE_CLASS).items():
        spec = integral(node_class.inputs["spec"])
        assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
        assert spec["metadataOptions"]["httpTokens"] == "required"
        assert spec["blockDeviceMappings"] == [{"deviceName": "/dev/xvda", "ebs": {
            "volumeSize": "200Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}}]
        assert spec["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
        # Offline, a subnet's id is its resource name: the three private subnets, nothing public.
        assert [t["id"].rsplit("-", 1)[0] for t in spec["subnetSelectorTerms"]] == [
            f"ml-dev-private-{i}" for i in range(3)]
        assert spec["securityGroupSelectorTerms"][0]["id"].startswith("sg-")
        assert spec["role"] and spec["tags"] == {"gpu-platform.io:pool": pool}


def test_bottlerocket_pools_get_the_bottlerocket_alias_and_data_volume():
    plan = plan_stack("aws-dev", config_overrides=karpenter_cluster(amiType="BOTTLEROCKET_x86_64_NVIDIA"))
    node_class = by_pool(plan, NODE_CLASS)["l4-dev"].inputs["spec"]
    assert node_class["amiSelectorTerms"] == [{"alias": "bottlerocket@latest"}]
    assert node_class["blockDeviceMappings"][0]["deviceName"] == "/dev/xvdb"
    labels = by_pool(plan, NODE_POOL)["l4-dev"].inputs["spec"]["template"]["metadata"]["labels"]
    assert labels["nvidia.com/gpu.deploy.driver"] == "false"


@pytest.mark.parametrize("type_, schema", [(NODE_POOL, NODE_POOL_SPEC), (NODE_CLASS, NODE_CLASS_SPEC)])
def test_objects_match_the_karpenter_v1_schema(plan, type_, schema):
    objects = plan.of_type(type_)
    assert objects
    for obj in objects:
        jsonschema.validate(integral(obj.inputs["spec"]), schema)


def test_schema_check_catches_a_misspelt_field(plan):
    spec = integral(by_pool(plan, NODE_POOL)["l4-dev"].inputs["spec"])
    spec["disruption"] = {**spec["disruption"], "consolidationPolicy": "WhenUnderutilized"}  # the v1beta1 spelling
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(spec, NODE_POOL_SPEC)


def test_label_restrictions_of_the_crd_hold(plan):
    """The NodePool CRD's CEL rules on template labels: no kubernetes.io (outside node.kubernetes.io), k8s.io or
    karpenter.sh domains."""
    for node_pool in plan.of_type(NODE_POOL):
        for key in node_pool.inputs["spec"]["template"]["metadata"]["labels"]:
            domain = key.split("/", 1)[0] if "/" in key else ""
            assert not (domain.endswith("kubernetes.io") and not domain.endswith("node.kubernetes.io")), key
            assert not domain.endswith("k8s.io") and not domain.endswith("karpenter.sh"), key


# --- IAM --------------------------------------------------------------------------------------------------------

def test_controller_role_is_scoped_to_this_cluster(plan):
    policy = json.loads(next(r for r in plan.of_type("aws:iam/rolePolicy:RolePolicy")
                             if r.name == "ml-dev-karpenter").inputs["policy"])
    statements = {s["Sid"]: s for s in policy["Statement"]}
    owned = "aws:ResourceTag/kubernetes.io/cluster/ml-dev"
    assert statements["AllowScopedDeletion"]["Condition"]["StringEquals"] == {owned: "owned"}
    assert statements["AllowScopedEC2InstanceActionsWithTags"]["Condition"]["StringEquals"] == {
        "aws:RequestTag/kubernetes.io/cluster/ml-dev": "owned", "aws:RequestTag/eks:eks-cluster-name": "ml-dev"}
    assert statements["AllowPassingInstanceRole"]["Resource"] == "arn:aws:iam::000000000000:role/ml-dev-node"
    assert statements["AllowAPIServerEndpointDiscovery"]["Resource"].endswith(":cluster/ml-dev")
    assert statements["AllowRegionalReadActions"]["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-west-2"}}
    # Anything that creates, changes or deletes carries a condition; only reads (Describe, Get, List) run unconditioned.
    for sid, statement in statements.items():
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        writes = [a for a in actions if not a.split(":")[1].startswith(("Describe", "Get", "List"))]
        if statement["Resource"] == "*" and writes:
            assert "Condition" in statement, sid
    assert not any("sqs:" in a for s in statements.values() for a in s["Action"])
    trust = json.loads(next(r for r in plan.of_type("aws:iam/role:Role") if r.name == "ml-dev-karpenter")
                       .inputs["assumeRolePolicy"])
    assert next(iter(trust["Statement"][0]["Condition"]["StringEquals"].values())) == \
        "system:serviceaccount:kube-system:karpenter"


@pytest.mark.parametrize("type_, crd", [(NODE_POOL, "karpenter.sh_nodepools.yaml"),
                                        (NODE_CLASS, "karpenter.k8s.aws_ec2nodeclasses.yaml")])
def test_objects_match_the_pinned_release_crds(plan, type_, crd):
    """Every field we set exists, with its type, enum and pattern, in the CRDs of the release we pin (closed wherever
    the CRD lists properties); the subsets above keep that check when ../shared is absent."""
    served = {v["name"]: v for v in yaml.safe_load(upstream(f"karpenter/v{CHART_VERSION}/crds/{crd}").read_text())
              ["spec"]["versions"] if v.get("served")}
    schema = strict_schema(served["v1"]["schema"]["openAPIV3Schema"]["properties"]["spec"])
    for obj in plan.of_type(type_):
        spec = integral(obj.inputs["spec"])
        # Offline, ids are resource names (ml-dev-private-0-...); EC2 gives subnet-... and sg-... ids.
        for term in spec.get("subnetSelectorTerms", []):
            term["id"] = "subnet-0123456789abcdef0"
        jsonschema.validate(spec, schema)


def test_the_pinned_controller_chart_renders_our_values(plan, tmp_path):
    """The planned release's values through the real Helm and the pinned package: the controller runs as the IRSA
    service account, for this cluster, on the system node group."""
    controller = next(r for r in plan.of_type(RELEASE) if r.inputs["chart"].endswith("/karpenter"))
    package = chart_package(controller.inputs["chart"], controller.inputs["version"])
    assert package.exists(), f"no package of karpenter {controller.inputs['version']} in {package.parent}"
    docs = Helm(extract_helm(tmp_path), tmp_path).template(package, controller.inputs["name"],
                                                           controller.inputs["namespace"], controller.inputs["values"])
    [account] = [d for d in docs if d["kind"] == "ServiceAccount"]
    assert account["metadata"]["name"] == "karpenter"
    assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].endswith(":role/ml-dev-karpenter")
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "karpenter" and pod["priorityClassName"] == "system-cluster-critical"
    assert pod["nodeSelector"]["gpu-platform.io/node-role"] == "system"
    [container] = pod["containers"]
    assert {"name": "CLUSTER_NAME", "value": "ml-dev"} in container["env"]
    assert container["image"].startswith(f"public.ecr.aws/karpenter/controller:{CHART_VERSION}@")
