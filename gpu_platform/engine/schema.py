"""Every cloud resource's wire inputs checked against the pinned provider SDK's typed input classes.

Mocks accept any input, so a misspelled key (`nodeTaint`), a missing nested field or a list where the provider wants a
map would plan cleanly and fail only at `pulumi up`. The SDKs already state the schema: each resource token is
registered (`_utilities.register`) to a class whose `<Class>Args` is a `pulumi.input_type` with wire (camelCase) names,
type annotations and required keyword arguments; nested objects are `...Args` input types again. This module turns
those into shapes once per class and checks what the engine records.

Not checked: component resources (ours), tokens no SDK registered (Kubernetes CustomResources: their CRD schemas are
checked in the tests), and the types of provider inputs (the SDK sends provider config as JSON strings).
"""
from __future__ import annotations

import collections.abc
import enum
import importlib
import inspect
import re
import sys
import typing
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from components.config.errors import bulleted
from gpu_platform.engine.wire import _OUTPUT_SIG, _SECRET_SIG, _SIG, SECRET, UNKNOWN


@dataclass(frozen=True)
class Shape:
    """What one input accepts: kind is any|string|number|integer|boolean|list|map|object|union."""

    kind: str
    item: "Shape | None" = None  # list and map elements
    args: type | None = None  # object: the input type class, expanded lazily (input types nest and recurse)
    options: tuple["Shape", ...] = ()  # union alternatives

    def describe(self) -> str:
        if self.kind in ("list", "map"):
            return f"a {self.kind} of {self.item.describe()}"
        if self.kind == "object":
            return f"an object ({_schema_name(self.args)})"
        if self.kind == "union":
            return " or ".join(o.describe() for o in self.options)
        return {"integer": "an integer", "any": "anything"}.get(self.kind, f"a {self.kind}")


ANY = Shape("any")


@dataclass(frozen=True)
class ObjectSchema:
    """The wire names an input type (or a resource's Args) accepts, which of them are required, and their shapes."""

    name: str
    fields: dict[str, Shape]
    required: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class SchemaProblem:
    urn: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.urn}: {self.path}: {self.message}"


class ProviderSchemaError(Exception):
    """Resource inputs the pinned provider SDKs would not accept: the program, not the stack config, is wrong."""

    def __init__(self, problems: list[SchemaProblem]):
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        return bulleted(f"{len(self.problems)} resource input(s) do not match the provider SDK schema:", self.problems)


def check_resource(type_: str, urn: str, inputs: dict[str, Any], custom: bool) -> list[SchemaProblem]:
    """Problems with one registration's wire inputs; none for components and tokens no SDK registered."""
    if not custom:
        return []
    schema = resource_schema(type_)
    if schema is None:
        return []
    problems: list[SchemaProblem] = []
    typed = not type_.startswith("pulumi:providers:")
    _check_object(schema, inputs, "", urn, problems, typed=typed)
    return problems


_SDK_RESOURCE = re.compile(r"While processing resource: '([^']*)', type '([^']*)'")
_SDK_INPUT = re.compile(r"While processing input: '([^']*)'")


def sdk_type_problems(exc: BaseException) -> list[SchemaProblem]:
    """The SDK's own refusal to serialize an input of the wrong type (e.g. a list for a map), as a schema problem."""
    text = str(exc)
    resource, input_ = _SDK_RESOURCE.search(text), _SDK_INPUT.search(text)
    if not (isinstance(exc, AssertionError) and resource and input_):
        return []
    reason = text.strip().splitlines()[-1].removeprefix("AssertionError has risen: ")
    name, type_ = resource.groups()
    return [SchemaProblem(f"{type_}::{name}", input_.group(1), f"the provider SDK refuses it: {reason}")]


@lru_cache(maxsize=None)
def resource_schema(type_: str) -> ObjectSchema | None:
    """The Args schema of the class the SDK registered for `type_`, or None when no loaded SDK registered it."""
    cls = _resource_class(type_)
    if cls is None:
        return None
    # Where a nested input type already has the name `<Class>Args`, the SDK calls the resource's own `<Class>InitArgs`.
    module = inspect.getmodule(cls)
    args = getattr(module, f"{cls.__name__}InitArgs", None) or getattr(module, f"{cls.__name__}Args", None)
    return _object_schema(args) if args is not None else None


def _resource_class(type_: str) -> type | None:
    from pulumi.runtime import rpc

    parts = type_.split(":")
    if len(parts) != 3:
        return None
    if parts[0] == "pulumi" and parts[1] == "providers":
        for package in rpc._RESOURCE_PACKAGES.get(parts[2], []):
            info = getattr(package, "pkg_info", None)
            if info and info.get("token") == type_:
                return getattr(importlib.import_module(info["fqn"]), info["class"])
        return None
    pkg, mod, _ = parts
    for module in rpc._RESOURCE_MODULES.get(f"{pkg}:{mod}", []):
        info = getattr(module, "mod_info", None)
        if info and type_ in info.get("classes", {}):
            fqn, name = info["fqn"], info["classes"][type_]
            return getattr(importlib.import_module(fqn), name, None) or _class_in_submodule(fqn, name)
    return None


def _class_in_submodule(package: str, name: str) -> type | None:
    """The class from the submodule that defines it, when only that submodule was imported (the package's own
    namespace then lacks it)."""
    for module_name, module in list(sys.modules.items()):
        cls = getattr(module, name, None) if module_name.startswith(f"{package}.") else None
        if isinstance(cls, type) and cls.__module__ == module_name:
            return cls
    return None


