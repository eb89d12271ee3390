"""The offline engine: runs the real Pulumi program in-process under strict mocks and records the graph."""
from gpu_platform.engine.plan import Plan, PlannedResource, plan_stack

__all__ = ["Plan", "PlannedResource", "plan_stack"]
