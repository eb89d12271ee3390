"""JSON schemas of the `networking.gke.io/v1` kinds GKE itself serves on multi-networking clusters (no chart installs
them, and ../shared/upstream has no copy), written from GKE's network API Go types (kubernetes/cloud-provider-gcp
vendors them: `Network` network_types.go, `GKENetworkParamSet` gkenetworkparamset_types.go): field names, required
fields and enums as their kubebuilder markers state; unknown fields refused, as a structural CRD prunes them."""
from __future__ import annotations

API = "networking.gke.io/v1"
_META = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

_NETWORK_SPEC = {
    "type": "object", "additionalProperties": False, "required": ["type"],
    "properties": {
        "type": {"enum": ["L2", "L3", "Device"]},
        "provider": {"enum": ["GKE"]},
        "nodeInterfaceMatcher": {"type": "object", "properties": {"interfaceName": {"type": "string", "minLength": 1}}},
        "l2NetworkConfig": {"type": "object"},
        "networkLifecycle": {"enum": ["AnthosManaged", "UserManaged"]},
        "routes": {"type": "array", "items": {"type": "object", "required": ["to"]}},
        "gateway4": {"type": "string"},
        "dnsConfig": {"type": "object", "required": ["nameservers"]},
        "externalDHCP4": {"type": "boolean"},
        "parametersRef": {"type": "object", "additionalProperties": False, "required": ["group", "kind", "name"],
                          "properties": {"group": {"type": "string"}, "kind": {"type": "string"},
                                         "name": {"type": "string"}, "namespace": {"type": "string"}}},
    },
}
_PARAM_SET_SPEC = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "vpc": {"type": "string"}, "vpcSubnet": {"type": "string"},
        "deviceMode": {"enum": ["DPDK-VFIO", "NetDevice", "RDMA"]},
        "podIPv4Ranges": {"type": "object", "required": ["rangeNames"],
                          "properties": {"rangeNames": {"type": "array", "minItems": 1, "items": {"type": "string"}}}},
        "networkAttachment": {"type": "string"},
    },
}


def _kind(kind: str, spec: dict) -> dict:
    return {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
            "properties": {"apiVersion": {"const": API}, "kind": {"const": kind}, "metadata": _META, "spec": spec}}


SCHEMAS: dict[tuple[str, str], dict] = {
    (API, "Network"): _kind("Network", _NETWORK_SPEC),
    (API, "GKENetworkParamSet"): _kind("GKENetworkParamSet", _PARAM_SET_SPEC),
}
