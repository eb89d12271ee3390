"""The components a Pulumi component package hosts (package/__main__.py), under the package's own type tokens.

The package's schema is inferred from these classes' `args` annotations by the SDK's analyzer; tests/
test_component_package.py keeps package/schema.json in step with them.
"""
import json
from typing import Any, Optional

import pulumi

from components.clouds.base import GpuNodePool, GpuNodePoolArgs
from components.gpu.operator import GpuOperator, GpuOperatorArgs
from components.observability.monitoring import GpuMonitoring, GpuMonitoringArgs
from components.scheduling.kueue.component import Kueue, KueueArgs
from components.tenancy.team import Team, TeamArgs

PACKAGE = "gpu-platform"
PACKAGE_VERSION = "0.1.0"  # pyproject.toml's version


def hosted(component: type[pulumi.ComponentResource], args_type: type) -> type[pulumi.ComponentResource]:
    """`component` as the package serves it: type `gpu-platform:index:<Name>`, args arriving as a dict."""

    class Hosted(component):  # type: ignore[misc, valid-type]
        # The engine matches a remote component's URN to the token in the schema, which is always `index`.
        TYPE = f"{PACKAGE}:index:{component.__name__}"

        def __init__(self, name: str, args: args_type,  # type: ignore[valid-type]
                     opts: Optional[pulumi.ResourceOptions] = None):
            # The provider passes the inputs as a dict keyed by the Args field names.
            values: Any = args
            super().__init__(name, values if isinstance(values, args_type) else args_type(**values), opts)

    Hosted.__name__ = Hosted.__qualname__ = component.__name__
    # The analyzer reads output docstrings from the class's source: point it at the component's own definition.
    Hosted.__module__ = component.__module__
    Hosted.__doc__ = component.__doc__
    return Hosted


COMPONENTS: list[type[pulumi.ComponentResource]] = [
    hosted(GpuNodePool, GpuNodePoolArgs),
    hosted(GpuOperator, GpuOperatorArgs),
    hosted(Team, TeamArgs),
    hosted(Kueue, KueueArgs),
    hosted(GpuMonitoring, GpuMonitoringArgs),
]


def schema() -> dict[str, Any]:
    """The package schema exactly as component_provider_host serves it, built without starting its gRPC server."""
    from pulumi.provider.experimental.component import ComponentProvider

    return json.loads(ComponentProvider(COMPONENTS, PACKAGE, version=PACKAGE_VERSION).schema)


if __name__ == "__main__":
    # Regenerate the checked-in schema: python -m components.provider > package/schema.json
    print(json.dumps(schema(), indent=2, sort_keys=True))
