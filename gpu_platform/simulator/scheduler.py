"""The contract between the event engine and an admission scheduler, and the registry the engine finds one in.

The engine (engine.py) owns time, pods and nodes; a scheduler (kueue/, volcano.py) owns queues and quota and
decides admission once per cycle, calling back `Simulation.admit` and `Simulation.evict`. The engine depends
only on this module, so it never imports a scheduler: each scheduler module registers its factory here under
the `Model.scheduler` name it implements, and the package's __init__ imports them all.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, Protocol

from gpu_platform.simulator.errors import SimulationError

if TYPE_CHECKING:  # annotations only: the engine imports this module
    from gpu_platform.simulator.engine import Job, Simulation


class Limit(NamedTuple):
    """What keeps a job off one flavor for good: `kind` is quota, pool, topology or flavor."""

    flavor: str
    kind: str
    at_most: int | None  # the most units that limit ever allows the job (None: no flavor at all)
    message: str


class Blocked(NamedTuple):
    """A job no admission can ever take under the model, and the limit on each flavor it may use."""

    job: Job
    limits: tuple[Limit, ...]


class Scheduler(Protocol):
    """What the engine calls on a scheduler."""

    def wants_cycle(self) -> bool:
        """Whether a scheduling cycle could admit or evict anything now (the engine then plans one)."""

    def submit(self, job: Job, t: float) -> None:
        """A job arrives or is requeued: it waits in its queue."""

    def started(self, job: Job, t: float) -> None:
        """All pods of an admitted job are bound: it runs."""

    def release(self, job: Job, t: float, evicted: bool = False, was_admitted: bool = False) -> None:
        """A job finished or its eviction completed: its quota is free again."""

    def cycle(self, t: float) -> None:
        """One scheduling cycle: admit and preempt through the engine."""

    def busy_until(self) -> float:
        """The earliest time the next cycle can start (the last cycle's API writes still going through)."""

    def check(self) -> None:
        """Raise AssertionError when a quota invariant is broken (the engine's `check=True`)."""

    def never_admittable(self) -> list[Blocked]:
        """The submitted jobs that can never be admitted, in submission order, known when they are submitted."""


# Scheduler classes by `Model.scheduler` name, each called with its simulation.
_REGISTRY: dict[str, Callable[[Simulation], Scheduler]] = {}


def register(name: str):
    """Class decorator: `name` (a `Model.scheduler` value) is simulated by the decorated scheduler class."""
    def add(factory: Callable[[Simulation], Scheduler]) -> Callable[[Simulation], Scheduler]:
        _REGISTRY[name] = factory
        return factory
    return add


def scheduler_for(name: str) -> Callable[[Simulation], Scheduler]:
    factory = _REGISTRY.get(name)
    if factory is None:
        raise SimulationError(f"no simulated scheduler {name!r}; known: {', '.join(sorted(_REGISTRY)) or 'none'}")
    return factory
