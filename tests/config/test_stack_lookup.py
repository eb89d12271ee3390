"""Stack names are found outside the repo: `--stacks-dir DIR` on every command that takes one, else the working
directory's `stacks/` or its own `Pulumi.<stack>.yaml`; a name found nowhere lists the stacks that were."""
from __future__ import annotations

import shutil

import pytest

from gpu_platform.cli import main

from support.paths import ROOT

# (argv after the stack arguments, what stdout starts with) for every command that takes a stack name.
COMMANDS = [
    (["validate"], ""),
    (["plan", "--format", "json"], "{"),
    (["check", "--format", "json"], "{"),
    (["simulate", "--format", "json", "--baseline", "none", "--trace", "synthetic:jobs=3,interarrival=60"], "{"),
    (["nccl-test", "--pool", "a10g-train"], "apiVersion"),
]


@pytest.fixture
def user_project(tmp_path, monkeypatch):
    """A user's own Pulumi project: one stack beside Pulumi.yaml, one under a folder of their choosing; the
    working directory is elsewhere, so only --stacks-dir or the working directory can find them."""
    (tmp_path / "mystacks").mkdir()
    shutil.copy(ROOT / "stacks" / "Pulumi.aws-dev.yaml", tmp_path / "mystacks" / "Pulumi.team-a.yaml")
    shutil.copy(ROOT / "stacks" / "Pulumi.gcp-dev.yaml", tmp_path / "Pulumi.beside.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("argv, starts", COMMANDS, ids=lambda v: v[0] if isinstance(v, list) else "")
def test_every_stack_command_reads_a_stack_from_stacks_dir(user_project, argv, starts, capsys):
    assert main([argv[0], "team-a", "--stacks-dir", str(user_project / "mystacks"), *argv[1:]]) == 0
    out = capsys.readouterr().out
    assert out.startswith(starts)
    if argv[0] == "validate":
        assert "mystacks/Pulumi.team-a.yaml: valid (aws" in out


def test_a_stack_beside_the_users_pulumi_yaml_is_found_from_the_working_directory(user_project, capsys):
    assert main(["validate", "beside"]) == 0
    assert capsys.readouterr().out.startswith(f"{user_project / 'Pulumi.beside.yaml'}: valid (gcp")


def test_the_working_directorys_stacks_folder_comes_before_the_examples(user_project, capsys):
    (user_project / "stacks").mkdir()
    shutil.copy(ROOT / "stacks" / "Pulumi.gcp-dev.yaml", user_project / "stacks" / "Pulumi.aws-prod.yaml")
    assert main(["validate", "aws-prod"]) == 0
    assert capsys.readouterr().out.startswith(f"{user_project / 'stacks' / 'Pulumi.aws-prod.yaml'}: valid (gcp")


def test_the_example_stacks_are_found_from_anywhere(user_project, capsys):
    assert main(["validate", "oci-prod"]) == 0
    assert "stacks/Pulumi.oci-prod.yaml: valid (oci" in capsys.readouterr().out


def test_a_missing_stack_lists_the_stacks_found(user_project, capsys):
    assert main(["plan", "team-b", "--stacks-dir", "mystacks"]) == 2
    err = capsys.readouterr().err
    assert "stack: no stack 'team-b' (Pulumi.team-b.yaml); stacks found: mystacks: team-a." in err
    assert main(["validate", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert f"{user_project}: beside;" in err and "aws-dev, aws-prod, azure-prod" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["validate", "x", "--stacks-dir", "no/such/dir"], "stacks-dir: no/such/dir is not a directory"),
    (["validate", "--stacks-dir", "mystacks", "--file", "mystacks/Pulumi.team-a.yaml"], "--file gives a path"),
    (["check", "--stacks-dir", "mystacks", "--plan", "plan.json"], "--stacks-dir finds the stack named beside --plan"),
    (["plan", "--stacks-dir", "mystacks", "--program", "."], "do not also pass --file or --stacks-dir"),
])
def test_stacks_dir_misuse_is_a_usage_error(user_project, argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err
