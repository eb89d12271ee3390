"""Reading stack files, plan files and exemption files as the Pulumi CLI would, refusing the rest with exit 2."""
from __future__ import annotations

import json
import re

import pytest

from components.config import ConfigError, read_stack_file
from components.config.reader import MAX_DEPTH, ReadError, load_yaml

from support.fuzzing import run_cli

STACK = """config:
  gpu-platform:cloud: aws
  gpu-platform:cluster: {name: c1, region: us-east-1}
  gpu-platform:gpuPools:
    - {name: h100, instanceType: p5.48xlarge, maxNodes: 2}
  gpu-platform:teams:
    - {name: research, quotas: {h100: 8}}
"""


def _validate(tmp_path, content: bytes | str):
    path = tmp_path / "Pulumi.t.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return run_cli(["validate", "--file", str(path)])


@pytest.mark.parametrize("text, value", [
    ("v: yes", "yes"), ("v: on", "on"), ("v: No", "No"), ("v: 1:30", "1:30"), ("v: 0o17", 15), ("v: 0x1F", 31),
    ("v: 1_0", 10), ("v: 0x1_F", 31), ("v: 2027-01-01", "2027-01-01"), ("v: true", True), ("v: ~", None), ("v: 1e3", 1000.0),
    ("v: .inf", float("inf")),
])
def test_scalars_are_yaml_1_2_as_the_pulumi_cli_reads_them(text, value):
    assert load_yaml(text) == {"v": value}


@pytest.mark.parametrize("text, message", [
    ("a: 1\na: 2\n", "duplicate key 'a' (lines 1 and 2)"),
    ("a: &x [*x]\n", "recursive alias"),
    ("a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), f"nested deeper than {MAX_DEPTH} levels"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdef", "bcdefg")), "expands to more than"),
    ("? [a, b]\n: 1\n", "a mapping key must be a string"),
    ("{1: 2}", "mapping key 1 must be a string"),
    ("a: !!binary aGVsbG8=", "a bytes value"),
    ("a: !!python/object:os.system [x]", "not valid YAML"),
    ("a: " + "9" * 40, "has 40 digits"),
])
def test_unreadable_documents_are_refused(text, message):
    with pytest.raises(ReadError, match=re.escape(message)):
        load_yaml(text)


def test_an_alias_bomb_is_refused_quickly(tmp_path):
    import time

    bomb = "config:\n  a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9))
    start = time.monotonic()
    outcome, code, _, err = _validate(tmp_path, bomb)
    assert (outcome, code) == ("refused", 2) and "expands to more than" in err
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("encode, accepted", [
    (lambda t: t.encode("utf-16"), True),  # with a byte-order mark, as yaml.v3 reads it
    (lambda t: b"\xef\xbb\xbf" + t.encode(), True),
    (lambda t: t.encode("utf-16-le"), False),
    (lambda t: t.replace("research", "r\xe9search").encode("latin-1"), False),
])
def test_encodings(tmp_path, encode, accepted):
    outcome, code, out, err = _validate(tmp_path, encode(STACK))
    if accepted:
        assert code == 0, err
    else:
        assert outcome == "refused" and "not UTF-8 text" in err and "Traceback" not in err


def test_duplicate_top_level_keys_are_refused_not_last_one_wins(tmp_path):
    outcome, _, _, err = _validate(tmp_path, STACK + "  gpu-platform:cloud: gcp\n")
    assert outcome == "refused" and "duplicate key 'gpu-platform:cloud'" in err


def test_yaml_1_1_scalars_reach_the_validator_as_strings(tmp_path):
    text = STACK.replace("maxNodes: 2", "maxNodes: 1:30")
    outcome, _, _, err = _validate(tmp_path, text)
    assert outcome == "refused" and "gpuPools[0].maxNodes: must be a whole number; got '1:30'" in err


def test_names_that_are_lists_or_maps_are_errors_not_tracebacks(tmp_path):
    for name in ("[a, b]", "{a: 1}"):
        outcome, _, _, err = _validate(tmp_path, STACK.replace("name: h100,", f"name: {name},"))
        assert outcome == "refused" and "gpuPools[0].name: must be a string" in err, err


def test_stack_file_reader_raises_config_errors(tmp_path):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_bytes(b"config:\n  1: 2\n")
    with pytest.raises(ConfigError, match="mapping key 1 must be a string"):
        read_stack_file(path)


