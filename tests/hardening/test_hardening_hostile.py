"""Issue 25, input: the traceback classes that remained. Each bad input is refused with exit 2 and a message
naming where it is and what is allowed; the control next to it is accepted."""
from __future__ import annotations

import json
import re

import pytest

from components.config.reader import ReadError, load_yaml

from support.clouds import EXISTING
from support.fuzzing import run_cli, write

TRACE_HEADER = "job_id,team,submit_s,duration_s,gpus"


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory):
    from gpu_platform.engine import plan_stack

    return write(tmp_path_factory.mktemp("plan"), "plan.json", json.dumps(plan_stack("aws-dev").to_json()))


def simulate(plan_file, trace):
    return run_cli(["simulate", "--plan", str(plan_file), "--trace", str(trace), "--team-map", "auto",
                    "--baseline", "none"])


def validate(tmp_path, text):
    return run_cli(["validate", "--file", str(write(tmp_path, "Pulumi.t.yaml", text))])


# A URL with an unbalanced bracket ------------------------------------------------------------------------------

URL_STACK = EXISTING + """  gpu-platform:observability:
    prometheus: {install: false, url: "URL"}
"""


@pytest.mark.parametrize("url", ["http://[::1", "http://[::1]]:9090", "https://prom]:9090", "http://[fe80::1%25]:80"])
def test_url_with_an_unbalanced_bracket_is_refused(tmp_path, url):
    outcome, code, _, err = validate(tmp_path, URL_STACK.replace("URL", url))
    assert (outcome, code) == ("refused", 2), err
    assert "observability.prometheus.url" in err and "is not an http(s) URL" in err


def test_url_with_an_ipv6_host_is_accepted(tmp_path):
    outcome, _, _, err = validate(tmp_path, URL_STACK.replace("URL", "http://[fd00::1]:9090"))
    assert outcome == "accepted", err


# A trace CSV with a repeated header column ----------------------------------------------------------------------


@pytest.mark.parametrize("header", ["job_id,team,team,submit_s,duration_s,gpus",
                                    "job_id,job_id,team,submit_s,duration_s,gpus",
                                    "job_id,team,submit_s,duration_s,gpus,gpus"])
def test_trace_header_repeating_a_column_is_refused(tmp_path, plan_file, header):
    trace = write(tmp_path, "t.csv", f"{header}\nj1,team-a,team-b,0,10,1\n")
    outcome, code, _, err = simulate(plan_file, trace)
    assert (outcome, code) == ("refused", 2), err
    assert re.search(r"t\.csv:1: header names column\(s\) \w+ more than once", err)


def test_trace_with_a_field_past_the_csv_limit_is_refused(tmp_path, plan_file):
    huge = "x" * 200_000  # more than the csv module's field size limit
    outcome, code, _, err = simulate(plan_file, write(tmp_path, "t.csv", f'{TRACE_HEADER}\nj1,"{huge}",0,10,1\n'))
    assert (outcome, code) == ("refused", 2) and "t.csv:2: not a CSV line" in err


# A trace that is not UTF-8 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [
    f"{TRACE_HEADER}\nj1,caf\xe9,0,10,1\n".encode("latin-1"),
    f"{TRACE_HEADER}\nj1,team-a,0,10,1\n".encode("utf-16"),
    b"\xff\xfe\x00",
])
def test_trace_that_is_not_utf8_is_refused(tmp_path, plan_file, content):
    outcome, code, _, err = simulate(plan_file, write(tmp_path, "t.csv", content))
    assert (outcome, code) == ("refused", 2), err
    assert "trace is not UTF-8 text" in err


def test_utf8_trace_with_a_byte_order_mark_is_accepted(tmp_path, plan_file):
    content = b"\xef\xbb\xbf" + f"{TRACE_HEADER}\nj1,team-a,0,10,1\n".encode()
    outcome, _, _, err = simulate(plan_file, write(tmp_path, "t.csv", content))
    assert outcome == "accepted", err


# Any Kubernetes quantity suffix in a plan file -------------------------------------------------------------------

