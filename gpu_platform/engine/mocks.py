"""Strict provider mocks: resources echo their inputs plus the outputs later resources read; unknown invokes fail."""
from __future__ import annotations

import base64
import hashlib
import json
from typing import Any, Callable

import pulumi
import yaml

from gpu_platform.engine.zones import zones


class UnmockedInvokeError(RuntimeError):
    """An invoke the offline engine has no answer for: the plan would silently use `{}` otherwise."""


# Outputs a real provider computes that the program reads back (e.g. to build a kubeconfig).
_COMPUTED: dict[str, Callable[[str, dict], dict]] = {
    "aws:eks/cluster:Cluster": lambda name, inputs: {
        "endpoint": f"https://{name}.gr7.offline.eks.amazonaws.com",
        "certificateAuthority": {"data": "T0ZGTElORQ=="},
        "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.offline.amazonaws.com/id/{name.upper()}"}]}],
        "arn": f"arn:aws:eks:offline:000000000000:cluster/{inputs.get('name', name)}",
        # EKS makes the cluster security group; Karpenter's EC2NodeClass selects it by id.
        "vpcConfig": {**inputs.get("vpcConfig", {}),
                      "clusterSecurityGroupId": "sg-" + hashlib.sha256(name.encode()).hexdigest()[:17]},
    },
    "aws:iam/role:Role": lambda name, _: {"arn": f"arn:aws:iam::000000000000:role/{name}"},
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": lambda name, _: {
        "arn": f"arn:aws:iam::000000000000:oidc-provider/{name}"},
    "aws:eks/nodeGroup:NodeGroup": lambda name, _: {
        "resources": [{"autoscalingGroups": [{"name": f"eks-{name}-asg"}]}]},
    "aws:kms/key:Key": lambda name, _: {"arn": f"arn:aws:kms:offline:000000000000:key/{name}"},
    "aws:ec2/launchTemplate:LaunchTemplate": lambda name, _: {"latestVersion": 1},
    "azure-native:containerservice:ManagedCluster": lambda name, inputs: {
        "fqdn": f"{name}.hcp.offline.azmk8s.io", "privateFQDN": f"{name}.privatelink.offline.azmk8s.io",
        "oidcIssuerProfile": {"issuerURL": f"https://offline.oic.prod-aks.azure.com/{name}/"},
        "identityProfile": {"kubeletidentity": {"objectId": "00000000-0000-0000-0000-000000000001",
                                                 "clientId": "00000000-0000-0000-0000-000000000002"}},
    },
    "gcp:serviceaccount/account:Account": lambda name, inputs: {
        "email": f"{inputs.get('accountId', name)}@{inputs.get('project', 'offline')}.iam.gserviceaccount.com"},
    "gcp:container/cluster:Cluster": lambda name, _: {
        "endpoint": "10.0.0.2", "masterAuth": {"clusterCaCertificate": "T0ZGTElORQ=="},
    },
    "oci:ContainerEngine/cluster:Cluster": lambda name, inputs: {
        "endpoints": [{"privateEndpoint": "10.0.0.2:6443",
                       "publicEndpoint": "192.0.2.10:6443" if (inputs.get("endpointConfig") or {}).get(
                           "isPublicIpEnabled") else ""}],
    },
    "random:index/randomPassword:RandomPassword": lambda name, _: {"result": f"offline-{name}"},
}

# Invokes the program may make, with offline answers.
_INVOKES: dict[str, Callable[[dict], dict]] = {
    "aws:index/getCallerIdentity:getCallerIdentity": lambda _: {
        "accountId": "000000000000", "arn": "arn:aws:iam::000000000000:user/offline", "userId": "offline", "id": "0"},
    # Offline every subnet id lies in the zone asked for: the first id named answers.
    "aws:ec2/getSubnets:getSubnets": lambda args: {
        "ids": [v for f in args.get("filters", []) if f["name"] == "subnet-id" for v in f["values"]][:1], "id": "s"},
    "azure-native:authorization:getClientConfig": lambda _: {
        "clientId": "offline", "objectId": "00000000-0000-0000-0000-000000000000",
        "subscriptionId": "00000000-0000-0000-0000-000000000000", "tenantId": "00000000-0000-0000-0000-000000000000"},
    "azure-native:containerservice:listManagedClusterUserCredentials": lambda args: {"kubeconfigs": [{
        "name": "clusterUser", "value": _offline_kubeconfig(f"https://{args['resourceName']}.hcp.offline.azmk8s.io:443")}]},
    "oci:Core/getServices:getServices": lambda _: {"id": "services", "services": [
        {"id": "ocid1.service.oc1.offline.all", "name": "All OFF Services In Oracle Services Network",
         "cidrBlock": "all-off-services-in-oracle-services-network", "description": "All OFF Services"},
        {"id": "ocid1.service.oc1.offline.objectstorage", "name": "OCI OFF Object Storage",
         "cidrBlock": "oci-off-objectstorage", "description": "OCI OFF Object Storage"}]},
    "oci:ContainerEngine/getClusterKubeConfig:getClusterKubeConfig": lambda args: {
        "id": args["clusterId"], "clusterId": args["clusterId"], "endpoint": args.get("endpoint", ""),
        # OKE returns plain YAML (not base64); only the CA is read from it.
        "content": "apiVersion: v1\nkind: Config\nclusters:\n- name: offline\n  cluster:\n"
                   "    server: https://10.0.0.2:6443\n    certificate-authority-data: T0ZGTElORQ==\n"},
}

