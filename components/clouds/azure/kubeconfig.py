"""AKS kubeconfigs: the user credentials AKS returns, made usable by a non-interactive `pulumi up`."""
from __future__ import annotations

import base64

import yaml

# The application id of the AKS AAD server: the audience of every token an Entra ID-enabled cluster accepts.
AKS_AAD_SERVER_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"


def kubeconfig_from_credentials(kubeconfigs: list, aad: bool) -> str:
    """The first kubeconfig of a `listManagedClusterUserCredentials` answer (base64), ready for the Kubernetes provider.

    On Entra ID clusters AKS returns a kubelogin exec user that logs in with a device code, which would hang a
    deployment; it is switched to the Azure CLI login the deployer already has.
    """
    raw = base64.b64decode(kubeconfigs[0]["value"]).decode()
    if not aad:
        return raw
    config = yaml.safe_load(raw)
    for user in config.get("users") or []:
        user["user"] = {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "kubelogin",
            "args": ["get-token", "--login", "azurecli", "--server-id", AKS_AAD_SERVER_ID],
            "interactiveMode": "Never",
            "provideClusterInfo": False,
        }}
    return yaml.safe_dump(config, sort_keys=False)
