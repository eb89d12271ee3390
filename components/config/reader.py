"""Reading YAML the way the Pulumi CLI does (Go yaml.v3, YAML 1.2 core schema), with bounds checked first.

PyYAML's safe loader speaks YAML 1.1, where `yes`/`on` are booleans, `1:30` is the number 5400 and `0o17` a
string; the Pulumi CLI passes all of those as strings, so the same file must mean the same here. Duplicate keys are
refused (yaml.v3 refuses them too), and size, nesting depth and alias expansion are bounded before any value is
constructed, so an alias bomb or a recursive alias is an error instead of a hang or a RecursionError.
"""
from __future__ import annotations

import codecs
import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, SequenceNode

MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 200_000  # after alias expansion; the example stacks have a few hundred


class ReadError(ValueError):
    """Why a document cannot be read; `path` is the dotted location when one is known."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.path = path


class LeadingZero:
    """A number with a leading zero (`010`): the Pulumi CLI's YAML reads it as octal (8), a reader of the file
    as decimal (10). Kept as this marker so the document check refuses it at its path."""

    def __init__(self, text: str, meaning: str):
        self.text, self.meaning = text, meaning

    def problem(self) -> str:
        meaning = self.meaning
        return (f"{self.text} has a leading zero, which the Pulumi CLI reads as {meaning}; write the number "
                f"without it, or quote it if it is a string")


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema scalars, duplicate-key refusal and a nesting bound."""

    yaml_implicit_resolvers: dict = {}
    depth = 0

    def compose_node(self, parent, index):
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise ReadError(f"nested deeper than {MAX_DEPTH} levels (line {self.peek_event().start_mark.line + 1})")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        raise ReadError(f"duplicate key {key!r} (lines {seen[key]} and {key_node.start_mark.line + 1})")
                    seen[key] = key_node.start_mark.line + 1
                except TypeError:
                    raise ReadError(f"a mapping key must be a string; got {key!r} "
                                    f"(line {key_node.start_mark.line + 1})") from None
        return super().construct_mapping(node, deep)

    def construct_core_int(self, node):
        text = self.construct_scalar(node)
        if len(text) > 30:  # int64 has 19 digits; Python would also refuse past 4300 with a ValueError
            raise ReadError(f"the number {text[:12]}... on line {node.start_mark.line + 1} has {len(text)} digits")
        # yaml.v3 drops underscores, then parses with Go's base-0 rules (1_0 is 10, 0x1F is 31).
        plain = text.replace("_", "")
        digits = plain.lstrip("+-")
        if len(digits) > 1 and digits[0] == "0" and digits.isdigit():
            # Go's base 0 reads it as octal; with an 8 or 9 that fails and yaml.v3 falls back to a float.
            return LeadingZero(text, f"octal {int(plain, 8)}" if set(digits) <= set("01234567")
                               else f"the float {float(plain):g}")
        return int(plain, 0) if digits[:2] in ("0o", "0x", "0b") else int(plain)


_Loader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))
# Underscores anywhere after the first digit, as yaml.v3 removes them before parsing the number.
_Loader.add_implicit_resolver("tag:yaml.org,2002:int",
                              re.compile(r"^(?:[-+]?[0-9][0-9_]*|[-+]?0o[0-7_]+|[-+]?0x[0-9a-fA-F_]+|[-+]?0b[01_]+)$"),
                              list("-+0123456789"))
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:\.[0-9][0-9_]*|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+.0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_core_int)


