"""Intrinsic functions and JSONPath on the local cloud, through TestState on one Pass state, as boto3 sees it.

Each case states where AWS's answer comes from: a recording (the conformance cases from LocalStack's
AWS-recorded snapshots, a re:Post thread quoting AWS's cause), AWS's documentation, or Step Functions
Local (AWS's own Java implementation, quoted in public issue threads). Where AWS's exact wording is not
recorded, the test asserts the error name AWS documents and what the cause must name; docs/fidelity.md
lists those.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from sam_local_cloud import LocalCloud, LocalCloudConfig

pytestmark = pytest.mark.e2e

# A template with nothing to build: TestState needs only the local cloud's Step Functions.
TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Placeholder:
    Type: AWS::Serverless::StateMachine
    Properties:
      Name: intrinsics-and-paths
      Definition:
        StartAt: Done
        States:
          Done:
            Type: Succeed
"""


@pytest.fixture(scope="module")
def sfn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("intrinsics")
    template = Path(folder / "template.yaml")
    template.write_text(TEMPLATE)
    with LocalCloud(LocalCloudConfig(template=template, state_dir=folder / "state")) as cloud:
        environment = cloud.environment()
        yield boto3.client(
            "stepfunctions",
            endpoint_url=environment["AWS_ENDPOINT_URL"],
            region_name=environment.get("AWS_DEFAULT_REGION", "us-east-1"),
            aws_access_key_id=environment.get("AWS_ACCESS_KEY_ID", "testing"),
            aws_secret_access_key=environment.get("AWS_SECRET_ACCESS_KEY", "testing"),
            config=Config(inject_host_prefix=False),
        )


def evaluate(sfn: Any, expression: str, state_input: Any, field: str = "r") -> dict[str, Any]:
    """TestState's answer for a Pass state whose ``Parameters`` set ``field`` to ``expression``."""
    state = {"Type": "Pass", "Parameters": {f"{field}.$": expression}, "End": True}
    answer: dict[str, Any] = sfn.test_state(definition=json.dumps(state), input=json.dumps(state_input))
    answer.pop("ResponseMetadata", None)
    return answer


def value_of(sfn: Any, expression: str, state_input: Any) -> Any:
    answer = evaluate(sfn, expression, state_input)
    assert answer["status"] == "SUCCEEDED", answer
    return json.loads(answer["output"])["r"]


def failure_of(sfn: Any, expression: str, state_input: Any, field: str = "r") -> tuple[str, str]:
    answer = evaluate(sfn, expression, state_input, field)
    assert answer["status"] == "FAILED", answer
    return answer["error"], answer["cause"]


# ---------------------------------------------------------------------------------------------- literals


def test_array_keeps_a_null_literal(sfn: Any) -> None:
    # AWS's example in the brief: the null stays, after the path's object.
    state_input = {"inputObject": {"a": 1}}
    result = value_of(sfn, "States.Array('Foo', 2022, $.inputObject, null)", state_input)
    assert result == ["Foo", 2022, {"a": 1}, None]


def test_number_and_boolean_literals(sfn: Any) -> None:
    result = value_of(sfn, "States.Array(1.5, -2, -2.5, 0, true, false, 'x')", {})
    assert result == [1.5, -2, -2.5, 0, True, False, "x"]


def test_negative_literal_in_math_add(sfn: Any) -> None:
    # Recorded with paths (intrinsic_functions.test_math_add.0): -9 + 3 is -6.
    assert value_of(sfn, "States.MathAdd(-9, 3)", {}) == -6


def test_escaped_quote_braces_and_backslash(sfn: Any) -> None:
    # AWS's reserved characters: \' \{ \} \\ stand for ' { } \; escaped braces are no placeholder.
    assert value_of(sfn, "States.Format('it\\'s \\{\\} and {}', 'x')", {}) == "it's {} and x"
    assert value_of(sfn, "States.Format('a\\\\b')", {}) == "a\\b"


