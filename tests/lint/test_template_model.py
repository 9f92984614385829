"""Template reading and ASL arithmetic on in-memory templates, including malformed ones."""

from __future__ import annotations

from typing import Any

import pytest

from orderbatch.lint import build_model, find_problems
from orderbatch.lint.asl import Retrier, definition_demand, lambda_tasks

THROTTLE_RETRY = [
    {
        "ErrorEquals": ["Lambda.TooManyRequestsException"],
        "MaxAttempts": 6,
        "MaxDelaySeconds": 30,
        "JitterStrategy": "FULL",
    }
]


def _template(definition: Any, **properties: Any) -> dict[str, Any]:
    return {
        "Resources": {
            "Fn": {
                "Type": "AWS::Lambda::Function",
                "Properties": {"FunctionName": "orders-fn", "Timeout": 20, "ReservedConcurrentExecutions": 4},
                "Metadata": {"orderbatch": {"idempotent": True}},
            },
            "Machine": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {"Definition": definition, **properties},
            },
        }
    }


def _task(resource: str, **fields: Any) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": resource,
        "TimeoutSeconds": 30,
        "Retry": THROTTLE_RETRY,
        "End": True,
        **fields,
    }


@pytest.mark.parametrize(
    "target",
    [
        {"Fn::GetAtt": ["Fn", "Arn"]},
        {"Fn::GetAtt": "Fn.Arn"},
        {"Ref": "Fn"},
        {"Fn::Sub": "${Fn.Arn}:live"},
        {"Fn::Sub": ["${Target}", {"Target": {"Ref": "Fn"}}]},
        {"Fn::Join": [":", [{"Fn::GetAtt": ["Fn", "Arn"]}, "live"]]},
        "${FunctionArn}",
        "arn:aws:lambda:us-east-1:123456789012:function:orders-fn",
        "orders-fn",
    ],
)
def test_function_name_forms_resolve_to_the_function_resource(target: Any) -> None:
    definition = {
        "StartAt": "Call",
        "States": {"Call": _task("arn:aws:states:::lambda:invoke", Parameters={"FunctionName": target})},
    }
    model = build_model(
        _template(definition, DefinitionSubstitutions={"FunctionArn": {"Fn::GetAtt": ["Fn", "Arn"]}})
    )

    (task,) = lambda_tasks(model.state_machines[0], model.functions)

    assert task.function_id == "Fn"


def test_cloudformation_definition_object_gets_the_function_checks() -> None:
    definition = {"StartAt": "Call", "States": {"Call": _task("${FunctionArn}", TimeoutSeconds=20)}}
    model = build_model(_template(definition, DefinitionSubstitutions={"FunctionArn": {"Ref": "Fn"}}))

    findings = find_problems(model)

    assert [finding.rule_id for finding in findings] == ["E9511"]
    assert findings[0].path == (
        "Resources",
        "Machine",
        "Properties",
        "Definition",
        "States",
        "Call",
        "TimeoutSeconds",
    )


def test_parallel_branches_add_and_maps_multiply() -> None:
    call = _task("${FunctionArn}")
    definition = {
        "StartAt": "Outer",
        "States": {
            "Outer": {
                "Type": "Map",
                "MaxConcurrency": 3,
                "ItemProcessor": {
                    "StartAt": "Both",
                    "States": {
                        "Both": {
                            "Type": "Parallel",
                            "End": True,
                            "Branches": [
                                {"StartAt": "A", "States": {"A": call}},
                                {
                                    "StartAt": "Inner",
                                    "States": {
                                        "Inner": {
                                            "Type": "Map",
                                            "MaxConcurrency": 2,
                                            "Iterator": {"StartAt": "B", "States": {"B": call}},
                                            "End": True,
                                        }
                                    },
                                },
                            ],
                        }
                    },
                },
                "End": True,
            }
        },
    }
    model = build_model(_template(definition, DefinitionSubstitutions={"FunctionArn": {"Ref": "Fn"}}))

    demand = definition_demand(model.state_machines[0], model.functions)
    findings = {finding.rule_id for finding in find_problems(model)}

    assert demand.total == 3 * (1 + 2)
    assert demand.by_function == {"Fn": 9}
    assert findings == {"W9522"}  # 9 > the 4 reserved; the inner Map alone: 3 copies x 2 = 6 > 4 too


def test_retrier_waits_follow_asl_defaults_and_cap() -> None:
    defaults = Retrier(0, ("X",), 1.0, 3, 2.0, None, False)
    capped = Retrier(0, ("X",), 2.0, 6, 2.0, 10.0, True)

    assert defaults.waits() == [1.0, 2.0, 4.0]
    assert capped.waits() == [2.0, 4.0, 8.0, 10.0, 10.0, 10.0]
    assert Retrier(0, ("States.TaskFailed",), 1.0, 3, 2.0, None, False).matches(
        "Lambda.TooManyRequestsException"
    )
    assert not Retrier(0, ("States.TaskFailed",), 1.0, 3, 2.0, None, False).matches("States.Timeout")


@pytest.mark.parametrize(
    "definition",
    [
        {"StartAt": "X", "States": "not a mapping"},
        {"StartAt": "X", "States": {"X": "not a state"}},
        {"StartAt": "X", "States": {"X": {"Type": "Parallel", "Branches": "nope"}}},
        {
            "StartAt": "X",
            "States": {"X": {"Type": "Map", "ItemProcessor": "nope", "MaxConcurrency": "{% 3 %}"}},
        },
        {
            "StartAt": "X",
            "States": {"X": {"Type": "Task", "Resource": {"Fn::GetAtt": ["Fn", "Arn"]}, "Retry": "x"}},
        },
        {
            "QueryLanguage": "JSONata",
            "StartAt": "X",
            "States": {"X": _task("arn:aws:states:::lambda:invoke", Arguments="{% $states.input %}")},
        },
        ["not", "an", "object"],
    ],
)
def test_malformed_definitions_do_not_crash(definition: Any) -> None:
    model = build_model(_template(definition))

    findings = find_problems(model)

    assert all(finding.rule_id.startswith(("E95", "W95")) for finding in findings)


def test_definition_string_with_an_unparseable_body_is_reported() -> None:
    template = _template({})
    template["Resources"]["Machine"]["Properties"] = {"DefinitionString": {"Fn::Sub": "{not json ${X}"}}

    (finding,) = find_problems(build_model(template))

    assert finding.rule_id == "W9550"
    assert "DefinitionString is not valid JSON" in finding.message
