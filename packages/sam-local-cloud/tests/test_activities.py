"""Activities in the local cloud, as a worker polling GetActivityTask sees them.

A Task whose Resource is an activity ARN waits for a worker: GetActivityTask hands the worker the
task's token and input (a long poll; an empty token when nothing is scheduled), and SendTaskSuccess,
SendTaskFailure or SendTaskHeartbeat answer it. TimeoutSeconds ends the Task with States.Timeout.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.stepfunctions.activities import task_token_resource

pytestmark = pytest.mark.e2e

TEMPLATE = Path(__file__).resolve().parent / "express_fixtures" / "template.yaml"
ROLE = "arn:aws:iam::123456789012:role/activity-tests"


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    config = LocalCloudConfig(template=TEMPLATE, state_dir=tmp_path_factory.mktemp("activities"))
    with LocalCloud(config) as running:
        yield running


@pytest.fixture(scope="module")
def sfn(cloud: LocalCloud) -> Any:
    return cloud.client("stepfunctions", read_timeout=70)


def machine_with_activity(sfn: Any, name: str, task: dict[str, Any]) -> tuple[str, str]:
    activity = sfn.create_activity(name=f"{name}-activity")["activityArn"]
    definition = {
        "StartAt": "Work",
        "States": {"Work": {"Type": "Task", "Resource": activity, "End": True, **task}},
    }
    machine = sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=ROLE)
    return activity, machine["stateMachineArn"]


def history_types(sfn: Any, execution_arn: str) -> list[str]:
    return [event["type"] for event in sfn.get_execution_history(executionArn=execution_arn)["events"]]


def test_the_activity_apis_describe_list_and_delete(sfn: Any) -> None:
    arn = sfn.create_activity(name="described")["activityArn"]

    assert arn == "arn:aws:states:us-east-1:123456789012:activity:described"
    assert sfn.describe_activity(activityArn=arn)["name"] == "described"
    assert arn in [activity["activityArn"] for activity in sfn.list_activities()["activities"]]
    sfn.delete_activity(activityArn=arn)
    assert arn not in [activity["activityArn"] for activity in sfn.list_activities()["activities"]]


def test_a_worker_takes_the_task_and_answers_it(sfn: Any) -> None:
    activity, machine = machine_with_activity(sfn, "worked", {"HeartbeatSeconds": 10})
    answered: list[dict[str, Any]] = []

    def worker() -> None:
        task = sfn.get_activity_task(activityArn=activity, workerName="worker-1")
        sfn.send_task_heartbeat(taskToken=task["taskToken"])
        answered.append(json.loads(task["input"]))
        sfn.send_task_success(taskToken=task["taskToken"], output=json.dumps({"done": True}))

    polling = threading.Thread(target=worker, daemon=True)
    polling.start()
    execution = sfn.start_execution(stateMachineArn=machine, input='{"order": "o-1"}')["executionArn"]
    polling.join(timeout=20)
    wait_for_execution(sfn, execution, timeout=20, poll_seconds=0.1)

    described = sfn.describe_execution(executionArn=execution)
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"]) == {"done": True}
    assert answered == [{"order": "o-1"}]
    assert history_types(sfn, execution) == [
        "ExecutionStarted",
        "TaskStateEntered",
        "ActivityScheduled",
        "ActivityStarted",
        "ActivitySucceeded",
        "TaskStateExited",
        "ExecutionSucceeded",
    ]
    started = sfn.get_execution_history(executionArn=execution)["events"][3]
    assert started["activityStartedEventDetails"] == {"workerName": "worker-1"}


def test_a_heartbeat_before_the_timer_is_armed_or_without_one_is_taken_as_aws_takes_it(sfn: Any) -> None:
    # Given a worker that heartbeats as soon as it has the task. Without HeartbeatSeconds no timer is ever
    # armed; with it, the execution's thread arms it only after the worker took the task, and under load
    # a worker got there first: moto answered InvalidToken both times, AWS takes both.
    activity, machine = machine_with_activity(sfn, "heartbeat-unarmed", {})
    execution = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]
    task = sfn.get_activity_task(activityArn=activity, workerName="eager")

    sfn.send_task_heartbeat(taskToken=task["taskToken"])
    sfn.send_task_success(taskToken=task["taskToken"], output='{"ok": true}')
    wait_for_execution(sfn, execution, timeout=20, poll_seconds=0.1)

    described = sfn.describe_execution(executionArn=execution)
    assert (described["status"], json.loads(described["output"])) == ("SUCCEEDED", {"ok": True})
    # A token no running Task waits on is still refused, as AWS refuses it
    with pytest.raises(ClientError) as refused:
        sfn.send_task_heartbeat(taskToken=task["taskToken"])
    assert refused.value.response["Error"]["Code"] in ("InvalidToken", "TaskDoesNotExist", "TaskTimedOut")


def test_a_worker_that_fails_the_task_fails_the_execution_with_its_error(sfn: Any) -> None:
    activity, machine = machine_with_activity(sfn, "refused", {})
    execution = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]

    task = sfn.get_activity_task(activityArn=activity)
    sfn.send_task_failure(taskToken=task["taskToken"], error="OutOfStock", cause="no items left")
    wait_for_execution(sfn, execution, timeout=20, poll_seconds=0.1)

    described = sfn.describe_execution(executionArn=execution)
    assert (described["status"], described["error"], described["cause"]) == (
        "FAILED",
        "OutOfStock",
        "no items left",
    )
    assert history_types(sfn, execution)[-2:] == ["ActivityFailed", "ExecutionFailed"]


def test_an_activity_task_no_worker_takes_times_out(sfn: Any) -> None:
    _, machine = machine_with_activity(sfn, "unattended", {"TimeoutSeconds": 1})
    execution = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]
    wait_for_execution(sfn, execution, timeout=20, poll_seconds=0.1)

    described = sfn.describe_execution(executionArn=execution)
    assert (described["status"], described["error"]) == ("FAILED", "States.Timeout"), (
        described.get("cause"),
        history_types(sfn, execution),
    )
    assert history_types(sfn, execution)[-2:] == ["ActivityTimedOut", "ExecutionFailed"]


ACTIVITY_TEMPLATE = """
AWSTemplateFormatVersion: '2010-09-09'
Transform: AWS::Serverless-2016-10-31
Resources:
  ApprovalActivity:
    Type: AWS::StepFunctions::Activity
    Properties:
      Name: approval
  ApprovalMachine:
    Type: AWS::Serverless::StateMachine
    Properties:
      Name: approval-flow
      Definition:
        StartAt: Approve
        States:
          Approve:
            Type: Task
            Resource: ${ActivityArn}
            End: true
      DefinitionSubstitutions:
        ActivityArn: !Ref ApprovalActivity
