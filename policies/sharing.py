"""How a pool's GPUs are really shared: declared, set on the cloud pool (GKE), or configured in the device
plugin entry its nodes select through the GPU Operator."""
from __future__ import annotations

from policies import charts
from policies.graph import Graph, Pool
from policies.k8s import yaml_text
from policies.props import get, mapping

DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
_MODES = {"timeSlicing": "time-slicing", "mps": "mps"}


def _plugin_entry_modes(graph: Graph, pool: Pool) -> set[str]:
    modes = set()
    for release in charts.releases(graph, charts.GPU_OPERATOR):
        config = mapping(get(release.values, "devicePlugin.config"))
        entry = pool.label(DEVICE_PLUGIN_CONFIG_LABEL) or get(config, "default")
        document = yaml_text(get(mapping(get(config, "data")), str(entry))) if entry else None
        for key, mode in _MODES.items():
            if get(mapping(document), f"sharing.{key}.resources"):
                modes.add(mode)
    return modes


def sharing_modes(graph: Graph, pool: Pool) -> set[str]:
    """Every sharing mode in effect on `pool` ("time-slicing", "mps"); empty for whole GPUs or MIG."""
    modes = {pool.sharing} & set(_MODES.values())
    if pool.shape is not None and (cloud := pool.shape.sharing(pool.node_pool.props)):
        modes.add(cloud)
    return modes | _plugin_entry_modes(graph, pool)
