"""The template and state machine as shipped: valid for SAM and cfn-lint, throttle-safe by construction."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from handlers.environment import FunctionEnvironment, IdempotencyEnvironment
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud.stack import LocalStack, load_stack

TEMPLATE = PROJECT_ROOT / "template.yaml"
ASL = PROJECT_ROOT / "statemachine" / "order_batch.asl.yaml"
BIN = Path(sys.executable).parent
OFFLINE_SAM = {**os.environ, "SAM_CLI_TELEMETRY": "0"}


@pytest.fixture(scope="module")
def stack() -> LocalStack:
    return load_stack(TEMPLATE)


@pytest.fixture(scope="module")
def definition(stack: LocalStack) -> dict[str, Any]:
    return dict(json.loads(stack.state_machine().definition))


def lambda_tasks(states: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name, state in states.items():
        if state.get("Resource") == "arn:aws:states:::lambda:invoke":
            found.append((f"{path}{name}", state))
        processor = state.get("ItemProcessor")
        if processor:
            found += lambda_tasks(processor["States"], f"{path}{name}/")
    return found


def test_sam_validate_lint_passes_offline() -> None:
    result = subprocess.run(
        [str(BIN / "sam"), "validate", "--lint", "--template-file", str(TEMPLATE)],
        capture_output=True,
        text=True,
        env=OFFLINE_SAM,
        cwd=PROJECT_ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout + result.stderr


def test_cfn_lint_with_the_throttle_safety_rules_finds_nothing() -> None:
    rules = PROJECT_ROOT / "src" / "orderbatch" / "lint" / "rules"
    result = subprocess.run(
        [str(BIN / "cfn-lint"), str(TEMPLATE), "-a", str(rules)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_every_placeholder_of_the_definition_has_a_substitution(stack: LocalStack) -> None:
    placeholders = set(re.findall(r"\$\{(\w+)\}", ASL.read_text()))
    raw = (PROJECT_ROOT / "template.yaml").read_text()
    substitutions = set(
        re.findall(r"^        (\w+): ", raw.split("DefinitionSubstitutions:")[1].split("Tracing:")[0], re.M)
    )
    assert placeholders == substitutions
    assert "arn:aws:lambda" not in ASL.read_text(), "function ARNs must come through DefinitionSubstitutions"


def test_every_lambda_task_retries_throttles_with_capped_jittered_backoff(definition: dict[str, Any]) -> None:
    tasks = lambda_tasks(definition["States"])
    # Five Lambda Tasks in each of five copies of the per-order states (three Maps and two second passes),
    # two summaries and the S3 batch's set-aside.
    assert len(tasks) == 5 * 5 + 3
    for name, task in tasks:
        first = task["Retry"][0]
        assert first["ErrorEquals"] == ["Lambda.TooManyRequestsException"], name
        assert first["JitterStrategy"] == "FULL", name
        assert first["BackoffRate"] > 1, name
        assert first["MaxAttempts"] >= 1, name
        assert first["MaxDelaySeconds"] >= 1, name
        matched = {error for retrier in task["Retry"] for error in retrier["ErrorEquals"]}
        assert {
            "Lambda.ServiceException",
            "Lambda.AWSLambdaException",
            "Lambda.SdkClientException",
        } <= matched
        assert "IdempotencyAlreadyInProgressError" in matched, name


def test_every_task_timeout_outlasts_its_function_and_in_progress_waits_outlast_it_too(
    stack: LocalStack, definition: dict[str, Any]
) -> None:
    timeouts = {
        f"arn:aws:lambda:us-east-1:123456789012:function:{f.name}": f.timeout_seconds for f in stack.functions
    }
    for name, task in lambda_tasks(definition["States"]):
        function_timeout = timeouts[task["Parameters"]["FunctionName"]]
        assert task["TimeoutSeconds"] > function_timeout, name
        in_progress = next(
            r for r in task["Retry"] if r["ErrorEquals"] == ["IdempotencyAlreadyInProgressError"]
        )
        waits = [
            in_progress["IntervalSeconds"] * in_progress["BackoffRate"] ** n
            for n in range(in_progress["MaxAttempts"])
        ]
        assert "JitterStrategy" not in in_progress
        assert sum(waits) > function_timeout, name


def test_conflicts_are_caught_not_retried(definition: dict[str, Any]) -> None:
    for name, task in lambda_tasks(definition["States"]):
        conflict = next(r for r in task["Retry"] if r["ErrorEquals"] == ["IdempotencyValidationError"])
        assert conflict["MaxAttempts"] == 0, name
    validate = definition["States"]["Process inline orders"]["ItemProcessor"]["States"]["Validate order"]
    # The first catcher defers a throttled order to the second pass (tests/template/test_workflow_source.py).
    assert validate["Catch"][1] == {
        "ErrorEquals": ["IdempotencyValidationError"],
        "ResultPath": "$.error",
        "Next": "Report conflicting order",
    }


def handler_environment(handler: str) -> type[FunctionEnvironment]:
    """The Environment model the function's handler module declares (importing it is its cold start)."""
    model: type[FunctionEnvironment] = importlib.import_module(handler.rsplit(".", 1)[0]).Environment
    return model


