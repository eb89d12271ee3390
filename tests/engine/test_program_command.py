"""`gpu-platform plan|check --program DIR`: a user's own Pulumi program planned offline by the stacks' engine, and the
policy pack run on it; a directory that is no program, or a program that fails, said plainly with the user's line."""
from __future__ import annotations

import json

from gpu_platform.cli import main

from support.paths import ROOT

EXAMPLE = ROOT / "docs" / "examples" / "components_alone"


def write_program(tmp_path, main_py: str):
    """The docs example's project and stack beside `main_py`."""
    (tmp_path / "Pulumi.yaml").write_text("name: my-cluster\nruntime:\n  name: python\n")
    (tmp_path / "Pulumi.example.yaml").write_text((EXAMPLE / "Pulumi.example.yaml").read_text())
    (tmp_path / "__main__.py").write_text(main_py)
    return tmp_path


def test_plan_of_the_docs_example(capsys, tmp_path):
    out = tmp_path / "plan.json"
    assert main(["plan", "--program", str(EXAMPLE), "--format", "json", "--out", str(out)]) == 0
    plan = json.loads(out.read_text())
    assert (plan["project"], plan["stack"]) == ("my-cluster", "example")
    assert len(plan["resources"]) == 16  # the compute quota included
    assert plan["outputs"] == {"teamNamespace": "research"}
    assert all(r["urn"].startswith("urn:pulumi:example::my-cluster::") for r in plan["resources"])


def test_check_of_the_docs_example_passes_the_policy_pack(capsys):
    assert main(["check", "--program", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "16 resources" in out and "0 failing" in out and "-> PASS" in out


def test_check_fails_a_program_that_opens_isolation(capsys, tmp_path):
    write_program(tmp_path, (EXAMPLE / "__main__.py").read_text().replace(
        "    protect=True,\n", "    protect=True,\n    network_policies={},\n"))
    assert main(["check", "--program", str(tmp_path)]) == 1
    assert "FAIL GPU015" in capsys.readouterr().out


def test_a_directory_without_pulumi_yaml(capsys, tmp_path):
    assert main(["plan", "--program", str(tmp_path)]) == 2
    assert f"gpu-platform plan: --program {tmp_path}: no Pulumi.yaml there" in capsys.readouterr().err


def test_a_program_that_raises_shows_its_own_line_not_ours(capsys, tmp_path):
    write_program(tmp_path, "import pulumi\n\nvalue = {}\nprint(value['missing'])\n")
    assert main(["check", "--program", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "__main__.py:4: print(value['missing'])" in err and "KeyError: 'missing'" in err
    assert "Traceback" not in err and "gpu_platform" not in err and "runpy" not in err


def test_invalid_component_args_in_a_program_name_the_property(capsys, tmp_path):
    write_program(tmp_path, (EXAMPLE / "__main__.py").read_text().replace('"a100": "managed"', '"a100": "image"'))
    assert main(["plan", "--program", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "GpuOperatorArgs.driver_owners.a100: 'image' is not allowed; allowed: managed, operator" in err
    assert "__main__.py:13: operator = GpuOperator(" in err


def test_program_and_file_are_exclusive(capsys):
    assert main(["plan", "--program", str(EXAMPLE), "--file", "stacks/Pulumi.aws-dev.yaml"]) == 2
    assert "--program plans your own program" in capsys.readouterr().err


def test_stack_config_is_the_programs_own_project(capsys, tmp_path):
    """Keys without a project in the stack file, and Pulumi.yaml defaults, belong to the program's project."""
    write_program(tmp_path, "import pulumi\n\nconfig = pulumi.Config()\n"
                            "pulumi.export('greeting', config.require('greeting'))\n"
                            "pulumi.export('team', config.require('team'))\n")
    (tmp_path / "Pulumi.yaml").write_text("name: my-cluster\nruntime: python\nconfig:\n  team:\n    default: ml\n")
    (tmp_path / "Pulumi.example.yaml").write_text("config:\n  greeting: hello\n")
    out = tmp_path / "plan.json"
    assert main(["plan", "--program", str(tmp_path), "example", "--format", "json", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["outputs"] == {"greeting": "hello", "team": "ml"}


def test_several_stacks_need_a_name(capsys, tmp_path):
    write_program(tmp_path, "import pulumi\n")
    (tmp_path / "Pulumi.prod.yaml").write_text("encryptionsalt: v1:abc\n")  # what `pulumi stack init` writes
    assert main(["plan", "--program", str(tmp_path), "prod"]) == 0
    assert main(["plan", "--program", str(tmp_path)]) == 2
    assert "several stacks (example, prod); name one" in capsys.readouterr().err
