"""What every component's Args shares."""
import dataclasses
from typing import Any


def fill_defaults(args: Any) -> None:
    """A field passed as None takes its default: fields with a default are optional in the package schema, and
    None is how a caller says "not set"; the component then never has to repeat the default."""
    for f in dataclasses.fields(args):
        if getattr(args, f.name) is not None:
            continue
        if f.default is not dataclasses.MISSING:
            setattr(args, f.name, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            setattr(args, f.name, f.default_factory())