def test_every_function_is_given_the_variables_its_handler_requires(stack: LocalStack) -> None:
    for function in stack.functions:
        model = handler_environment(function.handler)
        required = {field.alias for field in model.model_fields.values() if field.is_required()}
        assert model.function == function.name
        assert required, function.name
        assert required <= set(function.environment), (
            function.name,
            sorted(required - set(function.environment)),
        )
        # The template's values themselves pass the model, so the deployed function starts.
        model.model_validate(function.environment)


def test_functions_with_idempotency_have_its_configuration(stack: LocalStack) -> None:
    idempotent = [
        f for f in stack.functions if issubclass(handler_environment(f.handler), IdempotencyEnvironment)
    ]
    assert {f.name for f in idempotent} == {
        "ValidateOrderFunction",
        "ReserveInventoryFunction",
        "ChargePaymentFunction",
        "ConfirmOrderFunction",
        "CancelOrderFunction",
        "SummarizeBatchFunction",
    }
    for function in idempotent:
        assert function.environment["IDEMPOTENCY_TABLE_NAME"] == "orderbatch-IdempotencyTable", function.name
        assert int(function.environment["IDEMPOTENCY_EXPIRY_SECONDS"]) >= 60


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("python3.12") is None, reason="sam build for python3.12 needs python3.12 on PATH"
)
def test_sam_build_succeeds(tmp_path: Path) -> None:
    environment = {**OFFLINE_SAM, "PYENV_VERSION": "3.12.1:3.11.7"}
    result = subprocess.run(
        [str(BIN / "sam"), "build", "--template-file", str(TEMPLATE), "--build-dir", str(tmp_path / "build")],
        capture_output=True,
        text=True,
        env=environment,
        cwd=PROJECT_ROOT,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    built = tmp_path / "build" / "ValidateOrderFunction"
    assert (built / "handlers" / "validate_order.py").exists()
    assert (built / "aws_lambda_powertools").is_dir()


def test_the_durable_workflow_has_the_state_machine_retriers_and_concurrency(
    stack: LocalStack, definition: dict[str, Any]
) -> None:
    from handlers.durable_order_batch import Environment as DurableEnvironment

    (durable,) = [f for f in stack.functions if f.handler == "handlers.durable_order_batch.lambda_handler"]
    environment = DurableEnvironment.model_validate(durable.environment)
    # The model's defaults are the template's parameter defaults, so a missing variable changes nothing.
    names_only = {
        name: value for name, value in durable.environment.items() if name.endswith("_FUNCTION_NAME")
    }
    assert DurableEnvironment.model_validate(names_only) == environment
    inline_map = definition["States"]["Process inline orders"]
    assert environment.map_max_concurrency == inline_map["MaxConcurrency"]
    (throttle_retrier, *_) = inline_map["ItemProcessor"]["States"]["Reserve inventory"]["Retry"]
    throttle = environment.retry_policy().throttle
    assert (
        throttle.interval_seconds,
        throttle.backoff_rate,
        throttle.max_delay_seconds,
        throttle.retries,
    ) == (
        throttle_retrier["IntervalSeconds"],
        throttle_retrier["BackoffRate"],
        throttle_retrier["MaxDelaySeconds"],
        throttle_retrier["MaxAttempts"],
    )
    assert throttle.jitter.value == throttle_retrier["JitterStrategy"]