@pytest.fixture(scope="module")
def plan_json():
    from gpu_platform.engine import plan_stack

    return plan_stack("aws-dev").to_json()


@pytest.mark.parametrize("change, message", [
    (lambda p: None, "the document must be a JSON object"),
    (lambda p: [], "the document must be a JSON object"),
    (lambda p: {**p, "resources": []}, "resources: is empty"),
    (lambda p: {**p, "resources": {}}, "resources: must be a list"),
    (lambda p: {**p, "resources": [{**p["resources"][0], "options": None}]}, "resources[0].options: must be an object"),
    (lambda p: {**p, "resources": [{**p["resources"][0], "inputs": [1]}]}, "resources[0].inputs: must be an object"),
    (lambda p: {**p, "resources": [{**p["resources"][0], "urn": {"a": 1}}]}, "resources[0].urn: must be a string"),
    (lambda p: {**p, "resources": [{**p["resources"][0],
                                    "options": {"dependsOn": [{}]}}]}, "options.dependsOn: must be a list of strings"),
])
def test_check_plan_refuses_bad_plan_files_with_what_is_wrong(tmp_path, plan_json, change, message):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(change(plan_json)))
    for argv in (["check", "--plan", str(path)], ["simulate", "--plan", str(path), "--trace", "synthetic"]):
        outcome, code, _, err = run_cli(argv)
        assert (outcome, code) == ("refused", 2) and message in err, (argv[0], err)


@pytest.mark.parametrize("content, message", [
    ("[" * 100000, "nested too deeply"), ("1" * 5000, "not usable JSON"), ("\xff".encode("latin-1"), "not UTF-8"),
])
def test_check_plan_refuses_unreadable_json(tmp_path, content, message):
    path = tmp_path / "plan.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    outcome, code, _, err = run_cli(["check", "--plan", str(path)])
    assert (outcome, code) == ("refused", 2) and message in err, err


def test_check_plan_with_non_numeric_quantities_is_not_a_traceback(tmp_path, plan_json):
    resources = [{**r, "inputs": {**r["inputs"], "spec": {"hard": {"requests.nvidia.com/gpu": "lots"}}}}
                 if r["type"] == "kubernetes:core/v1:ResourceQuota" else r for r in plan_json["resources"]]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({**plan_json, "resources": resources}))
    outcome, code, _, err = run_cli(["check", "--plan", str(path)])
    assert outcome in ("accepted", "refused"), err


@pytest.mark.parametrize("key, expected", [
    ("gpu-platfrom:teams", "gpu-platfrom:teams: unknown config key: namespace 'gpu-platfrom' is not 'gpu-platform'; "
                           "did you mean gpu-platform:teams?"),
    ("gpu_platform:team", "gpu_platform:team: unknown config key: namespace 'gpu_platform' is not 'gpu-platform'; "
                          "did you mean gpu-platform:teams?"),
    ("gpu-platform:team", "gpu-platform:team: unknown config key; did you mean gpu-platform:teams? allowed: "),
])
def test_a_mistyped_key_is_named_with_the_key_it_likely_meant(tmp_path, key, expected):
    outcome, code, _, err = _validate(tmp_path, STACK.replace("gpu-platform:teams", key))
    assert (outcome, code) == ("refused", 2)
    assert expected in err


def test_other_providers_keys_are_left_to_them(tmp_path):
    outcome, code, _, err = _validate(tmp_path, STACK + "  aws:region: us-east-1\n  kubernetes:context: x\n")
    assert code == 0, err


@pytest.mark.parametrize("text, where, what", [
    (STACK.replace("quotas: {h100: 8}", "quotas: {h100: 8"), "line 8, column 1",
     "expected ',' or '}', but got the end of the file (in the { mapping that starts on line 7)"),
    (STACK.replace("  gpu-platform:cloud: aws", "  gpu-platform:cloud: aws\n   region: x"), "line 3, column 10",
     "a `key: value` is not allowed here"),
    (STACK.replace("  gpu-platform:cloud", "\tgpu-platform:cloud"), "line 2, column 1",
     "a tab: YAML indents with spaces only"),
])
def test_a_yaml_syntax_error_names_the_file_and_line_in_our_words(tmp_path, text, where, what):
    outcome, code, _, err = _validate(tmp_path, text)
    assert (outcome, code) == ("refused", 2)
    assert f"Pulumi.t.yaml: is not valid YAML: {where}: {what}" in err
    assert "<unicode string>" not in err and "^" not in err and "Traceback" not in err
