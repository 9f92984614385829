"""Each function's environment model: checked when the handler module is imported, its cold start."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from handlers import batches_api, charge_payment, validate_order
from handlers.environment import ConfigurationError, forget_loaded_environments

FUNCTIONS_DIR = Path(__file__).resolve().parents[2] / "functions"


@pytest.fixture
def new_cold_start() -> Iterator[None]:
    forget_loaded_environments()
    yield
    forget_loaded_environments()


@pytest.mark.parametrize(
    ("module", "function", "variable"),
    [
        ("validate_order", "ValidateOrderFunction", "ORDERS_TABLE_NAME"),
        ("reserve_inventory", "ReserveInventoryFunction", "RESERVATIONS_TABLE_NAME"),
        ("charge_payment", "ChargePaymentFunction", "MAX_CHARGE_AMOUNT"),
        ("confirm_order", "ConfirmOrderFunction", "IDEMPOTENCY_TABLE_NAME"),
        ("cancel_order", "CancelOrderFunction", "PAYMENTS_TABLE_NAME"),
        ("summarize_batch", "SummarizeBatchFunction", "RESULTS_BUCKET_NAME"),
        ("batches_api", "BatchesApiFunction", "STATE_MACHINE_ARN"),
    ],
)
def test_a_missing_variable_fails_the_import_naming_it_and_the_function(
    module: str, function: str, variable: str
) -> None:
    environment = {name: value for name, value in os.environ.items() if name != variable}
    environment["PYTHONPATH"] = str(FUNCTIONS_DIR)

    imported = subprocess.run(
        [sys.executable, "-c", f"import handlers.{module}"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert imported.returncode == 1
    assert imported.stderr.strip().splitlines()[-1] == (
        f"handlers.environment.ConfigurationError: {function} cannot start: "
        f"environment variable {variable} is required"
    )


def test_the_same_import_with_every_variable_starts(new_cold_start: None) -> None:
    imported = subprocess.run(
        [sys.executable, "-c", "import handlers.charge_payment"],
        env={**os.environ, "PYTHONPATH": str(FUNCTIONS_DIR)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert (imported.returncode, imported.stderr) == (0, "")


def test_the_idempotency_expiry_has_no_default_in_code(
    monkeypatch: pytest.MonkeyPatch, new_cold_start: None
) -> None:
    monkeypatch.delenv("IDEMPOTENCY_EXPIRY_SECONDS")

    with pytest.raises(ConfigurationError) as refused:
        validate_order.Environment.load()

    assert str(refused.value) == (
        "ValidateOrderFunction cannot start: environment variable IDEMPOTENCY_EXPIRY_SECONDS is required"
    )


def test_malformed_variables_are_each_named(monkeypatch: pytest.MonkeyPatch, new_cold_start: None) -> None:
    monkeypatch.setenv("IDEMPOTENCY_EXPIRY_SECONDS", "30")
    monkeypatch.setenv("PAYMENTS_TABLE_NAME", " ")
    monkeypatch.setenv("MAX_CHARGE_AMOUNT", "plenty")

    with pytest.raises(ConfigurationError) as refused:
        charge_payment.Environment.load()

    message = str(refused.value)
    assert message.startswith("ChargePaymentFunction cannot start: ")
    assert (
        "environment variable IDEMPOTENCY_EXPIRY_SECONDS is invalid (Input should be greater than or"
        in message
    )
    assert (
        "environment variable PAYMENTS_TABLE_NAME is invalid (String should have at least 1 character"
        in message
    )
    assert (
        "environment variable MAX_CHARGE_AMOUNT is invalid (Input should be a valid decimal, got 'plenty')"
        in message
    )


def test_each_function_reads_only_its_own_variables(
    monkeypatch: pytest.MonkeyPatch, new_cold_start: None
) -> None:
    # Variables of other functions are neither required nor read: the API does no idempotency.
    monkeypatch.delenv("IDEMPOTENCY_TABLE_NAME")
    monkeypatch.delenv("MAX_CHARGE_AMOUNT")

    environment = batches_api.Environment.load()

    assert environment.state_machine_arn == os.environ["STATE_MACHINE_ARN"]
    assert not hasattr(environment, "idempotency_table_name")
    assert batches_api.Environment.load() is environment  # read once per execution environment