# Invokes whose answer depends on the region (of the invoke's provider, else the stack's): real zone names, so a
# stack naming a real zone (a Capacity Block's AZ) plans offline as it applies. Azure zones are plain "1".."3",
# checked in config; no Azure invoke asks for them.
_ZONE_INVOKES: dict[str, tuple[str, Callable[[tuple[str, ...], dict], dict]]] = {
    "aws:index/getAvailabilityZones:getAvailabilityZones": ("aws", lambda names, _: {
        "names": list(names), "zoneIds": [f"offline-az{i}" for i, _ in enumerate(names, 1)], "id": "zones"}),
    "gcp:compute/getZones:getZones": ("gcp", lambda names, args: {
        "names": list(names), "project": args.get("project", "offline"), "id": "zones"}),
    "oci:Identity/getAvailabilityDomains:getAvailabilityDomains": ("oci", lambda names, args: {
        "availabilityDomains": [{"name": name, "id": f"ad{i}", "compartmentId": args.get("compartmentId", "")}
                                for i, name in enumerate(names, 1)],
        "compartmentId": args.get("compartmentId", ""), "id": "ads"}),
}


def _offline_kubeconfig(server: str) -> str:
    """A base64 kubeconfig shaped like the ones clouds return, with a client certificate user."""
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "offline",
              "clusters": [{"name": "offline", "cluster": {"server": server, "certificate-authority-data": "T0ZGTElORQ=="}}],
              "contexts": [{"name": "offline", "context": {"cluster": "offline", "user": "offline"}}],
              "users": [{"name": "offline", "user": {"client-certificate-data": "T0ZGTElORQ==",
                                                     "client-key-data": "T0ZGTElORQ=="}}]}
    return base64.b64encode(yaml.safe_dump(config).encode()).decode()


def fake_id(type_: str, name: str) -> str:
    return f"{name}-{hashlib.sha256(f'{type_}::{name}'.encode()).hexdigest()[:8]}"


class StrictMocks(pulumi.runtime.Mocks):
    """Mocks that record every resource's inputs and refuse invokes they do not know."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.inputs: dict[tuple[str, str], dict[str, Any]] = {}
        self.config = config or {}  # the stack config as the CLI passes it, for regions
        self.refused: set[tuple[str, str]] = set()  # (type, name) whose inputs the provider schema refuses

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.inputs[(args.typ, args.name)] = args.inputs
        if (args.typ, args.name) in self.refused:
            return fake_id(args.typ, args.name), {}
        computed = _COMPUTED.get(args.typ)
        outputs = {**args.inputs, **(computed(args.name, args.inputs) if computed else {})}
        return fake_id(args.typ, args.name), outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token in _ZONE_INVOKES:
            cloud, zone_answer = _ZONE_INVOKES[args.token]
            return zone_answer(zones(cloud, self.region(cloud, args.provider)), args.args)
        answer = _INVOKES.get(args.token)
        if answer is None:
            raise UnmockedInvokeError(f"invoke {args.token} has no offline answer; add one to "
                                      "gpu_platform/engine/mocks.py or avoid the invoke")
        return answer(args.args)

    def region(self, package: str, provider_ref: str | None) -> str:
        """The invoke's region: its explicit provider's `region`, else `<package>:region`, else `cluster.region`."""
        if provider_ref:
            urn = provider_ref.rsplit("::", 1)[0]
            type_, name = urn.split("::")[2].split("$")[-1], urn.split("::")[3]
            region = self.inputs.get((type_, name), {}).get("region")
            if region:
                return region
        cluster = self.config.get("gpu-platform:cluster") or {}
        if isinstance(cluster, str):
            cluster = json.loads(cluster)
        return self.config.get(f"{package}:region") or cluster.get("region", "")
