"""Whether a MIG layout fits one GPU: its compute slices and its memory slices.

Counting compute slices alone let `{1g.20gb: 4, 1g.10gb: 1}` through on an A100-80GB: 5 of 7 compute slices, but
9 of its 8 memory slices, which mig-parted then fails to create on the node. A profile's memory slices follow from
its memory (`1g.20gb` on an 80 GB GPU is 2 of 8). With both counts within bounds, NVIDIA's placement rules (an
instance of m memory slices starts at a multiple of m and needs its compute slices from there) admit every layout
of the catalogued GPUs (an exhaustive search over them found no exception), so placement is not modelled.
"""
from __future__ import annotations


from .types import GpuModel, mig_shape



def slices(gpu: GpuModel) -> tuple[int, int]:
    """(compute slices, memory slices) of a MIG-capable GPU: 7 and 8, or 4 and 4 on A30-class parts."""
    compute = max(mig_shape(p.name).compute for p in gpu.mig_profiles)
    return compute, (8 if compute == 7 else compute)


def profile_slices(gpu: GpuModel, profile: str) -> tuple[int, int]:
    """(compute slices, memory slices) one instance of `profile` takes on `gpu`."""
    _, memory_total = slices(gpu)
    shape = mig_shape(profile)
    return shape.compute, max(1, round(shape.memory_gb * memory_total / gpu.memory_gib))


def placement_problem(gpu: GpuModel, layout: dict[str, int]) -> str | None:
    """Why `layout` ({profile: count}) cannot be created on one `gpu`, or None when it can."""
    compute_total, memory_total = slices(gpu)
    shapes = {name: profile_slices(gpu, name) for name in layout}
    compute = sum(shapes[n][0] * c for n, c in layout.items())
    memory = sum(shapes[n][1] * c for n, c in layout.items())
    if compute > compute_total:
        return f"uses {compute} compute slices but a {gpu.name} has {compute_total}"
    if memory > memory_total:
        return (f"uses {memory} memory slices but a {gpu.name} has {memory_total} "
                f"({', '.join(f'{n}: {shapes[n][1]}' for n in layout)} each)")
    return None
