"""Reusable gpu-platform ComponentResources, the stack config model and the GPU catalog."""
