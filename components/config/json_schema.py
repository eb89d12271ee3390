"""A JSON Schema for `Pulumi.<stack>.yaml`, for editor completion (yaml-language-server), generated from the config
parser itself: the parser is the only statement of which keys exist, so the schema is read off it rather than kept
as a second copy that drifts.

The parser (`parse`) reads every mapping through `fields.Section`, which names the keys it allows, and every value
through a typed reader (`str` with its choices, `int` with its bounds, `bool`, `list`, ...). Running it over the
example stacks of every cloud with those readers observed gives each section's keys, types, enums and bounds;
`cluster.<cloud>` blocks come from each `CloudProfile.extras` (type, doc, required). A key counts as required only
where every observed read required it (a key one branch requires, such as `sharing.migProfile` with `mode: mig`, is
not). The schema helps an editor; `gpu-platform validate` stays the judge.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from components.clouds import PROFILES
from components.config import fields
from components.config.fields import Section

SCHEMA_ID = "https://gpu-platform.dev/schema/stack.schema.json"
_INDEX = re.compile(r"\[\d+\]")
PROFILES_PATHS = {f"cluster.{cloud}": cloud for cloud in PROFILES}  # the cluster.<cloud> blocks
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}


class _Observed:
    """What the parser asked of each section: allowed keys, and per key the reader and its arguments."""

    def __init__(self) -> None:
        self.allowed: dict[str, tuple[str, ...]] = {}
        self.reads: dict[tuple[str, str], dict[str, Any]] = {}
        self.required: dict[tuple[str, str], bool] = {}

    def section(self, path: str, allowed: tuple[str, ...]) -> None:
        self.allowed.setdefault(_INDEX.sub("[]", path), tuple(allowed))

    def read(self, path: str, key: str, schema: dict[str, Any], required: bool) -> None:
        where = (_INDEX.sub("[]", path), key)
        known = self.reads.setdefault(where, {})
        for name, value in schema.items():
            # Choices and bounds are per cloud (fabrics, node limits): the schema allows what any cloud allows.
            if name == "enum" and name in known:
                known[name] = list(dict.fromkeys([*known[name], *value]))
            elif name in ("minimum", "maximum") and name in known:
                known[name] = (min if name == "minimum" else max)(known[name], value)
            else:
                known.setdefault(name, value)
        self.required[where] = self.required.get(where, True) and required


@contextmanager
def _observing() -> Iterator[_Observed]:
    """Section's readers, wrapped to record what they are asked; restored afterwards."""
    seen = _Observed()
    original = {name: getattr(Section, name) for name in
                ("__init__", "str", "int", "number", "bool", "duration", "str_map", "str_list", "list")}
    missing = fields._MISSING

    def init(self, raw, path, problems, allowed):
        seen.section(path, allowed)
        original["__init__"](self, raw, path, problems, allowed)

    def reader(name: str, schema) -> Any:
        def read(self, key, *args, **kwargs):
            default = args[0] if args else kwargs.get("default", missing)
            # Readers with a default of their own (duration, str_map, str_list, list) never require the key.
            required = (kwargs.get("required", False) if name == "list" else
                        name in ("str", "int", "number", "bool") and default is missing)
            seen.read(self.path, key, schema(*args, **kwargs), required)
            return original[name](self, key, *args, **kwargs)
        return read

    def string(default=missing, choices=None, pattern=None, what=""):
        return {"type": "string", **({"enum": list(choices)} if choices else {}),
                **({"description": f"must be {what}"} if what else {})}

    def integer(default=missing, minimum=None, maximum=fields.INT32_MAX, why=""):
        return {"type": "integer", **({"minimum": minimum} if minimum is not None else {}), "maximum": maximum}

    patches = {
        "__init__": init,
        "str": reader("str", string),
        "int": reader("int", integer),
        "number": reader("number", lambda default, low, high: {"type": "number", "minimum": low, "maximum": high}),
        "bool": reader("bool", lambda default=missing: {"type": "boolean"}),
        "duration": reader("duration", lambda default_s: {
            "type": ["string", "integer"], "pattern": r"^[0-9]{1,9}(s|m|h)$",
            "description": "a duration like 30s, 10m or 1h, or a number of seconds"}),
        "str_map": reader("str_map", lambda: {"type": "object", "additionalProperties": {"type": "string"}}),
        "str_list": reader("str_list", lambda: {"type": "array", "items": {"type": "string"}}),
        "list": reader("list", lambda required=False: {"type": "array"}),
    }
    for name, patch in patches.items():
        setattr(Section, name, patch)
    try:
        yield seen
    finally:
        for name, method in original.items():
            setattr(Section, name, method)


