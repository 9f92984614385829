"""Definitions AWS accepts and moto's grammar refused: created, described as written, run as AWS runs them,
and still refused where AWS refuses them (docs/fidelity.md, "Definitions moto's grammar lacks")."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.deployment import LOCAL_ROLE_ARN
from sam_local_cloud.stepfunctions.definition_support import prepare_definition

pytestmark = pytest.mark.e2e

TEMPLATE = Path(__file__).resolve().parent / "distributed_map_fixture" / "template.yaml"
_names = itertools.count()


@pytest.fixture(scope="module")
def sfn() -> Iterator[Any]:
    with LocalCloud(LocalCloudConfig(template=TEMPLATE, account_concurrency=10)) as running:
        yield running.client("stepfunctions")


def create(sfn: Any, definition: dict[str, Any] | str) -> str:
    text = definition if isinstance(definition, str) else json.dumps(definition)
    arn: str = sfn.create_state_machine(
        name=f"support-{next(_names)}", definition=text, roleArn=LOCAL_ROLE_ARN
    )["stateMachineArn"]
    return arn


def run(sfn: Any, definition: dict[str, Any] | str, state_input: Any = None) -> dict[str, Any]:
    execution = sfn.start_execution(
        stateMachineArn=create(sfn, definition), input=json.dumps(state_input or {})
    )["executionArn"]
    wait_for_execution(sfn, execution, timeout=30, poll_seconds=0.1)
    described: dict[str, Any] = sfn.describe_execution(executionArn=execution)
    return described


def distributed(**fields: Any) -> dict[str, Any]:
    processor = {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": "Echo",
        "States": {"Echo": {"Type": "Pass", "End": True}},
    }
    processor["ProcessorConfig"].update(fields.pop("ProcessorConfig", {}))
    return {
        "StartAt": "Each",
        "States": {"Each": {"Type": "Map", "ItemProcessor": processor, "End": True, **fields}},
    }


ACCEPTED = {
    "express children": distributed(ProcessorConfig={"ExecutionType": "EXPRESS"}),
    "item batcher": distributed(ItemBatcher={"MaxItemsPerBatch": 10, "BatchInput": {"k.$": "$.k"}}),
    "jsonl reader": distributed(
        ItemReader={
            "Resource": "arn:aws:states:::s3:getObject",
            "ReaderConfig": {"InputType": "JSONL", "MaxItems": 10},
            "Parameters": {"Bucket": "b", "Key": "k.jsonl"},
        }
    ),
    "csv delimiter": distributed(
        ItemReader={
            "Resource": "arn:aws:states:::s3:getObject",
            "ReaderConfig": {"InputType": "CSV", "CSVHeaderLocation": "FIRST_ROW", "CSVDelimiter": "TAB"},
            "Parameters": {"Bucket": "b", "Key": "k.tsv"},
        }
    ),
    "listing with max items": distributed(
        ItemReader={
            "Resource": "arn:aws:states:::s3:listObjectsV2",
            "ReaderConfig": {"MaxItems": 5},
            "Parameters": {"Bucket": "b"},
        }
    ),
    "writer config": distributed(
        ResultWriter={
            "Resource": "arn:aws:states:::s3:putObject",
            "Parameters": {"Bucket": "b", "Prefix": "p"},
            "WriterConfig": {"Transformation": "COMPACT", "OutputType": "JSONL"},
        }
    ),
    "integer tolerated percentage": distributed(ToleratedFailurePercentage=5),
}


@pytest.mark.parametrize("definition", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_a_definition_aws_accepts_is_created_and_described_as_written(
    sfn: Any, definition: dict[str, Any]
) -> None:
    arn = create(sfn, definition)

    assert json.loads(sfn.describe_state_machine(stateMachineArn=arn)["definition"]) == definition


REFUSED = {
    "unknown input type": (
        distributed(
            ItemReader={
                "Resource": "arn:aws:states:::s3:getObject",
                "ReaderConfig": {"InputType": "XML"},
                "Parameters": {"Bucket": "b", "Key": "k"},
            }
        ),
        "at /States/Each/ItemReader/ReaderConfig/InputType",
    ),
    "unknown delimiter": (
        distributed(
            ItemReader={
                "Resource": "arn:aws:states:::s3:getObject",
                "ReaderConfig": {"InputType": "CSV", "CSVDelimiter": "COLON"},
                "Parameters": {"Bucket": "b", "Key": "k"},
            }
        ),
        "at /States/Each/ItemReader/ReaderConfig/CSVDelimiter",
    ),
    "batcher without a limit": (distributed(ItemBatcher={"BatchInput": {}}), "at /States/Each/ItemBatcher"),
    "batch over 256 KiB": (
        distributed(ItemBatcher={"MaxInputBytesPerBatch": 300_000}),
        "at /States/Each/ItemBatcher/MaxInputBytesPerBatch",
    ),
    "unknown transformation": (
        distributed(ResultWriter={"WriterConfig": {"Transformation": "SHRINK"}}),
        "at /States/Each/ResultWriter/WriterConfig/Transformation",
    ),
    "batcher on an inline map": (
        {
            "StartAt": "Each",
            "States": {
                "Each": {
                    "Type": "Map",
                    "ItemBatcher": {"MaxItemsPerBatch": 2},
                    "ItemProcessor": {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}},
                    "End": True,
                }
            },
        },
        "at /States/Each/ItemBatcher",
    ),
    "percentage over 100": (
        distributed(ToleratedFailurePercentage=101),
        "at /States/Each/ToleratedFailurePercentage",
    ),
}


@pytest.mark.parametrize(("definition", "where"), REFUSED.values(), ids=REFUSED.keys())
def test_what_aws_refuses_is_still_an_invalid_definition(
    sfn: Any, definition: dict[str, Any], where: str
) -> None:
    with pytest.raises(ClientError) as refused:
        create(sfn, definition)

    assert refused.value.response["Error"]["Code"] == "InvalidDefinition"
    assert where in refused.value.response["Error"]["Message"]


def test_strings_that_look_like_grammar_keywords_are_plain_text(sfn: Any) -> None:
    result = {"QueryLanguage": "JSONata", "ErrorPath": "CausePath", "modes": ["JSONPath", "JSONata"]}
    definition = {
        "QueryLanguage": "JSONPath",
        "StartAt": "JSONata",
        "States": {
            "JSONata": {"Type": "Pass", "Result": result, "Next": "Fail with paths"},
            "Fail with paths": {
                "Type": "Pass",
                "Parameters": {"lang": "JSONata", "copy.$": "$"},
                "End": True,
            },
        },
    }

    described = run(sfn, definition)

    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"]) == {"lang": "JSONata", "copy": result}
    history = sfn.get_execution_history(executionArn=described["executionArn"])["events"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if e["type"] == "PassStateEntered"]
    assert entered == ["JSONata", "Fail with paths"]


def test_json_escapes_are_decoded_in_values_and_state_names(sfn: Any) -> None:
    # Written as text so the escapes reach the service as a template's JSON would carry them.
    definition = (
        '{"StartAt":"Caf\\u00e9","States":{"Caf\\u00e9":{"Type":"Pass",'
        '"Result":{"name":"Mar\\u00eda","quote":"\\u0027x\\u0027"},"End":true}}}'
    )

    described = run(sfn, definition)

    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"]) == {"name": "María", "quote": "'x'"}
    history = sfn.get_execution_history(executionArn=described["executionArn"])["events"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if e["type"] == "PassStateEntered"]
    assert entered == ["Café"]


def test_a_parallel_branch_error_aws_documents_is_caught_by_its_name(sfn: Any) -> None:
    definition = {
        "StartAt": "Call out",
        "States": {
            "Call out": {
                "Type": "Parallel",
                "Branches": [
                    {
                        "StartAt": "Socket broke",
                        "States": {
                            "Socket broke": {"Type": "Fail", "Error": "States.Http.Socket", "Cause": "reset"}
                        },
                    }
                ],
                "Retry": [{"ErrorEquals": ["States.Http.Socket"], "MaxAttempts": 1, "IntervalSeconds": 1}],
                "Catch": [{"ErrorEquals": ["States.Http.Socket"], "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        },
    }

    described = run(sfn, definition)

    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"])["Error"] == "States.Http.Socket"


def test_each_map_keeps_what_was_taken_out_by_its_path() -> None:
    nested = distributed(ItemBatcher={"MaxItemsPerBatch": 3})
    nested["States"]["Each"]["ItemProcessor"]["States"] = {
        "Inner": {
            "Type": "Map",
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
                "StartAt": "Leaf",
                "States": {"Leaf": {"Type": "Pass", "End": True}},
            },
            "End": True,
        }
    }
    nested["States"]["Each"]["ItemProcessor"]["StartAt"] = "Inner"

    prepared = prepare_definition(json.dumps(nested))

    assert set(prepared.maps) == {"/States/Each", "/States/Each/ItemProcessor/States/Inner"}
    outer, inner = prepared.maps["/States/Each"], prepared.maps["/States/Each/ItemProcessor/States/Inner"]
    assert outer.item_batcher is not None
    assert outer.item_batcher.max_items_per_batch == 3
    assert not outer.express_children
    assert inner.express_children
    assert inner.item_batcher is None
    assert "ItemBatcher" not in prepared.text
    assert "EXPRESS" not in prepared.text