def test_escaped_double_quotes_in_a_literal(sfn: Any) -> None:
    # Recorded (intrinsic_functions.test_json_merge_escaped_argument): \" inside a literal is a quote.
    result = value_of(sfn, "States.StringToJson('{\"a\": [1, null]}')", {})
    assert result == {"a": [1, None]}


def test_variable_holding_json_text_as_an_argument(sfn: Any) -> None:
    # Recorded (assign.test_reference_assign.BASE_REFERENCE_IN_INTRINSIC_FUNCTION): AWS parses the text.
    state = {"Type": "Pass", "Parameters": {"r.$": "States.StringToJson($js)", "k.$": "$js"}, "End": True}
    variables = {"js": '{"key":"value"}'}
    answer = sfn.test_state(definition=json.dumps(state), input="{}", variables=json.dumps(variables))
    assert answer["status"] == "SUCCEEDED", answer
    assert json.loads(answer["output"]) == {"r": {"key": "value"}, "k": '{"key":"value"}'}


def test_assigned_text_is_the_decoded_json_string(sfn: Any) -> None:
    # Recorded (scenarios.test_escape_sequence_parsing.ESCAPE_SEQUENCES_JSONATA_COMPARISON_ASSIGN and
    # assign.test_reference_assign.BASE_REFERENCE_IN_INTRINSIC_FUNCTION): "\"" assigns one quote.
    definition = {
        "StartAt": "Assign",
        "States": {
            "Assign": {"Type": "Pass", "Assign": {"quote": '"', "js": '{"key":"value"}'}, "Next": "Use"},
            "Use": {
                "Type": "Pass",
                "Parameters": {"quote.$": "$quote", "parsed.$": "States.StringToJson($js)"},
                "End": True,
            },
        },
    }
    role = "arn:aws:iam::123456789012:role/intrinsics"
    machine = sfn.create_state_machine(name="assign-text", definition=json.dumps(definition), roleArn=role)
    execution = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], input="{}")
    deadline = time.monotonic() + 30
    described = sfn.describe_execution(executionArn=execution["executionArn"])
    while described["status"] == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.1)
        described = sfn.describe_execution(executionArn=execution["executionArn"])
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"]) == {"quote": '"', "parsed": {"key": "value"}}


# ---------------------------------------------------------------------------------------------- nulls


def test_format_writes_null_as_null(sfn: Any) -> None:
    # Recorded (intrinsic_functions.test_format_1.3) for a null from the input; a literal null alike.
    from_input = value_of(sfn, "States.Format('Formatting argument {}.', $.v)", {"v": None})
    assert from_input == "Formatting argument null."
    assert value_of(sfn, "States.Format('{} and {}', null, 1)", {}) == "null and 1"


def test_json_to_string_of_null(sfn: Any) -> None:
    # Recorded: intrinsic_functions.test_json_to_string.0.
    assert value_of(sfn, "States.JsonToString($.v)", {"v": None}) == "null"
    assert value_of(sfn, "States.JsonToString(null)", {}) == "null"


def test_array_contains_null(sfn: Any) -> None:
    # Recorded: intrinsic_functions.test_array_contains.0 and .3.
    assert value_of(sfn, "States.ArrayContains($.a, null)", {"a": []}) is False
    assert value_of(sfn, "States.ArrayContains($.a, $.v)", {"a": [[1, 2, 3], 2], "v": None}) is False


def test_array_unique_keeps_one_null_and_tells_json_types_apart(sfn: Any) -> None:
    state_input = {"a": [None, None, 1, 1, "1", True, True, {"k": 1}, {"k": 1}, [None], [None]]}
    result = value_of(sfn, "States.ArrayUnique($.a)", state_input)
    assert result == [None, 1, "1", True, {"k": 1}, [None]]


