"""RedriveExecution in the local cloud, as boto3 sees it, on small state machines without Lambda.

Items marked to go wrong do so only on the first attempt ($$.Execution.RedriveCount 0), and every item's
output records the attempt it ran in, so a redrive shows which iterations ran again and which kept their
first output.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution

pytestmark = pytest.mark.e2e

TEMPLATE = Path(__file__).resolve().parent / "redrive_fixtures" / "template.yaml"


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    config = LocalCloudConfig(template=TEMPLATE, state_dir=tmp_path_factory.mktemp("redrive"))
    with LocalCloud(config) as running:
        yield running


@pytest.fixture(scope="module")
def sfn(cloud: LocalCloud) -> Any:
    return cloud.client("stepfunctions")


def machine_arn(cloud: LocalCloud, name: str) -> str:
    return f"arn:aws:states:{cloud.stack.region}:{cloud.stack.account_id}:stateMachine:{name}"


def start(sfn: Any, cloud: LocalCloud, machine: str, name: str, document: Any) -> str:
    arn: str = sfn.start_execution(
        stateMachineArn=machine_arn(cloud, machine), name=name, input=json.dumps(document)
    )["executionArn"]
    return arn


def history(sfn: Any, arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    return events


def first_attempt(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Up to the attempt's end (moto goes on logging iterations a failed Map cut short, after it)."""
    ended = next(
        i for i, event in enumerate(events) if event["type"] in ("ExecutionFailed", "ExecutionAborted")
    )
    return events[: ended + 1]