SUFFIXES = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E", "m", "e3", "E-1", ""]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_plan_quantities_with_any_suffix_are_read(tmp_path, plan_file, suffix):
    plan = json.loads(plan_file.read_text())
    for r in plan["resources"]:
        if r["type"].endswith(":ClusterQueue"):
            for group in r["inputs"]["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    for resource in flavor["resources"]:
                        resource["nominalQuota"] = f"8{suffix}"
        if r["type"] == "kubernetes:core/v1:ResourceQuota":
            r["inputs"]["spec"]["hard"] = {k: f"2{suffix}" for k in r["inputs"]["spec"]["hard"]}
    path = write(tmp_path, "plan.json", json.dumps(plan))
    trace = write(tmp_path, "t.csv", f"{TRACE_HEADER}\nj1,team-a,0,10,1\n")
    for argv in (["check", "--plan", str(path)], ["simulate", "--plan", str(path), "--trace", str(trace),
                                                   "--team-map", "auto", "--baseline", "none"]):
        outcome, _, _, err = run_cli(argv)
        assert outcome == "accepted", (argv[0], err)


def test_plan_quantity_that_is_not_one_is_refused(tmp_path, plan_file):
    plan = json.loads(plan_file.read_text())
    queue = next(r for r in plan["resources"] if r["type"].endswith(":ClusterQueue"))
    queue["inputs"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "8KiB"
    path = write(tmp_path, "plan.json", json.dumps(plan))
    trace = write(tmp_path, "t.csv", f"{TRACE_HEADER}\nj1,team-a,0,10,1\n")
    outcome, code, _, err = run_cli(["simulate", "--plan", str(path), "--trace", str(trace), "--team-map", "auto",
                                     "--baseline", "none"])
    assert (outcome, code) == ("refused", 2) and "'8KiB' is not a Kubernetes quantity" in err


# A non-string Capacity Block availability zone ---------------------------------------------------------------


@pytest.mark.parametrize("zone", ["5", "[eu-west-1b]", "{a: 1}", "null", "true", "''"])
def test_capacity_block_zone_that_is_not_a_string_is_refused_by_validate(tmp_path, zone):
    text = EXISTING.replace("availabilityZone: eu-west-1b", f"availabilityZone: {zone}")
    outcome, code, _, err = validate(tmp_path, text)
    assert (outcome, code) == ("refused", 2), err
    assert "cluster.aws.capacityBlocks" in err and "availabilityZone: <zone>" in err
    outcome, code, _, err = run_cli(["plan", "--file", str(write(tmp_path, "Pulumi.t.yaml", text))])
    assert (outcome, code) == ("refused", 2), err


def test_capacity_block_with_a_zone_is_accepted(tmp_path):
    outcome, _, _, err = validate(tmp_path, EXISTING)
    assert outcome == "accepted", err


# Numbers as the Pulumi CLI's YAML reads them -------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [("v: 1_0", 10), ("v: 1_000_000", 10 ** 6), ("v: 0x_1F", 31),
                                         ("v: 0b101", 5), ("v: -0o17", -15), ("v: 1_0.5", 10.5), ("v: 0", 0),
                                         ("v: '010'", "010")])
def test_numbers_read_as_the_pulumi_cli_reads_them(text, value):
    assert load_yaml(text) == {"v": value}


@pytest.mark.parametrize("text, meaning", [("v: 010", "octal 8"), ("v: [1, {w: 0_17}]", "octal 15"),
                                           ("v: 09", "the float 9"), ("v: -007", "octal -7")])
def test_a_leading_zero_is_refused_at_its_path(text, meaning):
    with pytest.raises(ReadError, match=re.escape(f"which the Pulumi CLI reads as {meaning}")):
        load_yaml(text)


def test_a_leading_zero_in_a_stack_file_names_the_field(tmp_path):
    outcome, code, _, err = validate(tmp_path, EXISTING.replace("maxNodes: 2, capacityType: spot",
                                                                "maxNodes: 02, capacityType: spot"))
    assert (outcome, code) == ("refused", 2)
    assert "gpu-platform:gpuPools[0].maxNodes: 02 has a leading zero, which the Pulumi CLI reads as octal 2" in err
