"""The one error the simulator raises for bad input: the CLI prints it and exits 2."""


class SimulationError(ValueError):
    """A malformed trace, plan or option, with where it was found (file:line when there is one)."""
