"""Mutation fuzzing of the CLI's inputs: stack files (`validate`), plan files (`check --plan`), traces (`simulate`).

Each case is written to a file and run through `gpu_platform.cli.main` in-process; the outcome is classified:
`accepted` (exit 0), `refused` (exit 2 with a message), `traceback` (an exception escaped, or any other exit), and,
for accepted stack files, `lost` (a declared pool or team missing from the validated config). The promise under
test: bad input gets exit 2 with messages, never a traceback.
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml
from hypothesis import strategies as st

from support.clouds import EXISTING
from support.paths import ROOT

STACK_FILES = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
DEFAULT_EXAMPLES = 300
SUMMARY: list[str] = []  # lines printed in pytest's terminal summary (conftest)


def examples(default: int = DEFAULT_EXAMPLES) -> int:
    """Cases per fuzz test: GPU_PLATFORM_FUZZ_EXAMPLES for a larger run."""
    return int(os.environ.get("GPU_PLATFORM_FUZZ_EXAMPLES", default))


# Outcomes that fail a fuzz run: an exception escaped, a declared pool or team vanished, or an input whose meaning
# is ambiguous (a leading-zero number, a repeated trace column) was accepted instead of refused.
FAILURES = ("traceback", "lost", "misread")


@dataclass
class Tally:
    """Outcomes of one fuzz run, and the first few failures to show."""

    name: str
    counts: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def record(self, outcome: str, detail: str = "") -> None:
        self.counts[outcome] += 1
        if outcome in FAILURES and len(self.failures) < 10:
            self.failures.append(detail)

    def line(self) -> str:
        c = self.counts
        return (f"fuzz {self.name}: tried {sum(c.values())}, refused {c['refused']}, accepted {c['accepted']}, "
                f"tracebacks {c['traceback']}, lost {c['lost']}, misread {c['misread']}")


def _only_warnings(stderr: str) -> bool:
    """Nothing on standard error but the config warnings every command prints there."""
    return all(line.startswith("warning: ") for line in stderr.splitlines())


def run_cli(argv: list[str]) -> tuple[str, int | None, str, str]:
    """(outcome, exit code, stdout, stderr) of one in-process CLI run; `check` exiting 1 (failing findings) counts
    as accepted."""
    from gpu_platform import cli

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    except BaseException:  # noqa: BLE001 - anything escaping is what the fuzzer looks for
        return "traceback", None, out.getvalue(), traceback.format_exc()
    stderr = err.getvalue()
    if code == 2 and stderr.strip() and "Traceback" not in stderr:
        return "refused", code, out.getvalue(), stderr
    if code == 0 or (code == 1 and argv[0] == "check" and _only_warnings(stderr)):
        return "accepted", code, out.getvalue(), stderr
    return "traceback", code, out.getvalue(), f"exit {code}: {stderr}"


# ---- values and mutations ----------------------------------------------------------------------------------------

ODD_SCALARS = st.sampled_from([
    None, "", " ", "x", "-", "A_B", "a" * 64, "a" * 300, "1.33", "yes", "on", "1:30", "0x1F", "0o17", "1e3",
    "२", "٣", "１２", "\u00e9t\u00e9", "\x00", "$(rm)", "a\nb", "us-east-1", "m6i.2xlarge", "eastus2",
    "us-central1", "p5.48xlarge", "a3-highgpu-8g", "all-7g.80gb", "mig", "none", "spot", "reserved", "operator",
    "*/10 * * * *", "99 99 99 99 99", "http://", "https://x y", "http://[::1", "https://h]:9090", "http://[fd00::1]",
    "2027-01-01", "2020-01-01", "2027-01-01T00:00:00Z",
    0, 1, -1, 2, 7, 63, 64, 1000, 10**6, 10**30, -(10**30), 0.5, -0.0, 1e308, float("inf"), float("nan"), True,
    False, [], {}, [None], [[]], {"a": 1}, {"secure": "AAA"}, {1: 2}, [1, "a", None],
])


# Kubernetes quantities in every spelling (apimachinery's suffixes and exponents) and near-misses.
QUANTITY_SUFFIXES = ["", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "E-2", "KiB",
                     "ki", "x", " k"]
QUANTITIES = st.builds(lambda n, s: f"{n}{s}", st.sampled_from(["0", "1", "8", ".5", "1.", "-1", "+2", "1e3", ""]),
                       st.sampled_from(QUANTITY_SUFFIXES))
# URLs built from the characters that trip URL parsers: brackets, colons, at signs, percent signs.
URLS = st.builds(lambda scheme, rest: scheme + rest, st.sampled_from(["http://", "https://", ""]),
                 st.text(alphabet="[]:@%/.a1-", min_size=1, max_size=16))


def odd_values(depth: int = 2) -> st.SearchStrategy:
    if depth == 0:
        return ODD_SCALARS
    inner = odd_values(depth - 1)
    return st.one_of(ODD_SCALARS, st.text(max_size=20), st.integers(), st.floats(),
                     st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3))


def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a nested document (mapping keys and list indexes)."""
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += paths(value, prefix + (i,))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _leaves(doc: Any) -> list[tuple]:
    return [p for p in paths(doc) if p and not isinstance(_get(doc, p), (dict, list))]


def _sibling_values(doc: Any) -> list:
    """Every scalar in the document: a value valid somewhere is a plausible wrong value elsewhere."""
    values = [_get(doc, p) for p in _leaves(doc)]
    return [v for v in values if isinstance(v, (str, int, float, bool))] or [0]