Outputs:
  ActivityName:
    Value: !GetAtt ApprovalActivity.Name
  ActivityArn:
    Value: !GetAtt ApprovalActivity.Arn
"""


def test_a_templates_activity_is_created_and_its_ref_is_the_activity_arn(tmp_path: Path) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(ACTIVITY_TEMPLATE)
    with LocalCloud(LocalCloudConfig(template=template, state_dir=tmp_path / "state")) as deployed:
        sfn = deployed.client("stepfunctions", read_timeout=70)
        # The module's cloud is still up: this one has the next account.
        account = deployed.account_id
        activity = f"arn:aws:states:us-east-1:{account}:activity:approval"
        assert sfn.describe_activity(activityArn=activity)["name"] == "approval"
        machine = sfn.list_state_machines()["stateMachines"][0]["stateMachineArn"]
        execution = sfn.start_execution(stateMachineArn=machine, input='{"ok": 1}')["executionArn"]

        task = sfn.get_activity_task(activityArn=activity, workerName="approver")
        assert json.loads(task["input"]) == {"ok": 1}
        # What IAM authorises the worker's answer on: the activity the task came from.
        assert task_token_resource(account, "us-east-1", task["taskToken"]) == activity
        assert task_token_resource(account, "us-east-1", "no-such-token") is None
        sfn.send_task_success(taskToken=task["taskToken"], output='{"approved": true}')
        wait_for_execution(sfn, execution, timeout=20, poll_seconds=0.1)

        assert json.loads(sfn.describe_execution(executionArn=execution)["output"]) == {"approved": True}
