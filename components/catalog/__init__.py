"""The GPU catalog: GPU models, and each cloud's GPU instance types (components/clouds/<cloud>/catalog.py), with
lookups that say what missed."""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from components import clouds

from .gpus import GPU_MODELS
from .types import GpuModel, InstanceType, MigProfile

__all__ = [
    "CLOUDS", "CatalogError", "GpuModel", "InstanceType", "MigProfile", "close_matches",
    "equivalents", "format_table", "gpu_model", "gpu_models", "instance_types", "lookup",
]

CLOUDS = clouds.CLOUDS

_COLUMNS = (
    "cloud", "instance type", "GPU", "GPUs", "GPU mem GiB", "vCPU", "mem GiB", "interconnect",
    "MIG profiles",
)
_NUMERIC_COLUMNS = frozenset({"GPUs", "GPU mem GiB", "vCPU", "mem GiB"})


class CatalogError(LookupError):
    """A cloud, instance type or GPU model the catalog does not know."""

    def __init__(self, message: str, matches: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.matches = list(matches)


def _table(cloud: str) -> dict[str, InstanceType]:
    if cloud not in CLOUDS:
        raise CatalogError(f"unknown cloud {cloud!r}; allowed clouds: {', '.join(CLOUDS)}")
    # Load only the asked cloud's table: planning an AWS stack never imports the others.
    return clouds.package(cloud).instance_types()


def _suggest(name: str, candidates: Iterable[str]) -> list[str]:
    # Match case-insensitively (Azure sizes often get typed in lower case), answer in real spelling.
    by_lower = {candidate.lower(): candidate for candidate in candidates}
    return [by_lower[m] for m in difflib.get_close_matches(name.lower(), by_lower, n=5)]


def _natural_key(name: str) -> list[str | int]:
    # Sort g2-standard-8 before g2-standard-12, and g5.xlarge (AWS's 1x size) before g5.2xlarge.
    name = re.sub(r"\.xlarge$", ".1xlarge", name)
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def close_matches(cloud: str, name: str) -> list[str]:
    """Up to five of ``cloud``'s instance types spelled like ``name``, closest first."""
    return _suggest(name, _table(cloud))


def lookup(cloud: str, instance_type: str) -> InstanceType:
    """The catalog row of ``instance_type`` on ``cloud``; raises CatalogError naming the miss."""
    table = _table(cloud)
    if instance_type in table:
        return table[instance_type]
    foreign = _on_another_cloud(cloud, instance_type)
    if foreign is not None:
        matches = equivalents(foreign, cloud)
        same = f"{foreign.gpus}x {foreign.gpu.name}"
        advice = (f"the same GPUs on {cloud}: {', '.join(matches)}" if matches
                  else f"{cloud} has no {foreign.gpu.name} instance type; run `gpu-platform catalog --cloud {cloud}`")
        raise CatalogError(f"{instance_type!r} is an instance type of {foreign.cloud} ({same}), not of {cloud}; {advice}",
                           matches)
    matches = _suggest(instance_type, table)
    advice = (
        f"close matches: {', '.join(matches)}" if matches
        else f"run `gpu-platform catalog --cloud {cloud}` to list them"
    )
    raise CatalogError(f"unknown {cloud} instance type {instance_type!r}; {advice}", matches)


def _on_another_cloud(cloud: str, instance_type: str) -> InstanceType | None:
    """The row of another cloud that the name spells (in any case): a stack moved between clouds keeps its types.
    Loaded only on a miss, so a valid stack still imports its own cloud's table alone."""
    wanted = instance_type.lower()
    return next((row for other in CLOUDS if other != cloud for name, row in _table(other).items()
                 if name.lower() == wanted), None)


def equivalents(row: InstanceType, cloud: str, limit: int = 3) -> list[str]:
    """Up to ``limit`` of ``cloud``'s types with the same GPU model, nearest GPU count first, then those that match
    whether ``row`` has a fast fabric."""
    same_gpu = [other for other in _table(cloud).values() if other.gpu.name == row.gpu.name]
    ranked = sorted(same_gpu, key=lambda other: (abs(other.gpus - row.gpus),
                                                 (other.interconnect is None) != (row.interconnect is None),
                                                 _natural_key(other.name)))
    return [other.name for other in ranked[:limit]]


def instance_types(cloud: str | None = None) -> list[InstanceType]:
    """All catalogued instance types, or one cloud's, sorted by cloud then name (numbers by value)."""
    names = CLOUDS if cloud is None else (cloud,)
    rows = [row for c in names for row in _table(c).values()]
    return sorted(rows, key=lambda row: (row.cloud, _natural_key(row.name)))


def gpu_model(name: str) -> GpuModel:
    """The GPU model called ``name``, e.g. ``H100-80GB``; raises CatalogError naming the miss."""
    if name in GPU_MODELS:
        return GPU_MODELS[name]
    matches = _suggest(name, GPU_MODELS)
    advice = f"close matches: {', '.join(matches)}" if matches else f"known: {', '.join(GPU_MODELS)}"
    raise CatalogError(f"unknown GPU model {name!r}; {advice}", matches)


def gpu_models() -> list[GpuModel]:
    """All catalogued GPU models, sorted by name."""
    return sorted(GPU_MODELS.values(), key=lambda gpu: gpu.name)


def format_table(cloud: str | None = None) -> str:
    """An aligned text table of the catalogued instance types, or one cloud's."""
    rows = [_COLUMNS] + [
        (
            row.cloud, row.name, row.gpu.name, str(row.gpus), str(row.gpu.memory_gib),
            str(row.vcpus), str(row.memory_gib), row.interconnect or "-",
            ", ".join(p.name for p in row.gpu.mig_profiles) or "-",
        )
        for row in instance_types(cloud)
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(
            cell.rjust(width) if column in _NUMERIC_COLUMNS else cell.ljust(width)
            for cell, width, column in zip(row, widths, _COLUMNS)
        ).rstrip()
        for row in rows
    )