def mutate(doc: dict, draw: Callable) -> dict:
    """Usually one mutation (two or three sometimes): delete, replace, blank, retype, rename, duplicate, add a key.

    Leaves are picked more often than whole sections, so most cases are one field off a valid stack: those reach
    the checks that run only when everything else is valid.
    """
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        leaves, candidates = _leaves(doc), [p for p in paths(doc) if p]
        if not candidates:
            break
        path = draw(st.sampled_from(leaves if leaves and draw(st.integers(0, 3)) else candidates))
        parent, key = _get(doc, path[:-1]), path[-1]
        op = draw(st.sampled_from(["delete", "replace", "replace", "sibling", "sibling", "wrap", "rename", "duplicate",
                                   "add", "blank", "number", "quantity", "url"]))
        if op == "delete":
            del parent[key]
        elif op == "replace":
            parent[key] = draw(odd_values())
        elif op == "sibling":
            parent[key] = draw(st.sampled_from(_sibling_values(doc)))
        elif op == "number":
            parent[key] = draw(st.one_of(st.integers(-(10**20), 10**20), st.sampled_from([0, -1, 10**4, 10**9])))
        elif op == "quantity":
            parent[key] = draw(QUANTITIES)
        elif op == "url":
            parent[key] = draw(URLS)
        elif op == "blank":
            parent[key] = draw(st.sampled_from(["", " ", None, [], {}]))
        elif op == "wrap":
            parent[key] = draw(st.sampled_from([[parent[key]], {"value": parent[key]}]))
        elif op == "rename" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["name", "x", "", "1", "gpu-platform:extra", "aws:region", "cluster"]))] = \
                parent.pop(key)
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif op == "add" and isinstance(_get(doc, path[:-1]), dict):
            parent[draw(st.sampled_from(["extra", "name", "labels", "zones", "1", "existingKubeconfig",
                                         "privateEndpoint", "taints", "sharing", "reclaim"]))] = draw(odd_values(1))
    return doc


# Text-level inputs a structural mutation cannot produce: encodings, YAML features, sizes.
def text_mutations(text: str) -> list[bytes]:
    nested = "config:\n  gpu-platform:cloud: aws\n  gpu-platform:cluster: " + "[" * 5000 + "]" * 5000 + "\n"
    bomb = "config:\n  a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"  {chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8))
    return [
        text.encode("utf-16"),
        text.encode("utf-16-le"),
        text.encode("utf-8").replace(b"name", b"n\xffme", 1),
        text.encode("latin-1", "replace") + b"\n# caf\xe9\n",
        b"\xef\xbb\xbf" + text.encode(),
        text.replace("gpu-platform:cloud:", "gpu-platform:cloud: gcp\n  gpu-platform:cloud:", 1).encode(),
        text.replace("minNodes: 0", "minNodes: 0\n      minNodes: 1", 1).encode(),
        text.replace("maxNodes: 4", "maxNodes: 1:30", 1).encode(),
        text.replace("workload: training", "workload: training\n      labels: {on: yes}", 1).encode(),
        text.replace("maxNodes: 4", "maxNodes: 04", 1).encode(),
        text.replace("maxNodes: 4", "maxNodes: 0_4", 1).encode(),
        text.replace("config:", "config:\n  gpu-platform:teams: &t [*t]", 1).encode(),
        nested.encode(),
        bomb.encode(),
        b"config: !!python/object:os.system [echo]\n",
        b"config:\n  gpu-platform:cloud: !!binary aGVsbG8=\n",
        b"config:\n  ? [a, b]\n  : 1\n",
        b"config:\n  1: 2\n  gpu-platform:cloud: aws\n",
        b"\x00\x01\x02",
        b"",
        b"--- a\n--- b\n",
    ]


# A seed stack with the fields the example stacks leave out (a Capacity Block, an adopted Prometheus by URL), so
# mutations reach their checks too: the Capacity Block stack of support/clouds.py on a created network with the
# default image.
_EXISTING_NETWORK_AND_IMAGE = """\
      vpcId: vpc-0abc
      subnetIds: [subnet-0aaa, subnet-0bbb, subnet-0ccc]
      amiType: BOTTLEROCKET_x86_64_NVIDIA
"""
assert _EXISTING_NETWORK_AND_IMAGE in EXISTING
EXTRA_SEED = EXISTING.replace(_EXISTING_NETWORK_AND_IMAGE, "") + """\
  gpu-platform:observability:
    prometheus: {install: false, url: "http://prometheus.monitoring:9090"}
"""

_NUMBER = re.compile(r"(?<=: )(\d+)(?=[,}\n])")


def respell_numbers(text: str, draw: Callable) -> tuple[str, bool]:
    """One number of a dumped document respelled as YAML allows: a leading zero (octal to the Pulumi CLI), or
    underscores (dropped by it); and whether the new spelling has a leading zero (to be refused)."""
    found = list(_NUMBER.finditer(text))
    if not found:
        return text, False
    match = draw(st.sampled_from(found))
    digits = match.group(1)
    spelled = draw(st.sampled_from(["0" + digits, digits[:1] + "_" + digits[1:], "00", "0_" + digits]))
    return text[:match.start()] + spelled + text[match.end():], spelled.replace("_", "")[:1] == "0"


def write(tmp: Path, name: str, content: bytes | str) -> Path:
    path = tmp / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def stack_document(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def dump(doc: Any) -> str:
    try:
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    except yaml.YAMLError:
        return json.dumps(doc, default=str)
