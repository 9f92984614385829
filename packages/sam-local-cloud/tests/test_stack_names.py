"""The stack's name, as `sam deploy` would give it: samconfig.toml's beside the template, else sam-app.

Every generated physical name (a table's, a queue's, a role's) starts with it, as on AWS."""

from __future__ import annotations

from pathlib import Path

import pytest

from sam_local_cloud.stack import load_stack

TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Items:
    Type: AWS::Serverless::SimpleTable
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "template.yaml").write_text(TEMPLATE)
    return tmp_path


def test_without_samconfig_the_stack_is_sam_deploy_guideds_default(project: Path) -> None:
    stack = load_stack(project / "template.yaml")

    assert stack.stack_name == "sam-app"
    assert stack.table_name("Items") == "sam-app-Items"


def test_samconfigs_deploy_stack_name_names_the_stack(project: Path) -> None:
    (project / "samconfig.toml").write_text(
        'version = 0.1\n[default.global.parameters]\nstack_name = "global-name"\n'
        '[default.deploy.parameters]\nstack_name = "team-orders"\nregion = "eu-west-1"\n'
    )

    assert load_stack(project / "template.yaml").table_name("Items") == "team-orders-Items"


def test_samconfigs_global_stack_name_serves_when_deploy_names_none(project: Path) -> None:
    config = 'version = 0.1\n[default.global.parameters]\nstack_name = "shared"\n'
    (project / "samconfig.toml").write_text(config)

    assert load_stack(project / "template.yaml").stack_name == "shared"


def test_a_samconfig_that_does_not_parse_leaves_the_default(project: Path) -> None:
    (project / "samconfig.toml").write_text("[default.deploy.parameters\nstack_name = ")

    assert load_stack(project / "template.yaml").stack_name == "sam-app"


def test_a_name_given_wins_over_samconfig(project: Path) -> None:
    (project / "samconfig.toml").write_text('version = 0.1\n[default.deploy.parameters]\nstack_name = "x"\n')

    assert load_stack(project / "template.yaml", stack_name="given").stack_name == "given"