@lru_cache(maxsize=None)
def _object_schema(args: type) -> ObjectSchema:
    from pulumi import _types

    py_to_wire = _types.input_type_py_to_pulumi_names(args)
    types = _types.input_type_types(args)
    required = frozenset(
        py_to_wire.get(name, name) for name, param in inspect.signature(args.__init__).parameters.items()
        if param.kind is param.KEYWORD_ONLY and param.default is param.empty)
    return ObjectSchema(name=_schema_name(args), fields={wire: _shape(tp) for wire, tp in types.items()},
                        required=required)


def _schema_name(args: type) -> str:
    return f"{args.__module__.split('.')[0]} {args.__name__}"


def _shape(tp: Any) -> Shape:
    """A type annotation of the SDK (Input[...], Optional[...], Sequence[...], Mapping[...], input types) as a Shape."""
    from pulumi import Output
    from pulumi import _types

    origin = typing.get_origin(tp)
    if tp is Any or tp is object or isinstance(tp, (typing.TypeVar, typing.ForwardRef, str)):
        return ANY
    if origin is typing.Union:
        options = tuple(dict.fromkeys(
            _shape(arg) for arg in typing.get_args(tp)
            if arg is not type(None)
            and typing.get_origin(arg) not in (collections.abc.Awaitable, Output) and arg is not Output))
        if ANY in options:
            return ANY
        return options[0] if len(options) == 1 else Shape("union", options=options)
    if origin is typing.Literal:
        return _shape(type(typing.get_args(tp)[0]))
    if origin in (list, collections.abc.Sequence, tuple):
        args = typing.get_args(tp)
        return Shape("list", item=_shape(args[0]) if args else ANY)
    if origin in (dict, collections.abc.Mapping):
        args = typing.get_args(tp)
        return Shape("map", item=_shape(args[1]) if len(args) == 2 else ANY)
    if isinstance(tp, type):
        if _types.is_input_type(tp):
            return Shape("object", args=tp)
        if issubclass(tp, bool):
            return Shape("boolean")
        if issubclass(tp, (str, enum.Enum)):
            return Shape("string")
        if issubclass(tp, int):
            return Shape("integer")
        if issubclass(tp, float):
            return Shape("number")
        if issubclass(tp, (list, tuple)):
            return Shape("list", item=ANY)
        if issubclass(tp, dict):
            return Shape("map", item=ANY)
    return ANY


def _check_object(schema: ObjectSchema, value: dict[str, Any], path: str, urn: str, problems: list[SchemaProblem],
                  typed: bool = True) -> None:
    for key in sorted(value):
        where = f"{path}.{key}" if path else key
        if key not in schema.fields:
            problems.append(SchemaProblem(urn, where, f"is not an input of {schema.name}; allowed: "
                                                      f"{', '.join(sorted(schema.fields))}"))
        elif typed:
            _check_value(schema.fields[key], value[key], where, urn, problems)
    for key in sorted(schema.required - set(value)):
        where = f"{path}.{key}" if path else key
        problems.append(SchemaProblem(urn, where, f"is required by {schema.name}"))


def _check_value(shape: Shape, value: Any, path: str, urn: str, problems: list[SchemaProblem]) -> None:
    value = _unwrap(value)
    if value is _OPAQUE or value is None or shape.kind == "any":
        return
    if shape.kind == "union":
        if not any(_fits(option, value) for option in shape.options):
            problems.append(SchemaProblem(urn, path, f"must be {shape.describe()}; got {_kind(value)}"))
            return
        chosen = next(o for o in shape.options if _fits(o, value))
        _check_value(chosen, value, path, urn, problems)
        return
    if not _fits(shape, value):
        problems.append(SchemaProblem(urn, path, f"must be {shape.describe()}; got {_kind(value)}"))
    elif shape.kind == "list":
        for i, item in enumerate(value):
            _check_value(shape.item, item, f"{path}[{i}]", urn, problems)
    elif shape.kind == "map":
        for key in sorted(value):
            _check_value(shape.item, value[key], f"{path}.{key}", urn, problems)
    elif shape.kind == "object":
        _check_object(_object_schema(shape.args), value, path, urn, problems)


_OPAQUE = object()  # an unknown, a resource reference or an asset: nothing to check offline


def _unwrap(value: Any) -> Any:
    """Secrets and known output values to what they wrap; unknowns and references to _OPAQUE."""
    while isinstance(value, dict) and _SIG in value:
        sig = value[_SIG]
        if sig == _SECRET_SIG and "value" in value:
            value = value["value"]
        elif sig == _OUTPUT_SIG and "value" in value:
            value = value["value"]
        else:
            return _OPAQUE  # unknown output, resource reference, asset or archive
    # A graph replayed from plan JSON (bench/bare.py) carries secrets as their "[secret]" placeholder.
    return _OPAQUE if value in (UNKNOWN, SECRET) else value


def _fits(shape: Shape, value: Any) -> bool:
    value = _unwrap(value)
    if value is _OPAQUE or value is None:
        return True
    kind = shape.kind
    if kind == "any":
        return True
    if kind == "union":
        return any(_fits(o, value) for o in shape.options)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer()
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list)
    return isinstance(value, dict)  # map, object


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, (int, float)):
        return f"a number ({value:g})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__

