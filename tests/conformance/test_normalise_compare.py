"""The conformance suite's own parts: how outcomes are read, normalised and compared (no local cloud)."""

from __future__ import annotations

import json

import pytest

from orderbatch.conformance.cases import definition_features, load_cases
from orderbatch.conformance.compare import compare_outcomes, first_mismatch
from orderbatch.conformance.normalise import (
    apply_snapshot_transformers,
    canonical,
    parallel_events_as_snapshotted,
)
from orderbatch.conformance.outcome import Outcome, outcome_from_events
from orderbatch.conformance.runner import comparable

LOCAL_EXECUTION_ARN = (
    "arn:aws:states:us-east-1:123456789012:execution:statemachine_0000001a:"
    "0f6e8c3a-1b2c-4d5e-8f90-123456789abc"
)
RECORDED_EXECUTION_ARN = (
    "arn:<partition>:states:<region>:111111111111:execution:<ArnPart_0idx>:<ExecArnPart_0idx>"
)


def test_arns_of_both_sides_reach_the_same_form() -> None:
    local = canonical({"ExecutionArn": LOCAL_EXECUTION_ARN})
    recorded = canonical({"ExecutionArn": RECORDED_EXECUTION_ARN})

    assert (
        local
        == recorded
        == {"ExecutionArn": "arn:<partition>:states:<region>:<account>:execution:<name>:<execution>"}
    )


def test_uuids_request_ids_and_timestamps_become_tokens() -> None:
    text = (
        "Rate Exceeded. (Service: AWSLambda; Status Code: 429; Request ID: 4f1c-9a; Proxy: null) "
        "at 2026-12-01T02:22:27.123Z by 0f6e8c3a-1b2c-4d5e-8f90-123456789abc"
    )

    assert canonical(text) == (
        "Rate Exceeded. (Service: AWSLambda; Status Code: 429; Request ID: <request_id>; Proxy: null) "
        "at <timestamp> by <uuid>"
    )
    assert canonical("<uuid:3>") == "<uuid>"
    assert canonical("datetime") == "<timestamp>"


def test_json_documents_given_as_text_are_parsed_but_scalars_are_not() -> None:
    assert canonical('{"a": "[1, 2]"}') == {"a": [1, 2]}
    assert canonical("1") == "1"
    assert canonical('"quoted"') == '"quoted"'


def test_lambda_stack_traces_name_the_task_root_as_on_aws() -> None:
    trace = '  File "/tmp/orderbatch-conformance-x/functions/f/handler.py", line 2, in handler\n'

    assert canonical(trace) == '  File "/var/task/handler.py", line 2, in handler\n'


def test_fixture_transformers_apply_to_both_sides() -> None:
    local = {"SdkHttpMetadata": {"HttpHeaders": {"Date": "Tue, 01 Dec 2026 02:29:01 GMT"}}}
    recorded = {"SdkHttpMetadata": {"HttpHeaders": {"Date": "date"}}}

    assert canonical(local) == canonical(recorded)
    assert canonical({"Date": "Tue"}) == {"Date": "Tue"}  # only under SdkHttpMetadata


def test_a_cause_quoting_the_input_keeps_a_placeholder_for_it() -> None:
    cause = "The JSONPath '$.X' could not be found in the input '{\"Error\":\"e\"}'"

    assert canonical(cause, "cause") == "The JSONPath '$.X' could not be found in the input '<json-input>'"


def test_test_transformers_rename_what_the_test_chose() -> None:
    output = {"FunctionName": "lambda_func_00000098", "Payload": {"StartDate": "2026-12-01"}}

    transformed = apply_snapshot_transformers(
        output,
        "output",
        regex=[("lambda_func_00000098", "<lambda_function_name>")],
        jsonpath=[
            {"jsonpath": "$..output.Payload.StartDate", "replacement": "start", "replace_reference": False}
        ],
    )

    assert transformed == {"FunctionName": "<lambda_function_name>", "Payload": {"StartDate": "start"}}


def test_history_paths_of_jsonpath_transformers_reach_the_output() -> None:
    transformer = {
        "jsonpath": "$..events..executionSucceededEventDetails.output.FunctionResult",
        "replacement": "RandomNumberGenerated",
        "replace_reference": False,
    }

    assert apply_snapshot_transformers({"FunctionResult": 28}, "output", jsonpath=[transformer]) == {
        "FunctionResult": "RandomNumberGenerated"
    }


def test_nested_parallel_loses_the_inner_exit_as_the_snapshot_did() -> None:
    local = [
        "ExecutionStarted",
        "ParallelStateEntered",
        "ParallelStateStarted",
        "ParallelStateEntered",
        "ParallelStateStarted",
        "PassStateEntered",
        "PassStateExited",
        "ParallelStateExited",
        "ParallelStateExited",
        "ExecutionSucceeded",
    ]

    snapshotted = parallel_events_as_snapshotted(local)

    assert snapshotted.count("ParallelStateExited") == 1
    assert len(snapshotted) == len(local) - 1


def _events(*types_and_details: tuple[str, dict[str, object]]) -> list[dict[str, object]]:
    events = []
    for number, (event_type, details) in enumerate(types_and_details, start=1):
        event: dict[str, object] = {"id": number, "previousEventId": number - 1, "type": event_type}
        if details:
            key = event_type[0].lower() + event_type[1:] + "EventDetails"
            event[key] = details
        events.append(event)
    return events