def test_array_contains_an_object(sfn: Any) -> None:
    # Recorded: intrinsic_functions.test_array_contains.6.
    state_input = {"a": [{"1": 2, "2": []}], "v": {"1": 2, "2": []}}
    assert value_of(sfn, "States.ArrayContains($.a, $.v)", state_input) is True


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        ("States.Hash(null, 'SHA-256')", "States.Hash"),
        ("States.Hash($.v, 'SHA-256')", "States.Hash"),
        ("States.StringSplit($.v, ',')", "States.StringSplit"),
        ("States.MathAdd($.v, 1)", "States.MathAdd"),
    ],
)
def test_null_where_a_value_is_needed_fails_the_state(sfn: Any, expression: str, named: str) -> None:
    # AWS reports intrinsic errors as States.Runtime (States.IntrinsicFailure is reserved).
    error, cause = failure_of(sfn, expression, {"v": None})
    assert error == "States.Runtime"
    assert named in cause
    assert "null" in cause


def test_format_with_too_few_arguments_fails_the_state(sfn: Any) -> None:
    error, cause = failure_of(sfn, "States.Format('{} and {}', $.a)", {"a": 1})
    assert error == "States.Runtime"
    assert "placeholders (2)" in cause


def test_array_get_item_past_the_end_fails_the_state(sfn: Any) -> None:
    error, cause = failure_of(sfn, "States.ArrayGetItem($.a, 5)", {"a": [1]})
    assert error == "States.Runtime"
    assert "States.ArrayGetItem" in cause


# ---------------------------------------------------------------------------------------------- JSONPath

ITEMS = {
    "items": [
        {"a": 1, "b": "x", "keep": True},
        {"a": 2, "b": "y", "keep": False},
        {"a": 3, "b": "x", "session": None},
    ]
}


def test_filter_with_and(sfn: Any) -> None:
    result = value_of(sfn, "$.items[?(@.a > 1 && @.b == 'x')].a", ITEMS)
    assert result == [3]


def test_filter_with_or_keeps_document_order(sfn: Any) -> None:
    result = value_of(sfn, "$.items[?(@.b == 'y' || @.a == 1)].a", ITEMS)
    assert result == [1, 2]


def test_filter_comparisons_on_numbers_and_strings(sfn: Any) -> None:
    assert value_of(sfn, "$.items[?(@.a >= 2)].a", ITEMS) == [2, 3]
    assert value_of(sfn, "$.items[?(@.b != 'x')].a", ITEMS) == [2]
    assert value_of(sfn, "$.items[?(@.b < 'y')].a", ITEMS) == [1, 3]


def test_filter_status_equals_zero(sfn: Any) -> None:
    # Recorded: base.test_state_pass_regex_json_path_base.
    state_input = {"users": [{"year": 1997, "status": 0}, {"year": 1998, "status": 1}]}
    assert value_of(sfn, "$.users[?(@.status == 0)]", state_input) == [{"year": 1997, "status": 0}]


def test_filter_in_and_nin(sfn: Any) -> None:
    assert value_of(sfn, "$.items[?(@.a in [1, 3])].a", ITEMS) == [1, 3]
    assert value_of(sfn, "$.items[?(@.b nin ['x'])].a", ITEMS) == [2]


def test_filter_existence_and_its_negation(sfn: Any) -> None:
    # Step Functions Local: [?(@.keep)] keeps a false value; [?(!@.session)] keeps a null one.
    assert value_of(sfn, "$.items[?(@.keep)].a", ITEMS) == [1, 2]
    assert value_of(sfn, "$.items[?(!@.session)].a", ITEMS) == [1, 2, 3]


def test_filter_that_matches_nothing_gives_an_empty_array(sfn: Any) -> None:
    assert value_of(sfn, "$.items[?(@.a > 5)]", ITEMS) == []


