"""GetExecutionHistory pages as AWS answers them: maxResults, nextToken, reverseOrder, execution data."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.stepfunctions.history_pages import HistoryPageError, history_page

TEMPLATE = Path(__file__).resolve().parent / "express_fixtures" / "template.yaml"
ARN = "arn:aws:states:us-east-1:123456789012:execution:m:e"


def numbered(count: int) -> list[dict[str, Any]]:
    return [
        {"id": n, "type": "PassStateExited", "stateExitedEventDetails": {"name": "P", "output": "{}"}}
        for n in range(1, count + 1)
    ]


def page(events: list[dict[str, Any]], **asked: Any) -> dict[str, Any]:
    asked = {
        "max_results": None,
        "next_token": None,
        "reverse_order": False,
        "include_execution_data": True,
    } | asked
    return history_page(ARN, events, **asked)


def test_a_page_holds_a_hundred_events_unless_told_otherwise_and_the_token_reads_on() -> None:
    events = numbered(250)
    first = page(events)
    second = page(events, next_token=first["nextToken"])
    third = page(events, next_token=second["nextToken"])

    assert [len(first["events"]), len(second["events"]), len(third["events"])] == [100, 100, 50]
    assert "nextToken" not in third
    assert [e["id"] for e in first["events"] + second["events"] + third["events"]] == list(range(1, 251))
    assert len(page(events, max_results=0)["events"]) == 100  # 0 means the default, as on AWS
    assert "nextToken" not in page(events, max_results=1000)


def test_reverse_order_answers_the_newest_first() -> None:
    newest = page(numbered(16), reverse_order=True, max_results=6)

    assert [e["id"] for e in newest["events"]] == [16, 15, 14, 13, 12, 11]
    rest = page(numbered(16), reverse_order=True, max_results=6, next_token=newest["nextToken"])
    assert [e["id"] for e in rest["events"]] == [10, 9, 8, 7, 6, 5]


def test_without_execution_data_events_keep_everything_but_input_and_output() -> None:
    trimmed = page(numbered(1), include_execution_data=False)["events"][0]

    assert trimmed == {"id": 1, "type": "PassStateExited", "stateExitedEventDetails": {"name": "P"}}


@pytest.mark.parametrize(
    ("asked", "code"),
    [
        ({"max_results": 1001}, "ValidationException"),
        ({"next_token": "not-a-token"}, "InvalidToken"),
        # A token of another execution, or of the other order, is refused.
        ({"next_token": page(numbered(200), reverse_order=True)["nextToken"]}, "InvalidToken"),
    ],
)
def test_a_bad_page_request_is_refused_with_aws_code(asked: dict[str, Any], code: str) -> None:
    with pytest.raises(HistoryPageError) as refused:
        page(numbered(200), **asked)
    assert refused.value.code == code


@pytest.fixture(scope="module")
def sfn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    config = LocalCloudConfig(template=TEMPLATE, state_dir=tmp_path_factory.mktemp("pages"))
    with LocalCloud(config) as running:
        yield running.client("stepfunctions")


@pytest.mark.e2e
def test_boto3_reads_the_newest_events_and_pages_through_the_rest(sfn: Any) -> None:
    passes = {f"P{n}": {"Type": "Pass", "Next": f"P{n + 1}"} for n in range(60)}
    passes["P60"] = {"Type": "Pass", "End": True}
    definition = {"StartAt": "P0", "States": passes}
    machine = sfn.create_state_machine(
        name="paged", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/x"
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]
    wait_for_execution(sfn, execution, timeout=20, poll_seconds=0.1)

    newest = sfn.get_execution_history(executionArn=execution, reverseOrder=True, maxResults=3)
    pages = list(sfn.get_paginator("get_execution_history").paginate(executionArn=execution))

    assert [e["type"] for e in newest["events"]] == [
        "ExecutionSucceeded",
        "PassStateExited",
        "PassStateEntered",
    ]
    assert [len(p["events"]) for p in pages] == [100, 24]  # 1 + 61 * 2 + 1 events
    assert [e["id"] for p in pages for e in p["events"]] == list(range(1, 125))
    with pytest.raises(ClientError) as refused:
        sfn.get_execution_history(executionArn=execution, nextToken=newest["nextToken"])
    assert refused.value.response["Error"]["Code"] == "InvalidToken"