def test_outcome_reads_status_output_and_attempts_from_a_history() -> None:
    function = "arn:aws:lambda:us-east-1:123456789012:function:f"
    events = _events(
        ("ExecutionStarted", {"input": "{}"}),
        ("TaskStateEntered", {"name": "Invoke"}),
        ("LambdaFunctionScheduled", {"resource": function}),
        ("LambdaFunctionFailed", {"error": "Exception"}),
        ("LambdaFunctionScheduled", {"resource": function}),
        ("LambdaFunctionSucceeded", {"output": "{}"}),
        ("ExecutionSucceeded", {"output": '{"done": true}'}),
    )

    outcome = outcome_from_events(events)

    assert outcome.status == "SUCCEEDED"
    assert outcome.output == '{"done": true}'
    assert outcome.attempts == {function: 2}
    assert outcome.event_types is not None
    assert outcome.event_types[0] == "ExecutionStarted"


def test_placeholders_on_the_recorded_side_match_any_value() -> None:
    assert first_mismatch({"Name": "<ExecArnPart_0idx>", "N": 1}, {"Name": "abc", "N": 1}) is None
    assert first_mismatch("Request <x> failed", "Request 42 failed") is None
    assert first_mismatch({"A": "<x>"}, {"A": {"nested": 1}}) == (".A", "<x>", {"nested": 1})
    assert first_mismatch([1, 2], [1, 2, 3]) == ("", [1, 2], [1, 2, 3])
    assert first_mismatch({"A": 1}, {"A": 1, "B": 2}) == (".B", "(absent)", 2)


def test_numbers_compare_by_value_but_booleans_and_strings_do_not_pass_for_them() -> None:
    assert first_mismatch(1, 1.0) is None
    assert first_mismatch(1, True) is not None
    assert first_mismatch("1", 1) is not None


def test_a_different_status_reports_how_the_local_run_ended() -> None:
    expected = Outcome(
        status="SUCCEEDED", output={"a": 1}, event_types=["ExecutionStarted", "ExecutionSucceeded"]
    )
    actual = Outcome(
        status="FAILED",
        error="States.Runtime",
        cause="boom",
        event_types=["ExecutionStarted", "ExecutionFailed"],
    )

    differences = compare_outcomes(expected, actual)

    assert [d.aspect for d in differences] == ["status", "events"]
    assert differences[0].line() == 'status: expected "SUCCEEDED", got "FAILED States.Runtime: boom"'
    assert (
        differences[1].line()
        == 'events[1]: expected "ExecutionSucceeded (of 2)", got "ExecutionFailed (of 2)"'
    )


def test_branch_events_are_compared_as_counts() -> None:
    expected = Outcome(status="SUCCEEDED", output=1, event_types=["A", "B", "B"])
    reordered = Outcome(status="SUCCEEDED", output=1, event_types=["B", "A", "B"])
    extra = Outcome(status="SUCCEEDED", output=1, event_types=["B", "A", "B", "C"])

    assert compare_outcomes(expected, reordered, unordered_events=True) == []
    assert compare_outcomes(expected, reordered) != []
    [difference] = compare_outcomes(expected, extra, unordered_events=True)
    assert difference.line() == "events (unordered): expected (nothing), got (1x C)"


def test_retry_attempts_are_compared_when_the_events_agree() -> None:
    expected = Outcome(status="FAILED", error="E", cause="", event_types=["X"], attempts={"lambda:invoke": 3})
    actual = Outcome(status="FAILED", error="E", cause=None, event_types=["X"], attempts={"lambda:invoke": 4})

    [difference] = compare_outcomes(expected, actual)

    assert difference.aspect == "attempts"


def test_comparable_applies_the_cases_transformers_only_to_the_local_side() -> None:
    [case] = load_cases(substring="error_handling.test_raise_exception.v2")
    recorded_function = next(iter(case.functions))
    local = Outcome(
        status=case.expected.status,
        error=case.expected.error,
        cause=json.dumps(case.expected.cause).replace("<lambda_function_name>", recorded_function),
        event_types=case.expected.event_types,
        attempts={"lambda:invoke": 1},
    )

    assert comparable(local, case).cause == comparable(case.expected).cause


@pytest.mark.parametrize(
    ("definition", "feature"),
    [
        ({"StartAt": "M", "States": {"M": {"Type": "Map", "ItemReader": {}, "End": True}}}, "Map ItemReader"),
        (
            {
                "StartAt": "T",
                "States": {
                    "T": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::lambda:invoke",
                        "Retry": [{"ErrorEquals": ["X"], "MaxDelaySeconds": 3, "JitterStrategy": "FULL"}],
                        "End": True,
                    }
                },
            },
            "Retry JitterStrategy",
        ),
        (
            {"StartAt": "P", "States": {"P": {"Type": "Pass", "Parameters": {"a.$": "States.Format('x')"}}}},
            "Intrinsic Format",
        ),
        (
            {"QueryLanguage": "JSONata", "StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}},
            "JSONata",
        ),
    ],
)
def test_definition_features(definition: dict[str, object], feature: str) -> None:
    assert feature in definition_features(definition)
