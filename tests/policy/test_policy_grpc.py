"""The pack as the Pulumi CLI runs it: the SDK's analyzer gRPC server, in-process on a localhost port, asked
Analyze for every resource and AnalyzeStack once, gives the same findings as the offline runner."""
from __future__ import annotations

from concurrent import futures

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer

from components.config.model import Exemption, Policy
from gpu_platform.engine.plan import Plan
from gpu_platform.policy.runner import evaluate
from policies import context
from policies.rules import BY_ID, POLICIES, RULES

from policy_fixtures import TODAY, UNKNOWN, inputs, load
from support.policy import public_endpoint, second_team_on_time_sliced_pool, two_driver_owners, untaint

TIMEOUT = 20  # seconds per call: a hung server fails the test instead of the suite


@pytest.fixture(scope="module")
def analyzer():
    servicer = _PolicyAnalyzerServicer("gpu-platform", "1.0.0", POLICIES, EnforcementLevel.MANDATORY)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    analyzer_pb2_grpc.add_AnalyzerServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    grpc.channel_ready_future(channel).result(timeout=TIMEOUT)
    yield analyzer_pb2_grpc.AnalyzerStub(channel)
    channel.close()
    server.stop(grace=None)


def broken_plan() -> dict:
    plan = load("aws-prod")
    for change in (untaint, second_team_on_time_sliced_pool, public_endpoint, two_driver_owners):
        change(plan)
    inputs(plan, "gpu-platform:cluster:GpuNodePool", "ml-prod-a100-infer")["workload"] = UNKNOWN
    return plan


def _struct(values: dict) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(values)
    return struct


def _options(resource: dict) -> analyzer_pb2.AnalyzerResourceOptions:
    return analyzer_pb2.AnalyzerResourceOptions(protect=bool(resource["options"]["protect"]),
                                                parent=resource["parent"])


def ask_analyzer(stub, plan: dict) -> tuple[set, set]:
    """(policy name, urn, message) of every violation, and (policy name, urn) of every preview skip."""
    prefix = {p.name: p.description + "\n" for p in POLICIES}
    violations, skipped = set(), set()

    def collect(response, urn: str) -> None:
        for diagnostic in response.diagnostics:
            target = diagnostic.urn or urn
            if diagnostic.message.startswith("can't run policy"):
                skipped.add((diagnostic.policyName, target))
            else:
                violations.add((diagnostic.policyName, target,
                                diagnostic.message.removeprefix(prefix[diagnostic.policyName])))

    for resource in plan["resources"]:
        response = stub.Analyze(analyzer_pb2.AnalyzeRequest(
            type=resource["type"], properties=_struct(resource["inputs"]), urn=resource["urn"],
            name=resource["name"], options=_options(resource)), timeout=TIMEOUT)
        collect(response, resource["urn"])
    stack = [analyzer_pb2.AnalyzerResource(
        type=r["type"], properties=_struct(r["inputs"]), urn=r["urn"], name=r["name"], options=_options(r),
        parent=r["parent"], dependencies=r["options"]["dependsOn"]) for r in plan["resources"]]
    collect(stub.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=stack), timeout=TIMEOUT), "")
    return violations, skipped


def test_analyzer_info_carries_rule_metadata(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=TIMEOUT)
    assert info.name == "gpu-platform"
    by_name = {p.name: p for p in info.policies}
    assert sorted(by_name) == sorted(rule.policy.name for rule in RULES)
    gpu007 = by_name[BY_ID["GPU007"].policy.name]
    assert gpu007.severity == analyzer_pb2.POLICY_SEVERITY_CRITICAL
    assert gpu007.enforcementLevel == analyzer_pb2.MANDATORY
    assert gpu007.url == "RULES.md#gpu007"
    assert gpu007.remediation_steps.startswith("1. Pick one owner per pool")
    assert by_name[BY_ID["GPU009"].policy.name].enforcementLevel == analyzer_pb2.ADVISORY


def test_analyzer_and_offline_runner_find_the_same(analyzer):
    plan = broken_plan()
    with context.using(context.build("production", Policy(), TODAY)):
        violations, skipped = ask_analyzer(analyzer, plan)
    offline = evaluate(Plan.from_json(plan), context.build("production", Policy(), TODAY), RULES)
    expected = {(BY_ID[f.rule].policy.name, f.urn, f.message) for f in offline.findings}
    assert violations == expected
    # GPU019 (advisory): the aws-prod base's own unreachable capacity.
    assert {BY_ID[f.rule].id for f in offline.findings} == {"GPU001", "GPU002", "GPU007", "GPU011", "GPU019"}
    expected_skips = {(BY_ID[n.rule].policy.name, n.urn) for n in offline.notes if n.kind == "unknown"}
    assert skipped == expected_skips and {name for name, _ in skipped} == {BY_ID["GPU005"].policy.name}


def test_analyzer_honours_the_same_exemptions(analyzer):
    plan = load("aws-prod")
    untaint(plan)
    policy = Policy(exemptions=(Exemption("GPU001", "ml-prod-h100-*", "taint restored in the next release "
                                                  "(PLAT-7), pool drained meanwhile", TODAY.replace(month=9)),))
    ctx = context.build("production", policy, TODAY)
    with context.using(ctx):
        violations, _ = ask_analyzer(analyzer, plan)
    assert [v for v in violations if v[0] == BY_ID["GPU001"].policy.name] == []
    assert {u.rule for u in ctx.exemptions.used} == {"GPU001"}


def test_pack_serves_like_under_the_pulumi_cli(tmp_path):
    """`python -m pulumi.policy <engine> policies`, as pulumi-analyzer-policy-python starts it: prints its port."""
    import subprocess
    import sys

    from support.paths import ROOT

    process = subprocess.Popen([sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:0", str(ROOT / "policies")],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(process.stdout.readline().strip())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            info = analyzer_pb2_grpc.AnalyzerStub(channel).GetAnalyzerInfo(empty_pb2.Empty(), timeout=TIMEOUT)
        assert info.name == "gpu-platform" and len(info.policies) == len(RULES)
    finally:
        process.kill()
        process.wait(timeout=TIMEOUT)