def _observe(stacks: list[Path]) -> _Observed:
    from components.config import read_stack_file, split_namespace
    from components.config.parse import parse

    with _observing() as seen:
        for path in stacks:
            raw, _ = split_namespace(read_stack_file(path))
            parse(raw)
    return seen


def _secret_or(schema: dict[str, Any]) -> dict[str, Any]:
    """A string may also be a Pulumi secret (`pulumi config set --secret --path`): `{secure: <ciphertext>}`."""
    if schema.get("type") == "string" and "enum" not in schema:
        return {"anyOf": [schema, {"$ref": "#/$defs/secure"}]}
    return schema


def _extras(cloud: str) -> dict[str, Any]:
    prof = PROFILES[cloud]
    properties = {}
    for key, spec in prof.extras.items():
        kinds = spec.kind if isinstance(spec.kind, tuple) else (spec.kind,)
        types = sorted({_JSON_TYPES[k] for k in kinds if k in _JSON_TYPES})
        schema: dict[str, Any] = {"description": spec.doc}
        if types:
            schema["type"] = types[0] if len(types) == 1 else types
        if spec.choices:
            schema["enum"] = list(spec.choices)
        properties[key] = _secret_or(schema)
    required = sorted(k for k, s in prof.extras.items() if s.required)
    return {"type": "object", "additionalProperties": False, "properties": properties,
            **({"required": required} if required else {})}


def _section(seen: _Observed, path: str) -> dict[str, Any]:
    properties = {}
    for key in seen.allowed[path]:
        child = f"{path}.{key}" if path else key
        schema = dict(seen.reads.get((path, key), {}))
        if child in PROFILES_PATHS:
            schema = _extras(PROFILES_PATHS[child])
        elif child in seen.allowed:
            schema = _section(seen, child)
        elif f"{child}[]" in seen.allowed:
            schema = {"type": "array", "items": _section(seen, f"{child}[]")}
        properties[key] = _secret_or(schema)
    required = sorted(key for key in seen.allowed[path] if seen.required.get((path, key)))
    return {"type": "object", "additionalProperties": False, "properties": properties,
            **({"required": required} if required else {})}


def stack_schema(stacks: list[Path]) -> dict[str, Any]:
    """The schema of a stack file, observed over `stacks` (the example stacks: every cloud's sections)."""
    seen = _observe(stacks)
    top = _section(seen, "")
    namespaced = {f"gpu-platform:{key}": schema for key, schema in top["properties"].items()}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "gpu-platform stack (Pulumi.<stack>.yaml)",
        "description": "Generated by `gpu-platform schema` from the config parser; `gpu-platform validate` is the "
                       "judge. Other providers' keys (aws:region, ...) are allowed as they are.",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": namespaced,
                # A key of ours not listed (`gpu-platform:gpuPool`) is flagged; other namespaces are theirs.
                "propertyNames": {"anyOf": [{"enum": sorted(namespaced)}, {"not": {"pattern": "^gpu-platform:"}}]},
                "required": [f"gpu-platform:{key}" for key in top.get("required", ())],
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
            "environment": {},
        },
        "required": ["config"],
        "$defs": {"secure": {"type": "object", "properties": {"secure": {"type": "string"}}, "required": ["secure"],
                             "additionalProperties": False}},
    }
