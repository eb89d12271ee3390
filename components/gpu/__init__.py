"""The GPU software layer: NVIDIA GPU Operator, MIG layouts, device plugin sharing and DCGM metrics."""
