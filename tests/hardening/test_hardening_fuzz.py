"""Fuzz: mutated example stacks, plan files and traces are accepted or refused with exit 2, never a traceback.

Seeded (derandomized) and bounded; GPU_PLATFORM_FUZZ_EXAMPLES=5000 runs a larger search. Counts are printed in
the test session summary.
"""
from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_platform.simulator.traces import CSV_COLUMNS

from support import fuzzing
from support.fuzzing import (EXTRA_SEED, STACK_FILES, Tally, dump, examples, mutate, respell_numbers, run_cli,
    stack_document, text_mutations, write)

FUZZ = settings(max_examples=examples(), derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
DOCS = [stack_document(p) for p in STACK_FILES] + [yaml.safe_load(EXTRA_SEED)]


def _report(tally: Tally) -> None:
    fuzzing.SUMMARY.append(tally.line())
    print(tally.line())
    assert not any(tally.counts[f] for f in fuzzing.FAILURES), "\n\n".join(tally.failures)


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
            text, leading_zero = dump(doc), False
            if data.draw(st.integers(0, 4)) == 0:
                text, leading_zero = respell_numbers(text, data.draw)
            path = write(Path(tmp), "Pulumi.fuzz.yaml", text)
            outcome, _, out, err = run_cli(["validate", "--file", str(path)])
            if leading_zero and outcome == "accepted":
                outcome, err = "misread", "a number with a leading zero (octal to the Pulumi CLI) was accepted"
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


@pytest.fixture(scope="module")
def plan_json(tmp_path_factory):
    """A real plan of the smallest example stack, as `plan --format json` writes it."""
    from gpu_platform.engine import plan_stack

    return plan_stack("aws-dev").to_json()


TRACE = "job_id,team,submit_s,duration_s,gpus,pool,priority\nj1,team-a,0,100,1,,\nj2,team-b,5,50,2,,high\n"


def check_and_simulate(path: Path, trace: Path, tally: Tally, label: str) -> None:
    """`check` and `simulate` on one plan file, each outcome tallied under the command's name and `label`."""
    for argv in (["check", "--plan", str(path)],
                 ["simulate", "--plan", str(path), "--trace", str(trace), "--team-map", "auto", "--baseline", "none"]):
        outcome, _, _, err = run_cli(argv)
        tally.record(outcome, f"{argv[0]}{label}: {err}")


def test_fuzz_plan_files(plan_json):
    """`check --plan` and `simulate --plan` on mutated plan JSON."""
    tally = Tally("check/simulate --plan (plan files)")
    with tempfile.TemporaryDirectory() as tmp:
        trace = write(Path(tmp), "trace.csv", TRACE)

        @settings(FUZZ, max_examples=max(1, examples() // 3))
        @given(st.data())
        def case(data):
            path = write(Path(tmp), "plan.json", json.dumps(mutate(plan_json, data.draw)))
            check_and_simulate(path, trace, tally, "")

        case()
        for i, content in enumerate(("null", "[]", "{}", '{"resources": []}', "1" * 5000, "[" * 100000,
                                     '{"project": "p", "stack": "s", "resources": [{"options": null}]}',
                                     json.dumps({**plan_json, "resources": [{**r, "options": None}
                                                                            for r in plan_json["resources"]]}))):
            path = write(Path(tmp), f"plan{i}.json", content)
            outcome, _, _, err = run_cli(["check", "--plan", str(path)])
            tally.record(outcome, f"check --plan {content[:80]!r}: {err}")
            assert outcome == "refused", (content[:80], err)
    _report(tally)


CELLS = st.one_of(st.sampled_from(["", "0", "1", "-1", "1.5", "nan", "inf", "-inf", "1e308", "1e999", "²", "٣", "１",
                                   "9" * 5000, "team-a", "team-b", "l4-dev", "a10g-train/nvidia.com/gpu",
                                   "nvidia.com/mig-1g.10gb", "high", "gpu-low", "99999", "16", "8", '"', ",",
                                   "caf\u00e9", "x" * 140_000]),
                  st.text(max_size=8))
# A header naming columns (repeats included), or none; and how the file is encoded.
HEADERS = st.one_of(st.none(), st.lists(st.sampled_from(CSV_COLUMNS), min_size=1, max_size=9))
ENCODINGS = st.sampled_from(["utf-8", "utf-8", "utf-8-sig", "latin-1", "cp1252", "utf-16", "utf-16-le", "invalid"])


def encode(text: str, encoding: str) -> bytes:
    if encoding == "invalid":  # a byte no UTF-8 text holds
        return text.encode() + b"\n#\xff\xfe\n"
    return text.encode(encoding, "replace")


def test_fuzz_traces(plan_json):
    """`simulate` on CSV traces with odd cells, and synthetic specs with odd options."""
    tally = Tally("simulate (traces)")
    with tempfile.TemporaryDirectory() as tmp:
        plan = write(Path(tmp), "plan.json", json.dumps(plan_json))

        @settings(FUZZ, max_examples=max(1, examples() // 3))
        @given(st.lists(st.lists(CELLS, min_size=4, max_size=8), min_size=1, max_size=4),
               st.sampled_from(["jobs", "interarrival", "median", "sigma", "max", "gangs", "teams", "pool"]), CELLS,
               HEADERS, ENCODINGS)
        def case(rows, option, value, header, encoding):
            lines = [",".join([f"j{i}", "team-a", "0", "10", "1"][:1] + row) for i, row in enumerate(rows)]
            if header is not None:
                lines.insert(0, ",".join(["job_id", *header]))
            trace = write(Path(tmp), "trace.csv", encode("\n".join(lines) + "\n", encoding))
            for spec in (str(trace), f"synthetic:jobs=20,{option}={value}"):
                outcome, _, _, err = run_cli(["simulate", "--plan", str(plan), "--trace", spec, "--team-map", "auto",
                                              "--baseline", "none", "--horizon", "86400"])
                if spec == str(trace) and header and len(set(header)) < len(header) and outcome == "accepted":
                    outcome, err = "misread", f"header {header} repeats a column and was accepted"
                tally.record(outcome, f"{spec}: {lines if spec == str(trace) else ''}\n{err}")

        case()
    _report(tally)


# Fields the example stacks leave out or hold only valid values in, each given generated values, then planned when
# validate accepts them (some values passed validate and crashed the plan).
FIELDS = [("gpu-platform:cluster", "aws", "capacityBlocks", "h100-block", "availabilityZone"),
          ("gpu-platform:cluster", "aws", "capacityBlocks", "h100-block", "reservationId"),
          ("gpu-platform:observability", "prometheus", "url"),
          ("gpu-platform:gpuPools", 1, "maxNodes")]


def test_fuzz_fields():
    tally = Tally("validate + plan (generated values in chosen fields)")
    seed = yaml.safe_load(EXTRA_SEED)
    with tempfile.TemporaryDirectory() as tmp:

        @settings(FUZZ, max_examples=max(1, examples() // 6))
        @given(st.sampled_from(FIELDS), st.one_of(fuzzing.odd_values(1), fuzzing.URLS, fuzzing.QUANTITIES))
        def case(field, value):
            doc = copy.deepcopy(seed)
            node = doc["config"]
            for key in field[:-1]:
                node = node[key]
            node[field[-1]] = value
            path = write(Path(tmp), "Pulumi.fuzz.yaml", dump(doc))
            outcome, _, _, err = run_cli(["validate", "--file", str(path)])
            if outcome == "accepted":
                outcome, _, _, err = run_cli(["plan", "--file", str(path)])
            tally.record(outcome, f"{field} = {value!r}\n{err}")

        case()
    _report(tally)


QUOTA_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")


def test_fuzz_plan_quantities():
    """Generated quantities in every spelling in the queue quotas and namespace quotas of a production plan with a
    shared time-sliced pool (where GPU002 reads them)."""
    from policy_fixtures import load

    plan_json = load("aws-prod")
    tally = Tally("check/simulate --plan (quantities)")
    with tempfile.TemporaryDirectory() as tmp:
        trace = write(Path(tmp), "trace.csv", TRACE)

        @settings(FUZZ, max_examples=max(1, examples() // 6))
        @given(fuzzing.QUANTITIES, st.sampled_from(QUOTA_FIELDS), st.booleans())
        def case(quantity, field, namespace_quota):
            plan = copy.deepcopy(plan_json)
            for r in plan["resources"]:
                if r["type"].endswith(":ClusterQueue"):
                    for flavor in r["inputs"]["spec"]["resourceGroups"][0]["flavors"]:
                        flavor["resources"][0][field] = quantity
                if namespace_quota and r["type"] == "kubernetes:core/v1:ResourceQuota":
                    r["inputs"]["spec"]["hard"] = {k: quantity for k in r["inputs"]["spec"]["hard"]}
            path = write(Path(tmp), "plan.json", json.dumps(plan))
            check_and_simulate(path, trace, tally, f" {field}={quantity!r}")

        case()
    _report(tally)
