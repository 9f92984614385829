"""CreateStateMachine and UpdateStateMachine on the local cloud refuse repeated state names, as AWS does.

AWS's answer for a repeated name: InvalidDefinition, "Invalid State Machine Definition:
'DUPLICATE_STATE_NAME: Duplicate State name: <name> at <path>'". The path it prints for a state inside a
Map processor is not confirmed (docs/fidelity.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from orderbatch.cli import main
from orderbatch.localcloud.cloud import LOCAL_ROLE_ARN, LocalCloud, LocalCloudConfig
from orderbatch.localcloud.stack import TemplateError

pytestmark = pytest.mark.e2e


def two_maps(first_processor_state: str, second_processor_state: str) -> dict[str, Any]:
    """A state machine whose two Maps each run one Pass state, named as given."""

    def map_state(state_name: str, following: dict[str, Any]) -> dict[str, Any]:
        return {
            "Type": "Map",
            "ItemsPath": "$.items",
            "ItemProcessor": {"StartAt": state_name, "States": {state_name: {"Type": "Pass", "End": True}}},
            "ResultPath": None,
            **following,
        }

    return {
        "StartAt": "First map",
        "States": {
            "First map": map_state(first_processor_state, {"Next": "Second map"}),
            "Second map": map_state(second_processor_state, {"End": True}),
        },
    }


DUPLICATED = two_maps("Handle item", "Handle item")
UNIQUE = two_maps("Handle item", "Handle item again")
DUPLICATE_MESSAGE = (
    "Invalid State Machine Definition: 'DUPLICATE_STATE_NAME: Duplicate State name: Handle item "
    "at /States/Second map/ItemProcessor/States/Handle item'"
)


def template_with(tmp_path: Path, definition: dict[str, Any]) -> Path:
    template = tmp_path / "template.yaml"
    template.write_text(
        "AWSTemplateFormatVersion: '2010-09-09'\n"
        "Transform: AWS::Serverless-2016-10-31\n"
        "Resources:\n"
        "  Machine:\n"
        "    Type: AWS::Serverless::StateMachine\n"
        "    Properties:\n"
        f"      Definition: {json.dumps(definition)}\n"
    )
    return template


@pytest.fixture(scope="module")
def sfn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    template = template_with(tmp_path_factory.mktemp("unique"), UNIQUE)
    with LocalCloud(LocalCloudConfig(template=template, account_concurrency=10)) as running:
        yield running.client("stepfunctions")


def test_a_name_repeated_in_two_map_processors_is_an_invalid_definition(sfn: Any) -> None:
    with pytest.raises(ClientError) as refused:
        sfn.create_state_machine(name="duplicated", definition=json.dumps(DUPLICATED), roleArn=LOCAL_ROLE_ARN)

    assert refused.value.response["Error"]["Code"] == "InvalidDefinition"
    assert refused.value.response["Error"]["Message"] == DUPLICATE_MESSAGE
    names = [machine["name"] for machine in sfn.list_state_machines()["stateMachines"]]
    assert "duplicated" not in names


def test_unique_names_are_created_and_an_update_cannot_repeat_one(sfn: Any) -> None:
    arn = sfn.create_state_machine(name="unique", definition=json.dumps(UNIQUE), roleArn=LOCAL_ROLE_ARN)[
        "stateMachineArn"
    ]
    assert json.loads(sfn.describe_state_machine(stateMachineArn=arn)["definition"]) == UNIQUE

    with pytest.raises(ClientError) as refused:
        sfn.update_state_machine(stateMachineArn=arn, definition=json.dumps(DUPLICATED))

    assert refused.value.response["Error"]["Code"] == "InvalidDefinition"
    assert (
        "DUPLICATE_STATE_NAME: Duplicate State name: Handle item"
        in refused.value.response["Error"]["Message"]
    )
    assert json.loads(sfn.describe_state_machine(stateMachineArn=arn)["definition"]) == UNIQUE


def test_a_template_repeating_a_state_name_does_not_start(tmp_path: Path) -> None:
    template = template_with(tmp_path, DUPLICATED)

    with pytest.raises(TemplateError) as refused:
        LocalCloud(LocalCloudConfig(template=template, account_concurrency=10)).__enter__()

    assert str(refused.value) == f"Machine: {DUPLICATE_MESSAGE}"


def test_local_up_stops_with_the_refused_state_machine_and_why(tmp_path: Path) -> None:
    template = template_with(tmp_path, DUPLICATED)

    with pytest.raises(SystemExit) as stopped:
        main(
            [
                "local",
                "up",
                "--template",
                str(template),
                "--port",
                "0",
                "--state-dir",
                str(tmp_path / "state"),
            ]
        )

    assert stopped.value.code == f"orderbatch: Machine: {DUPLICATE_MESSAGE}"


def test_a_definition_moto_cannot_parse_is_an_invalid_definition_too(sfn: Any) -> None:
    with pytest.raises(ClientError) as refused:
        sfn.create_state_machine(name="unparsable", definition="{not json", roleArn=LOCAL_ROLE_ARN)

    assert refused.value.response["Error"]["Code"] == "InvalidDefinition"
    assert "mismatched input" in refused.value.response["Error"]["Message"]
