"""Fuzz: mutated example stacks, plan files and traces are accepted or refused with exit 2, never a traceback.

Seeded (derandomized) and bounded; GPU_PLATFORM_FUZZ_EXAMPLES=5000 runs a larger search. Counts are printed in
the test session summary.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzing
from fuzzing import STACK_FILES, Tally, dump, examples, mutate, run_cli, stack_document, text_mutations, write

FUZZ = settings(max_examples=examples(), derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
DOCS = [stack_document(p) for p in STACK_FILES]


def _report(tally: Tally) -> None:
    fuzzing.SUMMARY.append(tally.line())
    print(tally.line())
    assert tally.counts["traceback"] == 0 and tally.counts["lost"] == 0, "\n\n".join(tally.failures)


def _declared(doc: dict, key: str) -> int:
    items = (doc.get("config") or {}).get(f"gpu-platform:{key}")
    return len(items) if isinstance(items, list) else -1


def test_fuzz_stack_files():
    tally = Tally("validate (stack files)")
    with tempfile.TemporaryDirectory() as tmp:

        @FUZZ
        @given(st.data())
        def case(data):
            doc = mutate(DOCS[data.draw(st.integers(0, len(DOCS) - 1))], data.draw)
            path = write(Path(tmp), "Pulumi.fuzz.yaml", dump(doc))
            outcome, _, out, err = run_cli(["validate", "--file", str(path)])
            if outcome == "accepted":
                # Every declared pool and team is in the validated config, or the config was refused.
                for key, word in (("gpuPools", "GPU pool"), ("teams", "team")):
                    n = _declared(doc, key)
                    if n >= 0 and f"{n} {word}(s)" not in out:
                        outcome, err = "lost", f"{n} {key} declared, validate says: {out}"
            tally.record(outcome, f"{dump(doc)}\n{err}")

        case()
        for i, content in enumerate(b for p in STACK_FILES for b in text_mutations(p.read_text())):
            path = write(Path(tmp), f"Pulumi.text{i}.yaml", content)
            outcome, _, _, err = run_cli(["validate", "--file", str(path)])
            tally.record(outcome, f"text mutation {i}: {content[:200]!r}\n{err}")
    _report(tally)
