"""CreateStateMachine and UpdateStateMachine on the local cloud refuse what AWS refuses, and no more.

AWS's answer for a repeated name: InvalidDefinition, "Invalid State Machine Definition:
'DUPLICATE_STATE_NAME: Duplicate State name: <name> at <path>'". The path it prints for a state inside a
Map processor is not confirmed (docs/fidelity.md).

What AWS accepts is created and runs as AWS runs it: error names are strings (a service's dotted name, a
``States.`` name the language does not define, a Fail state's ``States.Runtime``), and a definition is read
as decoded JSON, its ``\\u`` escapes included (docs/fidelity.md, "Definition validation: where the local
cloud differs from AWS").
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from orderbatch.cli import main
from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.deployment import LOCAL_ROLE_ARN
from sam_local_cloud.stack import TemplateError

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
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    template = template_with(tmp_path_factory.mktemp("unique"), UNIQUE)
    with LocalCloud(LocalCloudConfig(template=template, account_concurrency=10)) as running:
        yield running


@pytest.fixture(scope="module")
def sfn(cloud: LocalCloud) -> Any:
    # TestState's endpoint has the host prefix "sync-", which no loopback name resolves.
    return cloud.client("stepfunctions", inject_host_prefix=False)


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


def test_a_states_entry_that_is_not_a_state_is_refused_naming_it(sfn: Any) -> None:
    # QueryLanguage belongs beside States, not in it (a public sample has it there).
    definition = {
        "StartAt": "Go",
        "States": {"QueryLanguage": "JSONata", "Go": {"Type": "Pass", "End": True}},
    }
    with pytest.raises(ClientError) as refused:
        sfn.create_state_machine(name="misplaced", definition=json.dumps(definition), roleArn=LOCAL_ROLE_ARN)

    assert refused.value.response["Error"] == {
        "Code": "InvalidDefinition",
        "Message": "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: The value for the field "
        "'QueryLanguage' must be an OBJECT at /States'",
    }


_names = itertools.count()


def run(sfn: Any, definition: dict[str, Any] | str, state_input: Any = None) -> dict[str, Any]:
    text = definition if isinstance(definition, str) else json.dumps(definition)
    arn = sfn.create_state_machine(name=f"valid-{next(_names)}", definition=text, roleArn=LOCAL_ROLE_ARN)[
        "stateMachineArn"
    ]
    execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps(state_input or {}))["executionArn"]
    wait_for_execution(sfn, execution, timeout=30, poll_seconds=0.1)
    described: dict[str, Any] = sfn.describe_execution(executionArn=execution)
    return described


def history_types(sfn: Any, described: dict[str, Any]) -> list[str]:
    events = sfn.get_execution_history(executionArn=described["executionArn"], maxResults=1000)["events"]
    return [event["type"] for event in events]


def around_a_parallel(branch_state: dict[str, Any], **handling: Any) -> dict[str, Any]:
    return {
        "StartAt": "Both",
        "States": {
            "Both": {
                "Type": "Parallel",
                "Branches": [{"StartAt": "Inner", "States": {"Inner": branch_state}}],
                "End": True,
                **handling,
            }
        },
    }


def caught_by(error_name: str) -> dict[str, Any]:
    return {"Catch": [{"ErrorEquals": [error_name], "Next": "Caught"}]}


def with_caught_state(definition: dict[str, Any]) -> dict[str, Any]:
    definition["States"]["Caught"] = {"Type": "Pass", "End": True}
    return definition


def test_a_service_error_name_retries_and_catches_a_dynamodb_task_failure(
    cloud: LocalCloud, sfn: Any
) -> None:
    dynamodb = cloud.client("dynamodb")
    dynamodb.create_table(
        TableName="Claims",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.put_item(TableName="Claims", Item={"pk": {"S": "taken"}})
    conflict = "DynamoDB.ConditionalCheckFailedException"
    definition = {
        "StartAt": "Claim",
        "States": {
            "Claim": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:putItem",
                "Parameters": {
                    "TableName": "Claims",
                    "Item": {"pk": {"S": "taken"}},
                    "ConditionExpression": "attribute_not_exists(pk)",
                },
                "Retry": [{"ErrorEquals": [conflict], "MaxAttempts": 1, "IntervalSeconds": 1}],
                "Catch": [{"ErrorEquals": [conflict], "Next": "Already claimed"}],
                "End": True,
            },
            "Already claimed": {"Type": "Pass", "End": True},
        },
    }

    described = run(sfn, definition)

    assert described["status"] == "SUCCEEDED", (described.get("error"), described.get("cause"))
    assert json.loads(described["output"])["Error"] == conflict
    assert history_types(sfn, described).count("TaskFailed") == 2  # the first attempt and its one retry


def test_a_states_name_the_language_does_not_define_is_an_error_name_like_any_other(sfn: Any) -> None:
    definition = with_caught_state(
        around_a_parallel(
            {"Type": "Fail", "Error": "States.MyThing", "Cause": "mine"},
            Retry=[{"ErrorEquals": ["States.MyThing"], "MaxAttempts": 1, "IntervalSeconds": 1}],
            **caught_by("States.MyThing"),
        )
    )

    described = run(sfn, definition)

    assert described["status"] == "SUCCEEDED", (described.get("error"), described.get("cause"))
    assert json.loads(described["output"]) == {"Error": "States.MyThing", "Cause": "mine"}
    assert history_types(sfn, described).count("ParallelStateStarted") == 2  # retried once


def test_a_fail_state_with_states_runtime_fails_the_execution_with_its_own_cause(sfn: Any) -> None:
    definition = {
        "StartAt": "Give up",
        "States": {"Give up": {"Type": "Fail", "Error": "States.Runtime", "Cause": "gave up on purpose"}},
    }

    described = run(sfn, definition)

    assert described["status"] == "FAILED", described
    assert (described["error"], described["cause"]) == ("States.Runtime", "gave up on purpose")
    assert history_types(sfn, described)[-1] == "ExecutionFailed"


@pytest.mark.parametrize("catcher", ["States.Runtime", "States.ALL"])
def test_a_catch_around_a_parallel_catches_a_fail_state_with_states_runtime(sfn: Any, catcher: str) -> None:
    definition = with_caught_state(
        around_a_parallel(
            {"Type": "Fail", "Error": "States.Runtime", "Cause": "gave up"}, **caught_by(catcher)
        )
    )

    described = run(sfn, definition)

    assert described["status"] == "SUCCEEDED", (described.get("error"), described.get("cause"))
    assert json.loads(described["output"]) == {"Error": "States.Runtime", "Cause": "gave up"}


# Written as text so the escapes reach the service as a hand-written or generated definition carries them.
ESCAPED_JSONATA = (
    '{"QueryLanguage": "\\u004aSONata", "StartAt": "Add \\u0031", "States": {"Add \\u0031": '
    '{"Type": "Pass", "Output": "{% $states.input.n + 1 %}", "End": true}}}'
)


def test_a_query_language_written_with_an_escape_runs_as_jsonata(sfn: Any) -> None:
    described = run(sfn, ESCAPED_JSONATA, {"n": 2})

    assert described["status"] == "SUCCEEDED", (described.get("error"), described.get("cause"))
    assert json.loads(described["output"]) == 3
    arn = described["stateMachineArn"]
    assert sfn.describe_state_machine(stateMachineArn=arn)["definition"] == ESCAPED_JSONATA


def test_test_state_reads_escapes_as_aws_does(sfn: Any) -> None:
    program = sfn.test_state(
        definition=ESCAPED_JSONATA, stateName="Add 1", roleArn=LOCAL_ROLE_ARN, input=json.dumps({"n": 2})
    )
    state = json.loads(ESCAPED_JSONATA)["States"]["Add 1"] | {"QueryLanguage": "JSONata"}
    single = sfn.test_state(
        definition=json.dumps(state, ensure_ascii=True).replace("JSONata", "\\u004aSONata"),
        roleArn=LOCAL_ROLE_ARN,
        input=json.dumps({"n": 4}),
    )

    assert (program["status"], json.loads(program["output"])) == ("SUCCEEDED", 3)
    assert (single["status"], json.loads(single["output"])) == ("SUCCEEDED", 5)


# --- Definitions moto's grammar let through, refused in AWS's words (definition_checks) ------------------


def refusal(sfn: Any, definition: dict[str, Any] | str) -> dict[str, str]:
    """The error CreateStateMachine answers for this definition; no state machine is left behind."""
    text = definition if isinstance(definition, str) else json.dumps(definition)
    name = f"refused-{next(_names)}"
    with pytest.raises(ClientError) as refused:
        sfn.create_state_machine(name=name, definition=text, roleArn=LOCAL_ROLE_ARN)
    assert name not in [machine["name"] for machine in sfn.list_state_machines()["stateMachines"]]
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    return {key: str(value) for key, value in refused.value.response["Error"].items()}


def invalid(*problems: str) -> dict[str, str]:
    return {
        "Code": "InvalidDefinition",
        "Message": f"Invalid State Machine Definition: '{', '.join(problems)}'",
    }


def test_an_unknown_state_type_is_refused_at_its_type_field(sfn: Any) -> None:
    definition = {"StartAt": "Go", "States": {"Go": {"Type": "Parallell", "End": True}}}

    assert refusal(sfn, definition) == invalid(
        "SCHEMA_VALIDATION_FAILED: Value should be one of the following: "
        "[Task, Pass, Choice, Wait, Succeed, Fail, Parallel, Map] at /States/Go/Type"
    )


def test_a_state_with_neither_next_nor_end_is_refused(sfn: Any) -> None:
    definition = {
        "StartAt": "Go",
        "States": {"Go": {"Type": "Pass"}, "Done": {"Type": "Succeed"}},
    }

    assert refusal(sfn, definition) == invalid(
        "SCHEMA_VALIDATION_FAILED: This object should have only one of the following fields: [Next, End] "
        "at /States/Go"
    )


def test_a_next_naming_no_state_is_a_missing_transition_target_wherever_it_is(sfn: Any) -> None:
    definition = {
        "StartAt": "Work",
        "States": {
            "Work": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "f"},
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Recover"}],
                "Next": "Decide",
            },
            "Decide": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.ok", "BooleanEquals": True, "Next": "Finish"}],
                "Default": "Done",
            },
            "Done": {"Type": "Succeed"},
        },
    }

    assert refusal(sfn, definition) == invalid(
        "MISSING_TRANSITION_TARGET: Missing 'Next' target: Recover at /States/Work/Catch[0]/Next",
        "MISSING_TRANSITION_TARGET: Missing 'Next' target: Finish at /States/Decide/Choices[0]/Next",
    )


def test_a_loop_through_a_choice_is_accepted_and_runs_to_its_end(sfn: Any) -> None:
    definition = {
        "StartAt": "Enough?",
        "States": {
            "Enough?": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.count", "NumericGreaterThanEquals": 3, "Next": "Done"}],
                "Default": "Count",
            },
            "Count": {
                "Type": "Pass",
                "Parameters": {"count.$": "States.MathAdd($.count, 1)"},
                "Next": "Enough?",
            },
            "Done": {"Type": "Succeed"},
        },
    }

    described = run(sfn, definition, {"count": 0})

    assert described["status"] == "SUCCEEDED", (described.get("error"), described.get("cause"))
    assert json.loads(described["output"]) == {"count": 3}
    assert history_types(sfn, described).count("ChoiceStateEntered") == 4


def test_a_loop_with_no_way_out_has_no_terminal_state(sfn: Any) -> None:
    definition = {
        "StartAt": "Ping",
        "States": {"Ping": {"Type": "Pass", "Next": "Pong"}, "Pong": {"Type": "Pass", "Next": "Ping"}},
    }

    assert refusal(sfn, definition) == invalid("MISSING_END_STATE: Workflow has no terminal state at null")


def test_a_state_nothing_leads_to_is_not_reachable(sfn: Any) -> None:
    definition = {
        "StartAt": "Ping",
        "States": {
            "Ping": {"Type": "Pass", "Next": "Pong"},
            "Pong": {"Type": "Pass", "Next": "Ping"},
            "Way out": {"Type": "Succeed"},
        },
    }

    assert refusal(sfn, definition) == invalid(
        'MISSING_TRANSITION_TARGET: State "Way out" is not reachable. at /States/Way out'
    )


@pytest.mark.parametrize("field_name", ["InputPath", "OutputPath", "ResultPath", "ItemsPath"])
def test_a_path_field_that_is_no_jsonpath_is_refused_at_the_field(sfn: Any, field_name: str) -> None:
    state = {
        "Type": "Map",
        "ItemProcessor": {"StartAt": "Item", "States": {"Item": {"Type": "Pass", "End": True}}},
        "End": True,
        field_name: "$.items[",
    }

    assert refusal(sfn, {"StartAt": "Each", "States": {"Each": state}}) == invalid(
        f"SCHEMA_VALIDATION_FAILED: Value must be a valid JSONPath. at /States/Each/{field_name}"
    )


def test_a_parameter_ending_in_dollar_must_be_a_path_or_an_intrinsic_function(sfn: Any) -> None:
    parameters = {
        "execution.$": "$$.Execution.Id",
        "greeting.$": "States.Format('hi {}', $.name)",
        "nested": {"name.$": "name"},
    }
    definition = {
        "StartAt": "Shape",
        "States": {"Shape": {"Type": "Pass", "Parameters": parameters, "End": True}},
    }

    assert refusal(sfn, definition) == invalid(
        "SCHEMA_VALIDATION_FAILED: The value for the field 'name.$' must be a valid JSONPath "
        "at /States/Shape/Parameters/nested"
    )


def test_a_jsonata_expression_that_does_not_parse_is_refused_with_the_parser_message(sfn: Any) -> None:
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Add",
        "States": {"Add": {"Type": "Pass", "Output": {"sum": "{% $states.input.n + %}"}, "End": True}},
    }

    assert refusal(sfn, definition) == invalid(
        "INVALID_JSONATA_EXPRESSION: Unexpected end of expression at /States/Add/Output/sum"
    )


def test_an_update_is_refused_as_a_create_is_and_keeps_the_definition(sfn: Any) -> None:
    arn = sfn.create_state_machine(name="kept", definition=json.dumps(UNIQUE), roleArn=LOCAL_ROLE_ARN)[
        "stateMachineArn"
    ]
    unreachable = {
        "StartAt": "Go",
        "States": {"Go": {"Type": "Pass", "End": True}, "Orphan": {"Type": "Pass", "End": True}},
    }

    with pytest.raises(ClientError) as refused:
        sfn.update_state_machine(stateMachineArn=arn, definition=json.dumps(unreachable))

    assert refused.value.response["Error"] == invalid(
        'MISSING_TRANSITION_TARGET: State "Orphan" is not reachable. at /States/Orphan'
    )
    assert json.loads(sfn.describe_state_machine(stateMachineArn=arn)["definition"]) == UNIQUE


def test_a_definition_over_the_apis_length_limit_is_a_validation_exception(sfn: Any) -> None:
    # Valid in every other way: a Pass state whose Result carries the bulk.
    padding = "x" * 1_048_576
    definition = json.dumps(
        {"StartAt": "Big", "States": {"Big": {"Type": "Pass", "Result": padding, "End": True}}}
    )

    assert refusal(sfn, definition) == {
        "Code": "ValidationException",
        "Message": "1 validation error detected: Value at 'definition' failed to satisfy constraint: "
        "Member must have length less than or equal to 1048576",
    }