def test_deep_scan(sfn: Any) -> None:
    # Step Functions Local: $.d..a is [[1, 2]], $.d..a[*] is [1, 2].
    state_input = {"d": {"x": {"a": [1, 2]}}}
    assert value_of(sfn, "$.d..a", state_input) == [[1, 2]]
    assert value_of(sfn, "$.d..a[*]", state_input) == [1, 2]
    assert value_of(sfn, "$..a", ITEMS) == [1, 2, 3]


def test_slices_and_negative_indexes(sfn: Any) -> None:
    assert value_of(sfn, "$.items[-1:].a", ITEMS) == [3]
    assert value_of(sfn, "$.items[:2].a", ITEMS) == [1, 2]
    assert value_of(sfn, "$.items[-1].a", ITEMS) == 3


def test_definite_path_through_an_index_is_one_value(sfn: Any) -> None:
    # Recorded (base.test_json_path_array_access): $.items[0] is the item itself; a name after it too.
    assert value_of(sfn, "$.items[0].b", ITEMS) == "x"
    assert value_of(sfn, "$['items'][1]['b']", ITEMS) == "y"


def test_wildcard_under_a_missing_field_is_empty(sfn: Any) -> None:
    # Recorded: base.test_json_path_array_wildcard_or_slice_with_no_input.
    assert value_of(sfn, "$.item.items[1:5].itemValue", {}) == []


@pytest.mark.parametrize("path", ["$.Jobs.sum()", "$.Jobs.length()"])
def test_path_functions_are_not_found(sfn: Any, path: str) -> None:
    # Recorded on re:Post for sum(): the path "could not be found", the input quoted as compact JSON.
    error, cause = failure_of(sfn, path, {"Jobs": [0, 1, 0]}, field="Jobs")
    assert error == "States.Runtime"
    assert cause.endswith(
        f"The JSONPath '{path}' specified for the field 'Jobs.$' could not be found in the input "
        """'{"Jobs":[0,1,0]}'"""
    )


def test_intrinsic_argument_path_with_a_filter(sfn: Any) -> None:
    assert value_of(sfn, "States.ArrayLength($.items[?(@.b == 'x')])", ITEMS) == 2


# ------------------------------------------------------------------------------------ reading definitions


def test_a_refused_jsonata_definition_leaves_later_jsonpath_definitions_readable(sfn: Any) -> None:
    # moto kept the QueryLanguage scopes of every definition in one list: a definition refused inside a
    # JSONata scope left it behind, and every JSONPath definition after it was refused too.
    jsonata_with_parameters = {
        "QueryLanguage": "JSONata",
        "StartAt": "P",
        "States": {"P": {"Type": "Pass", "Parameters": {"a": 1}, "End": True}},
    }
    role = "arn:aws:iam::123456789012:role/intrinsics"
    with pytest.raises(ClientError) as refused:
        sfn.create_state_machine(name="refused", definition=json.dumps(jsonata_with_parameters), roleArn=role)
    assert refused.value.response["Error"]["Code"] == "InvalidDefinition"

    assert value_of(sfn, "$.x", {"x": 1}) == 1


@pytest.mark.parametrize(
    ("field", "path", "state_input", "words"),
    [
        # Recorded: scenarios.test_catch_states_runtime (a missing step before the last).
        ("OutputPath", "$.no.such.result.path", {}, "Missing property in path $['no']"),
        # Recorded: scenarios.test_invalid_jsonpath (a missing last step).
        ("InputPath", "$.NoSuchInputPath", {}, "No results for path: $['NoSuchInputPath']"),
        ("InputPath", "$.a.b", {"a": {}}, "No results for path: $['a']['b']"),
    ],
)
def test_a_missing_input_or_output_path_says_where_it_stopped(
    sfn: Any, field: str, path: str, state_input: Any, words: str
) -> None:
    state = {"Type": "Pass", field: path, "End": True}
    answer = sfn.test_state(definition=json.dumps(state), input=json.dumps(state_input))
    assert (answer["status"], answer["error"]) == ("FAILED", "States.Runtime")
    assert answer["cause"].endswith(f"Invalid path '{path}' : {words}")
