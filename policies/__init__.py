"""The gpu-platform CrossGuard policy pack: the GPU platform checklist as Pulumi policies.

`__main__.py` serves the pack to the Pulumi CLI; everything else is importable, so `gpu-platform check`
evaluates the very same policy objects offline.
"""
