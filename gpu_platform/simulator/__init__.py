"""What-if scheduling simulator: replay GPU job traces against the queues, quotas, gang and preemption a stack
plans, and compare with a baseline (static quotas, or gang scheduling off)."""
from __future__ import annotations

from collections.abc import Callable

# The schedulers register themselves with scheduler.py on import; the engine finds them there by name.
from gpu_platform.simulator import kueue, volcano  # noqa: F401  (imported to register)
from gpu_platform.simulator.engine import SimResult, Simulation, Timing, build_jobs
from gpu_platform.simulator.errors import SimulationError
from gpu_platform.simulator.model import Model, load_model
from gpu_platform.simulator.scenarios import (DEFAULT_TIMING, KUEUE_CALIBRATED, VOLCANO_TIMING, bench_scenario,
                                              default_timing, kueue_baseline)
from gpu_platform.simulator.traces import TraceJob


def simulate(model: Model, trace: list[TraceJob], timing: Timing | None = None, horizon: float | None = None,
             default_pool: str | None = None, check: bool = False,
             progress: Callable[[float], None] | None = None) -> SimResult:
    """Run `trace` (teams already mapped to the model's) through `model`, with `timing` or its scheduler's
    (`default_timing`); `progress` hears the simulated time now and then."""
    timing = timing or default_timing(model)
    return Simulation(model, build_jobs(model, trace, default_pool), timing, horizon, check).run(progress)


__all__ = ["DEFAULT_TIMING", "KUEUE_CALIBRATED", "Model", "SimResult", "SimulationError", "Timing", "TraceJob",
           "VOLCANO_TIMING", "bench_scenario", "default_timing", "kueue_baseline", "load_model", "simulate"]
