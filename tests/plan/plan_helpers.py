"""Helpers of the planner's tests: idealised settings, a small template built from a few knobs."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orderbatch.lint.template_model import TemplateModel, build_model
from orderbatch.plan import PlanSettings
from orderbatch.project import PROJECT_ROOT

APP_TEMPLATE = PROJECT_ROOT / "template.yaml"
INLINE_MAP = "Process inline orders"
THROTTLE_ERROR = "Lambda.TooManyRequestsException"


def idealised(**fields: Any) -> PlanSettings:
    """Settings with nothing but the quota in the way: fixed durations, no cold start, no step overhead."""
    values: dict[str, Any] = {
        "fixed_durations": True,
        "cold_start_seconds": 0.0,
        "step_overhead_seconds": 0.0,
    }
    values.update(fields)
    return PlanSettings(**values)


def throttle_retrier(
    *,
    interval: float = 1,
    rate: float = 2,
    attempts: int = 3,
    cap: float | None = None,
    jitter: str | None = None,
) -> dict[str, Any]:
    retrier: dict[str, Any] = {
        "ErrorEquals": [THROTTLE_ERROR],
        "IntervalSeconds": interval,
        "BackoffRate": rate,
        "MaxAttempts": attempts,
    }
    if cap is not None:
        retrier["MaxDelaySeconds"] = cap
    if jitter is not None:
        retrier["JitterStrategy"] = jitter
    return retrier


def small_model(
    *,
    tasks: Sequence[str] = ("Work",),
    retry: Sequence[Mapping[str, Any]] = (),
    max_concurrency: int = 10,
    distributed: bool = False,
    compensation: bool = True,
    reserved: Mapping[str, int] | None = None,
    function_timeout: int = 10,
) -> TemplateModel:
    """A SAM template: a Map whose items call ``tasks`` in turn (each its own function ``<Task>Function``),
    every Task with ``retry`` and, with ``compensation``, a Catch to an ``Undo`` task; MaxConcurrency comes
    from the ``MapLimit`` parameter through a DefinitionSubstitution."""
    names = list(tasks)
    states: dict[str, Any] = {}
    for index, name in enumerate(names):
        state: dict[str, Any] = {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": f"${{{name}Arn}}", "Payload.$": "$"},
            "Retry": [dict(item) for item in retry],
        }
        if compensation:
            state["Catch"] = [{"ErrorEquals": ["States.ALL"], "Next": "Undo"}]
        if index + 1 < len(names):
            state["Next"] = names[index + 1]
        else:
            state["End"] = True
        states[name] = state
    functions = list(names)
    if compensation:
        states["Undo"] = {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "${UndoArn}", "Payload.$": "$"},
            "Retry": [dict(item) for item in retry],
            "End": True,
        }
        functions.append("Undo")
    processor: dict[str, Any] = {"StartAt": names[0], "States": states}
    if distributed:
        processor["ProcessorConfig"] = {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    definition = {
        "StartAt": "Each item",
        "States": {
            "Each item": {
                "Type": "Map",
                "ItemProcessor": processor,
                "MaxConcurrency": "${Limit}",
                "End": True,
            }
        },
    }
    resources: dict[str, Any] = {
        f"{name}Function": {
            "Type": "AWS::Serverless::Function",
            "Properties": {"Handler": f"handlers.{name.lower()}.handler", "Timeout": function_timeout},
        }
        for name in functions
    }
    for name, value in (reserved or {}).items():
        resources[name]["Properties"]["ReservedConcurrentExecutions"] = value
    resources["Machine"] = {
        "Type": "AWS::Serverless::StateMachine",
        "Properties": {
            "Definition": json.loads(json.dumps(definition)),
            "DefinitionSubstitutions": {
                "Limit": {"Ref": "MapLimit"},
                **{f"{name}Arn": {"Fn::GetAtt": [f"{name}Function", "Arn"]} for name in functions},
            },
        },
    }
    template = {
        "Transform": "AWS::Serverless-2016-10-31",
        "Parameters": {"MapLimit": {"Type": "Number", "Default": max_concurrency}},
        "Globals": {"Function": {"Runtime": "python3.12", "MemorySize": 1024}},
        "Resources": resources,
    }
    return build_model(template, Path("small.yaml"))


def app_template_without_second_pass(directory: Path) -> Path:
    """The app's template with its definition rewritten to the design before the second pass, in
    ``directory`` (the definition file beside it, as the template names it)."""
    import yaml

    from orderbatch.capacity.retriers import without_second_pass

    definition_uri = "statemachine/order_batch.asl.yaml"
    definition = yaml.safe_load((PROJECT_ROOT / definition_uri).read_text())
    target = directory / definition_uri
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(without_second_pass("OrderBatchStateMachine", definition)))
    template = directory / "template.yaml"
    template.write_text(APP_TEMPLATE.read_text())
    return template
