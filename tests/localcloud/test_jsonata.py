"""JSONata states on the local cloud: real executions, read back as boto3 sees them.

Where AWS's answer was recorded, the expected values are AWS's: LocalStack's snapshot tests record real
AWS executions (github.com/localstack/localstack at commit 8b9a79f05846835cf4dff63ab7eefdde9df83783,
``tests/aws/services/stepfunctions/v2/<path>.snapshot.json``; each test names its file), and the AWS Step
Functions developer guide's "Transforming data with JSONata" page gives worked examples. The state
machines that call Lambda are in ``jsonata_fixtures/template.yaml``; the others are created here.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.deployment import LOCAL_ROLE_ARN

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).resolve().parent / "jsonata_fixtures"
UUID_V4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_names = itertools.count()


@dataclass
class Execution:
    status: str
    output: Any
    error: str | None
    cause: str | None
    events: list[dict[str, Any]]

    def details(self, event_type: str) -> list[dict[str, Any]]:
        """The details of every event of one type, in order (``EvaluationFailed`` -> its details)."""
        kind = next((k for k in ("StateEntered", "StateExited") if event_type.endswith(k)), event_type)
        key = kind[0].lower() + kind[1:] + "EventDetails"
        return [event.get(key, {}) for event in self.events if event["type"] == event_type]


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(LocalCloudConfig(template=FIXTURES / "template.yaml", account_concurrency=10)) as running:
        yield running


@pytest.fixture(scope="module")
def sfn(cloud: LocalCloud) -> Any:
    return cloud.client("stepfunctions")


def run(sfn: Any, machine: str | dict[str, Any], execution_input: Any = None, **start: Any) -> Execution:
    """Start one execution (of a deployed machine's ARN, or of a definition created here) and read it back.

    The output is the one the history's ExecutionSucceeded event records (the test at the end checks that
    DescribeExecution gives the same text).
    """
    if isinstance(machine, dict):
        machine = sfn.create_state_machine(
            name=f"jsonata-{next(_names)}", definition=json.dumps(machine), roleArn=LOCAL_ROLE_ARN
        )["stateMachineArn"]
    arn = sfn.start_execution(
        stateMachineArn=machine, input=json.dumps({} if execution_input is None else execution_input), **start
    )["executionArn"]
    wait_for_execution(sfn, arn, timeout=60, poll_seconds=0.1)
    described = sfn.describe_execution(executionArn=arn)
    events = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    succeeded = [e["executionSucceededEventDetails"] for e in events if e["type"] == "ExecutionSucceeded"]
    return Execution(
        status=described["status"],
        output=json.loads(succeeded[0]["output"]) if succeeded else None,
        error=described.get("error"),
        cause=described.get("cause"),
        events=events,
    )


def pass_state(output: Any) -> dict[str, Any]:
    """A JSONata state machine of one Pass state with this Output."""
    return {
        "QueryLanguage": "JSONata",
        "StartAt": "State_0",
        "States": {"State_0": {"Type": "Pass", "Output": output, "End": True}},
    }


def machine_arn(cloud: LocalCloud, logical_id: str) -> str:
    return cloud.stack.state_machine(logical_id).arn


def function_named(cloud: LocalCloud, handler: str) -> str:
    return next(function.name for function in cloud.stack.functions if function.handler == handler)


def function_arn(cloud: LocalCloud, name: str) -> str:
    return f"arn:aws:lambda:{cloud.stack.region}:{cloud.stack.account_id}:function:{name}"


# -- Output, $states, query languages -----------------------------------------------------------------


def test_the_developer_guide_input_and_output_example(sfn: Any) -> None:
    # Developer guide, "Transforming data with JSONata", Example: Input and Output (a Succeed state).
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Basic Input and Output",
        "States": {
            "Basic Input and Output": {
                "Type": "Succeed",
                "Output": {
                    "lastName": "{% 'Last=>' & $states.input.customer.lastName %}",
                    "orderValue": "{% $states.input.order.total %}",
                },
            }
        },
    }
    execution = run(
        sfn,
        definition,
        {"customer": {"firstName": "Martha", "lastName": "Rivera"}, "order": {"items": 7, "total": 27.91}},
    )

    assert execution.status == "SUCCEEDED"
    assert execution.output == {"lastName": "Last=>Rivera", "orderValue": 27.91}


def test_the_developer_guide_filtering_example(sfn: Any) -> None:
    # Developer guide, "Transforming data with JSONata", Example: Filtering with JSONata.
    products = [
        {"calories": 140, "flavour": "Cola", "name": "Product-1"},
        {"calories": 0, "flavour": "Cola", "name": "Product-2"},
        {"calories": 160, "flavour": "Orange", "name": "Product-3"},
        {"calories": 100, "flavour": "Orange", "name": "Product-4"},
        {"calories": 0, "flavour": "Lime", "name": "Product-5"},
    ]
    execution = run(
        sfn, pass_state({"dietProducts": "{% $states.input.products[calories=0] %}"}), {"products": products}
    )

    assert execution.output == {"dietProducts": [products[1], products[4]]}


def test_states_context_names_the_execution_and_the_state(sfn: Any) -> None:
    execution = run(
        sfn,
        pass_state(
            {
                "execution": "{% $states.context.Execution.Name %}",
                "state": "{% $states.context.State.Name %}",
                "input": "{% $states.context.Execution.Input.order %}",
            }
        ),
        {"order": "o-1"},
        name="context-example",
    )

    assert execution.output == {"execution": "context-example", "state": "State_0", "input": "o-1"}


@pytest.mark.parametrize(
    "first_language",
    ["JSONata", "JSONPath"],
    ids=["JSONATA_OUTPUT_TO_JSONPATH", "JSONPATH_OUTPUT_TO_JSONATA"],
)
def test_output_flows_between_jsonata_and_jsonpath_states(sfn: Any, first_language: str) -> None:
    # AWS: query_language/test_mixed_query_language (test_output_to_state), same definitions.
    first: dict[str, Any] = {"QueryLanguage": first_language, "Type": "Pass", "Next": "Second"}
    if first_language == "JSONata":
        first["Output"] = {"foo": "foobar", "bar": "{% $states.input %}"}
    else:
        first["Parameters"] = {"foo": "foobar", "bar.$": "$"}
    second_language = "JSONPath" if first_language == "JSONata" else "JSONata"
    definition = {
        "StartAt": "First",
        "States": {"First": first, "Second": {"QueryLanguage": second_language, "Type": "Pass", "End": True}},
    }

    execution = run(sfn, definition, {"input_data": "test"})

    assert execution.output == {"foo": "foobar", "bar": {"input_data": "test"}}


def test_a_state_level_jsonata_state_in_a_jsonpath_machine_passes_its_input_on(sfn: Any) -> None:
    # AWS: query_language/test_base_query_language, BASE_PASS_JSONATA_OVERRIDE (no Output: input is output).
    definition = {
        "QueryLanguage": "JSONPath",
        "StartAt": "StartState",
        "States": {"StartState": {"QueryLanguage": "JSONata", "Type": "Pass", "End": True}},
    }

    assert run(sfn, definition, {"input_data": "test"}).output == {"input_data": "test"}


def test_values_round_trip_as_json(sfn: Any) -> None:
    tricky = 'quote " backslash \\ newline \n tab \t é ✓ 😀'
    execution_input = {
        "text": tricky,
        "price": 27.91,
        "nothing": None,
        "nested": {"a": [1, {"b": None}]},
        "single": [5],
    }
    definition = {
        "StartAt": "Shape",
        "States": {
            "Shape": {
                "QueryLanguage": "JSONata",
                "Type": "Pass",
                "Assign": {"remembered": "{% $states.input.text %}"},
                "Output": {
                    "text": "{% $states.input.text %}",
                    "joined": "{% $states.input.text & '!' %}",
                    "whole": "{% 4 / 2 %}",
                    "half": "{% 3 / 2 %}",
                    "float": "{% $states.input.price %}",
                    "null": "{% $states.input.nothing %}",
                    "nested": "{% $states.input.nested %}",
                    "single": "{% $states.input.single %}",
                    "dropped": "{% {'kept': 1, 'gone': $states.input.missing} %}",
                    "literal": [1, "two", None, True],
                },
                "Next": "Read back",
            },
            "Read back": {
                "QueryLanguage": "JSONPath",
                "Type": "Pass",
                "Parameters": {"variable.$": "$remembered", "previous.$": "$"},
                "End": True,
            },
        },
    }

    execution = run(sfn, definition, execution_input)

    assert execution.output == {
        "variable": tricky,
        "previous": {
            "text": tricky,
            "joined": tricky + "!",
            "whole": 2,
            "half": 1.5,
            "float": 27.91,
            "null": None,
            "nested": {"a": [1, {"b": None}]},
            "single": [5],
            "dropped": {"kept": 1},
            "literal": [1, "two", None, True],
        },
    }
    assert isinstance(execution.output["previous"]["whole"], int)
    # The history lists each assigned variable as JSON text, strings escaped like any other value.
    exited = execution.details("PassStateExited")[0]
    assert json.loads(exited["assignedVariables"]["remembered"]) == tricky


# -- Assign and variables -------------------------------------------------------------------------------


def test_assign_in_a_jsonata_state_sees_the_variables_as_the_state_found_them(sfn: Any) -> None:
    # AWS: query_language/test_mixed_query_language, JSONPATH_ASSIGN_JSONATA_REF (same definition).
    definition = {
        "StartAt": "JSONPathState",
        "States": {
            "JSONPathState": {
                "QueryLanguage": "JSONPath",
                "Type": "Pass",
                "Assign": {"theAnswer": 42},
                "Next": "JSONataState",
            },
            "JSONataState": {
                "QueryLanguage": "JSONata",
                "Type": "Pass",
                "Assign": {"theAnswer": 18, "oldAnswer": "{% $theAnswer %}"},
                "End": True,
            },
        },
    }

    execution = run(sfn, definition)

    assert execution.status == "SUCCEEDED"
    assert execution.output == {}
    assert [d["assignedVariables"] for d in execution.details("PassStateExited")] == [
        {"theAnswer": "42"},
        {"oldAnswer": "42", "theAnswer": "18"},
    ]


def test_a_states_output_sees_the_variables_before_its_own_assign(sfn: Any) -> None:
    # AWS: assign/test_assign_reference_variables, BASE_EVALUATION_ORDER_PASS_STATE (JSONPath, output 42);
    # the developer guide says the same of JSONata: Assign and Output are evaluated side by side.
    jsonpath = {
        "StartAt": "State0",
        "States": {
            "State0": {
                "Type": "Pass",
                "Result": {"theQuestion": "What is the answer to life the universe and everything?"},
                "Assign": {"question.$": "$.theQuestion", "answer": 42},
                "Next": "State1",
            },
            "State1": {
                "Type": "Pass",
                "InputPath": "$answer",
                "ResultPath": "$.theAnswer",
                "OutputPath": "$answer",
                "Assign": {"answer": "<omitted>"},
                "End": True,
            },
        },
    }
    jsonata = {
        "QueryLanguage": "JSONata",
        "StartAt": "State0",
        "States": {
            "State0": {"Type": "Pass", "Assign": {"answer": 42}, "Next": "State1"},
            "State1": {
                "Type": "Pass",
                "Assign": {"answer": "<omitted>"},
                "Output": "{% $answer %}",
                "Next": "State2",
            },
            "State2": {
                "Type": "Pass",
                "Output": {"before": "{% $states.input %}", "now": "{% $answer %}"},
                "End": True,
            },
        },
    }

    assert run(sfn, jsonpath).output == 42
    assert run(sfn, jsonata).output == {"before": 42, "now": "<omitted>"}


# -- Choice and Map ------------------------------------------------------------------------------------

CHOICE_CONDITION = {
    # AWS: assign/test_assign_base, test_assign_in_choice (CHOICE_CONDITION_JSONATA, same definition).
    "QueryLanguage": "JSONata",
    "StartAt": "ChoiceState",
    "States": {
        "ChoiceState": {
            "Type": "Choice",
            "Choices": [
                {
                    "Condition": "{% $states.input.condition %}",
                    "Next": "ConditionTrue",
                    "Assign": {"Assignment": "Condition assignment"},
                }
            ],
            "Default": "DefaultState",
            "Assign": {"Assignment": "Default Assignment"},
        },
        "ConditionTrue": {"Type": "Pass", "End": True},
        "DefaultState": {"Type": "Fail", "Cause": "Condition is false"},
    },
}


def test_choice_condition_picks_the_rule_and_its_assign(sfn: Any) -> None:
    chosen = run(sfn, CHOICE_CONDITION, {"condition": True})
    default = run(sfn, CHOICE_CONDITION, {"condition": False})

    assert chosen.status == "SUCCEEDED"
    assert chosen.output == {"condition": True}
    assert chosen.details("ChoiceStateExited")[0]["assignedVariables"] == {
        "Assignment": '"Condition assignment"'
    }
    assert (default.status, default.error, default.cause) == ("FAILED", None, "Condition is false")
    assert default.details("ChoiceStateExited")[0]["assignedVariables"] == {
        "Assignment": '"Default Assignment"'
    }


def test_choice_condition_compares_in_jsonata(sfn: Any) -> None:
    definition = {
        "StartAt": "Check Price",
        "States": {
            "Check Price": {
                "QueryLanguage": "JSONata",
                "Type": "Choice",
                "Choices": [
                    {
                        "Condition": "{% $states.input.current_price <= $states.input.desired_price %}",
                        "Next": "Send Notification",
                    }
                ],
                "Default": "Pause",
            },
            "Send Notification": {"Type": "Pass", "Result": "buy", "End": True},
            "Pause": {"Type": "Pass", "Result": "wait", "End": True},
        },
    }

    assert run(sfn, definition, {"current_price": 9, "desired_price": 10}).output == "buy"
    assert run(sfn, definition, {"current_price": 11, "desired_price": 10}).output == "wait"


def test_map_items_and_item_selector_from_a_variable(sfn: Any) -> None:
    # AWS: scenarios/test_base_scenarios, MAP_STATE_ITEM_SELECTOR_JSONATA (same definition and output).
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Start",
        "States": {
            "Start": {"Type": "Pass", "Assign": {"ItemsVar": ["Item1", "Item2"]}, "Next": "MapIterateState"},
            "MapIterateState": {
                "Type": "Map",
                "MaxConcurrency": 1,
                "Items": "{% $ItemsVar %}",
                "ItemSelector": {
                    "map_item_value": "{% $states.context.Map.Item.Value %}",
                    "var_sample": "{% $ItemsVar %}",
                    "string_literal": "string literal",
                },
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Pass",
                    "States": {"Pass": {"Type": "Pass", "End": True}},
                },
                "End": True,
            },
        },
    }

    execution = run(sfn, definition)

    assert execution.output == [
        {"map_item_value": "Item1", "var_sample": ["Item1", "Item2"], "string_literal": "string literal"},
        {"map_item_value": "Item2", "var_sample": ["Item1", "Item2"], "string_literal": "string literal"},
    ]
    assert execution.details("PassStateExited")[0]["assignedVariables"] == {"ItemsVar": '["Item1","Item2"]'}


def test_map_items_array_with_an_expression_element_and_output_over_the_results(sfn: Any) -> None:
    # AWS: evaluate_jsonata/test_base_evaluate_expressions, test_base_map[ITEMS]: the items are 1, 2, 3.
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Start",
        "States": {
            "Start": {
                "Type": "Map",
                "Items": [1, "{% $number('2') %}", 3],
                "MaxConcurrency": 1,
                "ItemProcessor": {
                    "StartAt": "Process",
                    "States": {
                        "Process": {
                            "Type": "Pass",
                            "Output": "{% $states.input * 10 + $states.context.Map.Item.Index %}",
                            "End": True,
                        }
                    },
                },
                "Output": {"results": "{% $states.result %}", "sum": "{% $sum($states.result) %}"},
                "End": True,
            }
        },
    }

    execution = run(sfn, definition)

    assert [d["input"] for d in execution.details("PassStateEntered")] == ["1", "2", "3"]
    assert execution.output == {"results": [10, 21, 32], "sum": 63}


def test_wait_map_and_fail_fields_take_expressions(sfn: Any) -> None:
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Wait",
        "States": {
            "Wait": {"Type": "Wait", "Seconds": "{% $states.input.seconds %}", "Next": "Each"},
            "Each": {
                "Type": "Map",
                "Items": "{% $states.input.items %}",
                "MaxConcurrency": "{% $states.input.concurrency %}",
                "ToleratedFailureCount": "{% 0 %}",
                "ItemProcessor": {"StartAt": "Item", "States": {"Item": {"Type": "Pass", "End": True}}},
                "Next": "Fail",
            },
            "Fail": {
                "Type": "Fail",
                "Error": "{% 'Items.' & $string($count($states.input)) %}",
                "Cause": "{% 'items ' & $join($states.input.$string(), ',') %}",
            },
        },
    }

    execution = run(sfn, definition, {"seconds": 1, "items": [1, 2], "concurrency": 1})

    assert (execution.status, execution.error, execution.cause) == ("FAILED", "Items.2", "items 1,2")


# -- Lambda Tasks, Retry and Catch --------------------------------------------------------------------


def test_jsonata_lambda_task_between_jsonpath_states(cloud: LocalCloud, sfn: Any) -> None:
    echo = function_named(cloud, "echo.handler")

    execution = run(
        sfn,
        machine_arn(cloud, "LambdaTaskStateMachine"),
        {"customer": "c-1", "items": [1, 2, 3], "ignored": True},
        name="lambda-task",
    )

    payload = {"customer": "c-1", "count": 3, "execution": "lambda-task"}
    assert execution.status == "SUCCEEDED"
    assert json.loads(execution.details("TaskScheduled")[0]["parameters"]) == {
        "FunctionName": function_arn(cloud, echo),
        "Payload": payload,
    }
    assert execution.output == {"fromVariable": payload, "previous": {"function": echo, "status": 200}}


def test_jsonpath_state_feeding_a_jsonata_lambda_task(cloud: LocalCloud, sfn: Any) -> None:
    # AWS: query_language/test_mixed_query_language, test_task_dataflow_to_state (same definition).
    identity = function_arn(cloud, function_named(cloud, "echo.identity"))

    execution = run(sfn, machine_arn(cloud, "DataflowStateMachine"), {"functionName": identity})

    payload = {"theQuestion": "What is the answer to life, the universe, and everything?", "theAnswer": 42}
    assert execution.status == "SUCCEEDED"
    assert execution.output == {"result": payload}
    assert json.loads(execution.details("TaskScheduled")[0]["parameters"])["Payload"] == payload
    assigned = execution.details("TaskStateExited")[0]["assignedVariables"]
    assert assigned["answer"] == '"<omitted>"'
    assert json.loads(assigned["message"])["Payload"] == payload


def test_retry_then_catch_with_output_and_assign_from_the_error_output(cloud: LocalCloud, sfn: Any) -> None:
    # AWS: states_variables/test_error_output, TASK_CATCH_ERROR_OUTPUT and TASK_CATCH_ERROR_VARIABLE_SAMPLING:
    # the catcher's $states.errorOutput is {"Error": "Exception", "Cause": <the function's error as JSON>}.
    execution = run(sfn, machine_arn(cloud, "CatchStateMachine"), {"message": "Some exception was raised."})

    assert execution.status == "SUCCEEDED"
    assert len(execution.details("TaskFailed")) == 2  # the call and its one retry
    error = execution.output["error"]
    assert execution.output["caught"] == "Exception"
    assert error["stateInput"] == {"message": "Some exception was raised."}
    assert error["stateError"]["Error"] == "Exception"
    cause = json.loads(error["stateError"]["Cause"])
    assert (cause["errorType"], cause["errorMessage"]) == ("Exception", "Some exception was raised.")
    assert execution.details("TaskStateExited")[0]["assignedVariables"] == {"caughtError": '"Exception"'}


def test_a_query_evaluation_error_in_arguments_is_caught(cloud: LocalCloud, sfn: Any) -> None:
    # The event is as AWS records an uncaught one (see the QueryEvaluationError tests below); for the
    # caught error's Cause no recording exists, and the local cloud gives the event's cause.
    execution = run(sfn, machine_arn(cloud, "CatchStateMachine"), {})

    cause = (
        "An error occurred while executing the state 'Task' (entered at the event id #2). The JSONata "
        "expression '$states.input.message' specified for the field 'Arguments/Payload/raise' returned "
        "nothing (undefined)."
    )
    assert execution.status == "SUCCEEDED"
    assert execution.details("TaskScheduled") == []
    assert execution.details("EvaluationFailed") == [
        {
            "error": "States.QueryEvaluationError",
            "cause": cause,
            "location": "Arguments/Payload/raise",
            "state": "Task",
        }
    ]
    assert execution.output == {
        "error": {"stateInput": {}, "stateError": {"Error": "States.QueryEvaluationError", "Cause": cause}},
        "caught": "States.QueryEvaluationError",
    }


# -- Step Functions' own functions ----------------------------------------------------------------------


def test_partition_as_recorded_on_aws(sfn: Any) -> None:
    # AWS: intrinsic_functions/test_array_jsonata, test_array_partition (arrays 0..n-1, chunk sizes 1..5).
    definition = pass_state(
        "{% $partition($states.input.FunctionInput.fst, $states.input.FunctionInput.snd) %}"
    )
    recorded = {
        (1, 1): [[0]], (1, 5): [[0]],
        (2, 1): [[0], [1]], (2, 2): [[0, 1]], (2, 3): [[0, 1]],
        (3, 1): [[0], [1], [2]], (3, 2): [[0, 1], [2]], (3, 3): [[0, 1, 2]],
        (4, 2): [[0, 1], [2, 3]], (4, 3): [[0, 1, 2], [3]], (4, 5): [[0, 1, 2, 3]],
    }  # fmt: skip
    machine = sfn.create_state_machine(
        name="partition", definition=json.dumps(definition), roleArn=LOCAL_ROLE_ARN
    )

    for (length, size), expected in recorded.items():
        execution_input = {"FunctionInput": {"fst": list(range(length)), "snd": size}}
        assert run(sfn, machine["stateMachineArn"], execution_input).output == expected, (length, size)


def test_range_as_recorded_on_aws(sfn: Any) -> None:
    # AWS: intrinsic_functions/test_array_jsonata, test_array_range. A range of one value is that value.
    definition = pass_state("{% $range($states.input.fst, $states.input.snd, $states.input.trd) %}")
    machine = sfn.create_state_machine(
        name="range", definition=json.dumps(definition), roleArn=LOCAL_ROLE_ARN
    )
    recorded = {(0, 9, 3): [0, 3, 6, 9], (0, 10, 3): [0, 3, 6, 9], (1, 9, 9): 1, (1, 9, 2): [1, 3, 5, 7, 9]}

    for (first, last, step), expected in recorded.items():
        execution_input = {"fst": first, "snd": last, "trd": step}
        assert run(sfn, machine["stateMachineArn"], execution_input).output == expected, (first, last, step)


def test_parse_as_recorded_on_aws(sfn: Any) -> None:
    # AWS: intrinsic_functions/test_json_manipulation_jsonata, test_parse.
    definition = pass_state("{% $parse($states.input.FunctionInput) %}")
    machine = sfn.create_state_machine(
        name="parse", definition=json.dumps(definition), roleArn=LOCAL_ROLE_ARN
    )
    recorded = {
        "-0": 0,
        "1": 1,
        "1.1": 1.1,
        "true": True,
        '"HelloWorld"': "HelloWorld",
        '[1, 2, "HelloWorld"]': [1, 2, "HelloWorld"],
        '{"Arg1": 1, "Arg2": []}': {"Arg1": 1, "Arg2": []},
    }

    for text, expected in recorded.items():
        assert run(sfn, machine["stateMachineArn"], {"FunctionInput": text}).output == expected, text


def test_the_documented_functions(sfn: Any) -> None:
    # Developer guide, "JSONata functions provided by Step Functions": integer arguments are rounded down;
    # $hash's algorithms are MD5, SHA-1, SHA-256, SHA-384 and SHA-512; $random takes an optional seed and
    # repeats its number for the same seed; $uuid is a version 4 UUID.
    execution = run(
        sfn,
        pass_state(
            {
                "partition": "{% $partition([1, 2, 3, 4, 5], 2.6) %}",
                "range": "{% $range(0, 10, 2) %}",
                "rangeDown": "{% $range(5, 1, -2) %}",
                "rangeRoundedDown": "{% $range(1.4, 5.6, 2.2) %}",
                "hashes": "{% ['MD5', 'SHA-1', 'SHA-256', 'SHA-384', 'SHA-512'].$hash('input data', $) %}",
                "hashUnicode": "{% $hash('✓', 'SHA-256') %}",
                "random": "{% $random() %}",
                "seeded": "{% [$random(77), $random(77), $random(77.5), $random(78)] %}",
                "uuids": "{% [$uuid(), $uuid()] %}",
            }
        ),
    )

    output = execution.output
    assert output["partition"] == [[1, 2], [3, 4], [5]]
    assert output["range"] == [0, 2, 4, 6, 8, 10]
    assert output["rangeDown"] == [5, 3, 1]
    assert output["rangeRoundedDown"] == [1, 3, 5]
    hashlib_names = ["md5", "sha1", "sha256", "sha384", "sha512"]
    assert output["hashes"] == [hashlib.new(name, b"input data").hexdigest() for name in hashlib_names]
    # The States.Hash example in the developer guide: "input data" with SHA-1.
    assert output["hashes"][1] == "aaff4a450a104cd177d28d18d74485e8cae074b7"
    assert output["hashUnicode"] == hashlib.sha256("✓".encode()).hexdigest()
    assert 0 <= output["random"] < 1
    first, again, rounded_down, other = output["seeded"]
    assert first == again == rounded_down != other
    assert 0 <= first < 1
    assert all(UUID_V4.match(value) for value in output["uuids"])
    assert output["uuids"][0] != output["uuids"][1]


# -- States.QueryEvaluationError ---------------------------------------------------------------------


def _evaluation_failure(
    state: str, entered_at: int, expression: str, field: str, outcome: str
) -> dict[str, str]:
    cause = (
        f"An error occurred while executing the state '{state}' (entered at the event id #{entered_at}). "
        f"The JSONata expression '{expression}' specified for the field '{field}' {outcome}"
    )
    return {"error": "States.QueryEvaluationError", "cause": cause, "location": field, "state": state}


UNDEFINED = "returned nothing (undefined)."


@pytest.mark.parametrize(
    ("definition", "failure"),
    [
        # AWS: assign/test_assign_reference_variables, test_undefined_reference[BASE_UNDEFINED_OUTPUT].
        (pass_state("{% $doesNotExist %}"), ("State_0", 2, "$doesNotExist", "Output", UNDEFINED)),
        # ... [BASE_UNDEFINED_OUTPUT_FIELD]
        (
            pass_state({"result": "{% $doesNotExist %}"}),
            ("State_0", 2, "$doesNotExist", "Output/result", UNDEFINED),
        ),
        # ... [BASE_UNDEFINED_ASSIGN]
        (
            {
                "QueryLanguage": "JSONata",
                "StartAt": "State0",
                "States": {
                    "State0": {"Type": "Pass", "Assign": {"result": "{% $doesNotExist %}"}, "End": True}
                },
            },
            ("State0", 2, "$doesNotExist", "Assign/result", UNDEFINED),
        ),
        # ... [BASE_UNDEFINED_OUTPUT_MULTIPLE_STATES]
        (
            {
                "QueryLanguage": "JSONata",
                "StartAt": "State0",
                "States": {
                    "State0": {"Type": "Pass", "Next": "State1"},
                    "State1": {"Type": "Pass", "Next": "State2"},
                    "State2": {"Type": "Pass", "Output": {"result": "{% $doesNotExist %}"}, "End": True},
                },
            },
            ("State2", 6, "$doesNotExist", "Output/result", UNDEFINED),
        ),
        # ... [BASE_UNDEFINED_ARGUMENTS_FIELD]: a Task fails before it is scheduled.
        (
            {
                "QueryLanguage": "JSONata",
                "StartAt": "State0",
                "States": {
                    "State0": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::lambda:invoke",
                        "Arguments": {"FunctionName": "{% $doesNotExist %}"},
                        "End": True,
                    }
                },
            },
            ("State0", 2, "$doesNotExist", "Arguments/FunctionName", UNDEFINED),
        ),
        # AWS: intrinsic_functions/test_math_operations_jsonata: $randomSeeded is LocalStack's, not AWS's.
        (
            pass_state({"FunctionResult": "{% $randomSeeded($states.input.FunctionInput.fst) %}"}),
            (
                "State_0",
                2,
                "$randomSeeded($states.input.FunctionInput.fst)",
                "Output/FunctionResult",
                "threw an error during evaluation. T1006: Attempted to invoke a non-function",
            ),
        ),
        # AWS: scenarios/test_base_scenarios, test_map_state_items_eval_jsonata_fail[function].
        (
            {
                "QueryLanguage": "JSONata",
                "StartAt": "MapIterateState",
                "States": {
                    "MapIterateState": {
                        "Type": "Map",
                        "Items": "{% $fn := function($x){$x} %}",
                        "ItemProcessor": {
                            "StartAt": "Pass",
                            "States": {"Pass": {"Type": "Pass", "End": True}},
                        },
                        "End": True,
                    }
                },
            },
            (
                "MapIterateState",
                2,
                "$fn := function($x){$x}",
                "Items",
                "returned an unsupported result type.",
            ),
        ),
        # The developer guide: $eval is not available in Step Functions (use $parse).
        (
            pass_state({"value": "{% $eval('1 + 1') %}"}),
            (
                "State_0",
                2,
                "$eval('1 + 1')",
                "Output/value",
                "threw an error during evaluation. T1006: Attempted to invoke a non-function",
            ),
        ),
    ],
    ids=[
        "undefined-output",
        "undefined-output-field",
        "undefined-assign",
        "undefined-third-state",
        "undefined-task-arguments",
        "no-randomSeeded",
        "function-as-items",
        "no-eval",
    ],
)
def test_query_evaluation_error_as_aws_records_it(
    sfn: Any, definition: dict[str, Any], failure: tuple[str, int, str, str, str]
) -> None:
    expected = _evaluation_failure(*failure)

    execution = run(sfn, definition, {"FunctionInput": {"fst": 3}})

    assert (execution.status, execution.error, execution.cause) == (
        "FAILED",
        "States.QueryEvaluationError",
        expected["cause"],
    )
    assert execution.details("EvaluationFailed") == [expected]
    assert [event["type"] for event in execution.events[-2:]] == [
        "EvaluationFailed" if definition["States"][failure[0]]["Type"] != "Map" else "MapStateFailed",
        "ExecutionFailed",
    ]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("$states.input.text + 1", "T2001: The left side of the + operator must evaluate to a number"),
        ("$hash('data', 'sha-256')", "$hash: unsupported algorithm"),
        ("$hash(123, 'SHA-256')", "$hash: the data to hash must be a string"),
        ("$partition([1, 2, 3], 0)", "$partition: the chunk size must be a positive integer"),
        ("$partition('not an array', 2)", "$partition: the array to partition must be an array"),
        ("$range(1, 10, 0.49)", "$range: the step must not be zero"),
        ("$range(1, 5)", "$range: wrong number of arguments (2)"),
        ("$parse('{bad json}')", "$parse: the argument is not valid JSON"),
        ("$parse(null)", "$parse: the argument must be a string"),
        ("$random('seed')", "$random: the seed must be a number"),
        ("$uuid('x')", "$uuid: wrong number of arguments (1)"),
        ("$uppercase(1)", "T0410: Argument 1 of function uppercase does not match function signature"),
    ],
)
def test_a_failing_expression_fails_the_state_with_its_message(
    sfn: Any, expression: str, message: str
) -> None:
    execution = run(sfn, pass_state({"value": "{% " + expression + " %}"}), {"text": "a"})

    opening = (
        "An error occurred while executing the state 'State_0' (entered at the event id #2). The JSONata "
        f"expression '{expression}' specified for the field 'Output/value' threw an error during evaluation. "
    )
    assert (execution.status, execution.error) == ("FAILED", "States.QueryEvaluationError")
    assert execution.cause is not None
    assert execution.cause.startswith(opening + message)
    assert execution.details("EvaluationFailed")[0]["location"] == "Output/value"


def test_a_query_evaluation_error_in_a_map_iteration_fails_the_map_under_its_own_name(sfn: Any) -> None:
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Each",
        "States": {
            "Each": {
                "Type": "Map",
                "Items": [1, 2, 3],
                "MaxConcurrency": 1,
                "ItemProcessor": {
                    "StartAt": "Item",
                    "States": {
                        "Item": {
                            "Type": "Pass",
                            "Output": "{% $states.input = 2 ? $nothing : $states.input %}",
                            "End": True,
                        }
                    },
                },
                "End": True,
            }
        },
    }

    execution = run(sfn, definition)

    failure = _evaluation_failure(
        "Item", 9, "$states.input = 2 ? $nothing : $states.input", "Output", UNDEFINED
    )
    assert (execution.status, execution.error, execution.cause) == (
        "FAILED",
        "States.QueryEvaluationError",
        failure["cause"],
    )
    assert execution.details("EvaluationFailed") == [failure]
    assert [d["index"] for d in execution.details("MapIterationFailed")] == [1]


# -- The app's own Validate order step, in JSONata ------------------------------------------------------


def _batch(label: str) -> dict[str, Any]:
    order = {
        "order_id": f"{label}-1",
        "customer_id": "c-1",
        "currency": "USD",
        "items": [
            {"sku": "SKU-001", "quantity": 2, "unit_price": "9.99"},
            {"sku": "SKU-002", "quantity": 1, "unit_price": 24.5},
        ],
    }
    invalid = {
        "order_id": f"{label}-2",
        "customer_id": "c-3",
        "currency": "usd",
        "items": [{"sku": "SKU-004", "quantity": 0, "unit_price": "5.00"}],
    }
    return {"batch_id": f"batch-{label}", "orders": [order, invalid, order, {"customer_id": "no id"}]}


def test_validate_order_in_jsonata_gives_what_the_jsonpath_step_gives(cloud: LocalCloud, sfn: Any) -> None:
    # The app's "Process inline orders" Map and "Validate order" Task
    # (statemachine/order_batch.workflow.yaml), once as written and once in JSONata, both running the app's
    # real handler. Each run has its own order IDs (the handler claims them); with those swapped, the
    # results must be the same.
    jsonpath = run(sfn, machine_arn(cloud, "ValidateJsonPathStateMachine"), _batch("jsonpath"))
    jsonata = run(sfn, machine_arn(cloud, "ValidateJsonataStateMachine"), _batch("jsonata"))

    assert (jsonpath.status, jsonata.status) == ("SUCCEEDED", "SUCCEEDED")
    assert [result["outcome"] for result in jsonata.output] == ["VALID", "REJECTED", "DUPLICATE", "REJECTED"]
    assert jsonata.output == json.loads(json.dumps(jsonpath.output).replace("jsonpath", "jsonata"))


def test_describe_execution_gives_a_string_output_as_json_text(sfn: Any) -> None:
    machine = sfn.create_state_machine(
        name="string-output", definition=json.dumps(pass_state("{% 'done' %}")), roleArn=LOCAL_ROLE_ARN
    )["stateMachineArn"]
    arn = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]
    wait_for_execution(sfn, arn, timeout=60, poll_seconds=0.1)

    assert sfn.describe_execution(executionArn=arn)["output"] == '"done"'
