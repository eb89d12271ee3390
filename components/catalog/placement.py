"""Whether a MIG layout fits one GPU: compute slices, memory slices and the positions NVIDIA lets each profile take.

Counting compute slices alone let `{1g.20gb: 4, 1g.10gb: 1}` through on an A100-80GB (5 compute slices, but 9 of 8
memory slices), and `{4g.40gb: 1, 3g.40gb: 1, ...}` style layouts fit only where their instances can be placed.
Placements follow NVIDIA's MIG user guide: an instance of m memory slices starts at a multiple of m, and its compute
slices (from the same start) must exist: so on an A100 a 3g instance may start at 0 or 4, a 4g one only at 0, a 2g
one at 0, 2 or 4, and a one-slice 1g instance anywhere but the last memory slot.
"""
from __future__ import annotations

import re

from .types import GpuModel

_NAME = re.compile(r"(\d+)g\.(\d+)gb(\+me)?")


def slices(gpu: GpuModel) -> tuple[int, int]:
    """(compute slices, memory slices) of a MIG-capable GPU: 7 and 8, or 4 and 4 on A30-class parts."""
    compute = max(int(_NAME.match(p.name).group(1)) for p in gpu.mig_profiles)
    return compute, (8 if compute == 7 else compute)


def _shape(gpu: GpuModel, profile: str) -> tuple[int, int, tuple[int, ...]]:
    """(compute slices, memory slices, allowed start slots) of one profile on `gpu`."""
    compute_total, memory_total = slices(gpu)
    match = _NAME.fullmatch(profile)
    compute, gib = int(match.group(1)), int(match.group(2))
    memory = max(1, round(gib * memory_total / gpu.memory_gib))
    starts = tuple(start for start in range(0, memory_total - memory + 1, memory) if start + compute <= compute_total)
    return compute, memory, starts


def placement_problem(gpu: GpuModel, layout: dict[str, int]) -> str | None:
    """Why `layout` ({profile: count}) cannot be created on one `gpu`, or None when it can."""
    compute_total, memory_total = slices(gpu)
    shapes = {name: _shape(gpu, name) for name in layout}
    compute = sum(shapes[n][0] * c for n, c in layout.items())
    memory = sum(shapes[n][1] * c for n, c in layout.items())
    if compute > compute_total:
        return f"uses {compute} compute slices but a {gpu.name} has {compute_total}"
    if memory > memory_total:
        return f"uses {memory} memory slices but a {gpu.name} has {memory_total}"
    instances = sorted((shapes[n] for n, c in layout.items() for _ in range(c)), key=lambda s: -s[1])
    if not _place(instances, [False] * memory_total):
        return f"fits in {gpu.name}'s slices, but its instances cannot all be placed (MIG placement rules)"
    return None


def _place(instances: list[tuple[int, int, tuple[int, ...]]], used: list[bool]) -> bool:
    if not instances:
        return True
    _, memory, starts = instances[0]
    for start in starts:
        span = range(start, start + memory)
        if not any(used[i] for i in span):
            for i in span:
                used[i] = True
            if _place(instances[1:], used):
                return True
            for i in span:
                used[i] = False
    return False