def after_redrive(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    redriven = next(i for i, event in enumerate(events) if event["type"] == "ExecutionRedriven")
    return events[redriven + 1 :]


def iterations(events: list[dict[str, Any]], kind: str) -> list[int]:
    key = kind[0].lower() + kind[1:] + "EventDetails"
    return sorted(event[key]["index"] for event in events if event["type"] == kind)


def test_an_inline_map_reruns_only_the_iterations_that_failed(cloud: LocalCloud, sfn: Any) -> None:
    items = [{"fail": index % 2 == 1} for index in range(8)]
    arn = start(sfn, cloud, "inline-map", "inline-1", {"items": items})
    assert wait_for_execution(sfn, arn, timeout=60, poll_seconds=0.2) == "FAILED"
    failed = sfn.describe_execution(executionArn=arn)
    before = first_attempt(history(sfn, arn))
    succeeded_first = iterations(before, "MapIterationSucceeded")

    redriven = sfn.redrive_execution(executionArn=arn)
    assert wait_for_execution(sfn, arn, timeout=60, poll_seconds=0.2) == "SUCCEEDED"

    assert (failed["error"], failed["redriveCount"], failed["redriveStatus"]) == (
        "Item.Failed",
        0,
        "REDRIVABLE",
    )
    assert "redriveStatusReason" not in failed
    assert succeeded_first == [0, 2, 4, 6]
    events = history(sfn, arn)
    assert first_attempt(events) == before
    rerun = after_redrive(events)
    assert iterations(rerun, "MapIterationStarted") == [1, 3, 5, 7]
    assert iterations(rerun, "MapIterationSucceeded") == [1, 3, 5, 7]
    assert rerun[0]["type"] == "MapStateEntered"
    redriven_event = next(event for event in events if event["type"] == "ExecutionRedriven")
    assert redriven_event["executionRedrivenEventDetails"] == {"redriveCount": 1}
    assert redriven_event["previousEventId"] == before[-1]["id"]
    output = json.loads(sfn.describe_execution(executionArn=arn)["output"])
    assert output == [{"index": index, "attempt": index % 2} for index in range(8)]
    described = sfn.describe_execution(executionArn=arn)
    assert described["redriveCount"] == 1
    assert described["redriveDate"] == redriven["redriveDate"]
    assert (described["redriveStatus"], described["redriveStatusReason"]) == (
        "NOT_REDRIVABLE",
        "Execution is SUCCEEDED and cannot be redriven",
    )


def moto_execution(cloud: LocalCloud, arn: str) -> Any:
    from sam_local_cloud.moto_seam.stepfunctions import stepfunctions_parser_backends

    backend = stepfunctions_parser_backends[cloud.stack.account_id][cloud.stack.region]
    return backend.describe_execution(arn)


def engine_attributes(moto_object: Any) -> list[str]:
    return [name for name in vars(moto_object) if name.startswith("orderbatch")]


def test_redrive_keeps_its_records_beside_moto_objects_not_on_them(cloud: LocalCloud, sfn: Any) -> None:
    from sam_local_cloud.stepfunctions import redrive

    arn = start(sfn, cloud, "inline-map", "records-1", {"items": [{"fail": False}, {"fail": True}]})
    assert wait_for_execution(sfn, arn, timeout=60, poll_seconds=0.2) == "FAILED"
    sfn.redrive_execution(executionArn=arn)
    assert wait_for_execution(sfn, arn, timeout=60, poll_seconds=0.2) == "SUCCEEDED"

    execution = moto_execution(cloud, arn)
    environment = execution.exec_worker.env
    assert engine_attributes(execution) == []
    assert engine_attributes(environment) == []
    assert redrive.redrive_record(execution).count == 1
    assert sfn.describe_execution(executionArn=arn)["redriveCount"] == 1
    output = json.loads(sfn.describe_execution(executionArn=arn)["output"])
    assert output == [{"index": 0, "attempt": 0}, {"index": 1, "attempt": 1}]


def test_a_failed_state_after_the_map_reruns_alone(cloud: LocalCloud, sfn: Any) -> None:
    arn = start(sfn, cloud, "fails-after-map", "after-map-1", {"items": [1, 2, 3]})
    assert wait_for_execution(sfn, arn, timeout=60, poll_seconds=0.2) == "FAILED"
    # No rule matches the first time (AWS names it States.NoChoiceMatched; moto, States.Runtime).
    assert [event["type"] for event in history(sfn, arn)][-2:] == ["ChoiceStateEntered", "ExecutionFailed"]

    sfn.redrive_execution(executionArn=arn)
    assert wait_for_execution(sfn, arn, timeout=60, poll_seconds=0.2) == "SUCCEEDED"

    rerun = after_redrive(history(sfn, arn))
    assert [event["type"] for event in rerun][:2] == ["ChoiceStateEntered", "ChoiceStateExited"]
    assert not [event for event in rerun if event["type"].startswith("Map")]
    assert json.loads(sfn.describe_execution(executionArn=arn)["output"]) == [1, 2, 3]


def test_a_stopped_distributed_map_redrives_its_map_run_for_the_unfinished_children(
    cloud: LocalCloud, sfn: Any
) -> None:
    items = [{"slow": index % 3 == 0} for index in range(9)]
    arn = start(sfn, cloud, "distributed-map", "distributed-1", {"items": items})
    time.sleep(2.0)
    sfn.stop_execution(executionArn=arn)
    assert wait_for_execution(sfn, arn, timeout=30, poll_seconds=0.2) == "ABORTED"
    map_run_arn = sfn.list_map_runs(executionArn=arn)["mapRuns"][0]["mapRunArn"]

    sfn.redrive_execution(executionArn=arn)
    assert wait_for_execution(sfn, arn, timeout=60, poll_seconds=0.2) == "SUCCEEDED"

    output = json.loads(sfn.describe_execution(executionArn=arn)["output"])
    assert output == [{"index": index, "attempt": 1 if index % 3 == 0 else 0} for index in range(9)]
    assert [run["mapRunArn"] for run in sfn.list_map_runs(executionArn=arn)["mapRuns"]] == [map_run_arn]
    map_run = sfn.describe_map_run(mapRunArn=map_run_arn)
    assert (map_run["status"], map_run["redriveCount"]) == ("SUCCEEDED", 1)
    assert map_run["itemCounts"]["succeeded"] == 9
    assert map_run["itemCounts"]["total"] == 9
    redriven = [event for event in history(sfn, arn) if event["type"] == "MapRunRedriven"]
    assert [event["mapRunRedrivenEventDetails"] for event in redriven] == [
        {"mapRunArn": map_run_arn, "redriveCount": 1}
    ]
    map_runs = moto_execution(cloud, arn).exec_worker.env.map_run_record_pool_manager.get_all()
    assert [engine_attributes(record) for record in map_runs] == [[]]


def test_redrive_refuses_what_aws_refuses_with_its_reasons(cloud: LocalCloud, sfn: Any) -> None:
    running = start(sfn, cloud, "distributed-map", "refused-running", {"items": [{"slow": True}]})
    time.sleep(0.5)
    with pytest.raises(ClientError) as refused_running:
        sfn.redrive_execution(executionArn=running)
    sfn.stop_execution(executionArn=running)
    done = start(sfn, cloud, "fails-after-map", "refused-succeeded", {"items": []})
    wait_for_execution(sfn, done, timeout=30, poll_seconds=0.2)
    sfn.redrive_execution(executionArn=done)  # it failed at the Choice: the redrive lets it succeed
    wait_for_execution(sfn, done, timeout=30, poll_seconds=0.2)
    with pytest.raises(ClientError) as refused_succeeded:
        sfn.redrive_execution(executionArn=done)
    with pytest.raises(ClientError) as missing:
        sfn.redrive_execution(executionArn=done.replace("refused-succeeded", "never-started"))

    def error(raised: Any) -> tuple[str, str]:
        return raised.value.response["Error"]["Code"], raised.value.response["Error"]["Message"]

    assert error(refused_running) == ("ExecutionNotRedrivable", "Execution is RUNNING and cannot be redriven")
    assert error(refused_succeeded) == (
        "ExecutionNotRedrivable",
        "Execution is SUCCEEDED and cannot be redriven",
    )
    assert error(missing)[0] == "ExecutionDoesNotExist"


def test_the_same_client_token_redrives_once(cloud: LocalCloud, sfn: Any) -> None:
    arn = start(sfn, cloud, "fails-after-map", "token-1", {"items": [1]})
    wait_for_execution(sfn, arn, timeout=30, poll_seconds=0.2)

    first = sfn.redrive_execution(executionArn=arn, clientToken="operator-retry-1")
    again = sfn.redrive_execution(executionArn=arn, clientToken="operator-retry-1")
    wait_for_execution(sfn, arn, timeout=30, poll_seconds=0.2)

    assert again["redriveDate"] == first["redriveDate"]
    assert sfn.describe_execution(executionArn=arn)["redriveCount"] == 1
    redriven_events = [event for event in history(sfn, arn) if event["type"] == "ExecutionRedriven"]
    assert len(redriven_events) == 1


def test_list_executions_reports_and_filters_redrives(cloud: LocalCloud, sfn: Any) -> None:
    machine = machine_arn(cloud, "fails-after-map")
    redriven = start(sfn, cloud, "fails-after-map", "listed-redriven", {"items": []})
    left = start(sfn, cloud, "fails-after-map", "listed-left", {"items": []})
    for arn in (redriven, left):
        wait_for_execution(sfn, arn, timeout=30, poll_seconds=0.2)
    sfn.redrive_execution(executionArn=redriven)
    wait_for_execution(sfn, redriven, timeout=30, poll_seconds=0.2)

    only_redriven = sfn.list_executions(stateMachineArn=machine, redriveFilter="REDRIVEN")["executions"]
    not_redriven = sfn.list_executions(stateMachineArn=machine, redriveFilter="NOT_REDRIVEN")["executions"]

    assert redriven in [item["executionArn"] for item in only_redriven]
    assert left not in [item["executionArn"] for item in only_redriven]
    assert left in [item["executionArn"] for item in not_redriven]
    listed = next(item for item in only_redriven if item["executionArn"] == redriven)
    assert listed["redriveCount"] == 1
    assert "redriveDate" in listed
    assert next(item for item in not_redriven if item["executionArn"] == left)["redriveCount"] == 0