def decode(data: bytes) -> str:
    """UTF-8 (with or without a byte-order mark) or UTF-16 with one, as yaml.v3 reads; anything else is refused."""
    if len(data) > MAX_BYTES:
        raise ReadError(f"is {len(data)} bytes; at most {MAX_BYTES} are read")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ReadError(f"is not valid UTF-16 text ({exc.reason} at byte {exc.start})") from None
    if b"\x00" in data:
        raise ReadError("is not UTF-8 text (it holds NUL bytes: UTF-16 without a byte-order mark?); save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReadError(f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                        "save it as UTF-8") from None


def _check_expansion(root) -> None:
    """Count nodes as if every alias were expanded, and refuse an alias inside the node it names."""
    stack, on_path, count = [(root, False)], set(), 0
    while stack:
        node, leaving = stack.pop()
        if leaving:
            on_path.discard(id(node))
            continue
        count += 1
        if count > MAX_NODES:
            raise ReadError(f"expands to more than {MAX_NODES} values (aliases of aliases?)")
        if isinstance(node, (SequenceNode, MappingNode)):
            if id(node) in on_path:
                raise ReadError(f"has a recursive alias (line {node.start_mark.line + 1} refers to itself)")
            on_path.add(id(node))
            stack.append((node, True))
            children = node.value if isinstance(node, SequenceNode) else [n for pair in node.value for n in pair]
            stack.extend((child, False) for child in children)


def load_yaml(text: str) -> Any:
    """One YAML document as plain data (None when empty); ReadError when it is not acceptable."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        value = loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ReadError(f"is not valid YAML: {syntax_error(exc)}") from None
    except RecursionError:
        raise ReadError(f"is nested too deeply (at most {MAX_DEPTH} levels)") from None
    finally:
        loader.dispose()
    check_plain(value)
    return value


# PyYAML's phrases and token names, in a reader's words.
_WORDS = {
    "mapping values are not allowed here": "a `key: value` is not allowed here (check the indentation, or quote a "
                                           "value holding ': ')",
    "found character '\\t' that cannot start any token": "a tab: YAML indents with spaces only",
    "found unexpected end of stream": "the file ends here",
    "could not determine a constructor for the tag": "a value may not carry the tag",
    "<stream end>": "the end of the file", "<document end>": "the end of the document",
    "<block end>": "the end of an indented block", "<block mapping start>": "an indented mapping",
    "<block sequence start>": "an indented list", "<scalar>": "a value",
    "while parsing a flow sequence": "in the [ list", "while parsing a flow mapping": "in the { mapping",
    "while scanning a quoted scalar": "in the quoted string", "while parsing a block mapping": "in the indented block",
    "while parsing a block collection": "in the indented block",
}


def syntax_error(exc: yaml.YAMLError) -> str:
    """Where and what, from PyYAML's marks: `line 5, column 15: ...`, never its dump of the whole parser state
    (which names the input `<unicode string>` and quotes the source with a caret)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or not problem:
        return " ".join(str(exc).replace('in "<unicode string>", ', "").split())
    text = f"line {mark.line + 1}, column {mark.column + 1}: {_in_words(problem)}"
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and context_mark is not None and context_mark.line != mark.line:
        text += f" ({_in_words(context)} that starts on line {context_mark.line + 1})"
    return text


def _in_words(phrase: str) -> str:
    for theirs, ours in _WORDS.items():
        phrase = phrase.replace(f"'{theirs}'", ours).replace(theirs, ours)
    return phrase


def check_plain(value: Any, path: str = "") -> None:
    """Only what Pulumi config can carry: strings, numbers, booleans, null, lists and string-keyed mappings."""
    problems = list(_not_plain(value, path))
    if problems:
        raise ReadError("; ".join(f"{p or '(document)'}: {m}" for p, m in problems[:20]))


def _not_plain(value: Any, path: str):
    stack = [(value, path)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    yield at or "(document)", f"mapping key {key!r} must be a string"
                    continue
                stack.append((child, f"{at}.{key}" if at else key))
        elif isinstance(node, list):
            stack.extend((child, f"{at}[{i}]") for i, child in enumerate(node))
        elif isinstance(node, LeadingZero):
            yield at, node.problem()
        elif not (node is None or isinstance(node, (str, bool, int, float))):
            yield at, f"a {type(node).__name__} value (an explicit YAML tag?) is not allowed; use a plain string"
