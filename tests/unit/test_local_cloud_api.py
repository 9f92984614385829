"""The local cloud's public surface: the names in ``sam_local_cloud.__all__``, cheap to import, and the
pieces its API and pytest plugin stand on (a quota set at run time, the stack's physical IDs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import sam_local_cloud
from sam_local_cloud.lambda_service.accounting import Accounting
from sam_local_cloud.lambda_service.errors import TooManyRequestsError
from sam_local_cloud.pytest_plugin import DeployedStack, LambdaContext
from sam_local_cloud.stack import load_stack

REPOSITORY = Path(__file__).resolve().parents[2]


def test_every_public_name_resolves_and_nothing_else_is_offered() -> None:
    for name in sam_local_cloud.__all__:
        assert getattr(sam_local_cloud, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'LambdaService'"):
        _ = sam_local_cloud.LambdaService  # type: ignore[attr-defined]


def test_importing_the_package_loads_neither_moto_nor_boto3() -> None:
    probe = "import sys, sam_local_cloud; print(sorted({'moto', 'boto3', 'werkzeug'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)

    assert done.stdout.strip() == "[]"


def test_a_quota_set_at_run_time_admits_and_throttles_by_the_new_limit() -> None:
    accounting = Accounting(10)
    accounting.register("Fn", None)
    held = [accounting.acquire("Fn") for _ in range(3)]

    accounting.set_account_limit(3)

    with pytest.raises(TooManyRequestsError):
        accounting.acquire("Fn")
    accounting.release(held.pop(), 1.0, error=False, timed_out=False)
    assert accounting.acquire("Fn").function_name == "Fn"


def test_a_quota_below_the_reserved_concurrency_is_refused() -> None:
    accounting = Accounting(10)
    accounting.register("Reserved", 4)

    with pytest.raises(ValueError, match="at least the 4 reserved"):
        accounting.set_account_limit(3)
    assert accounting.account_limit == 10


def test_the_stack_knows_each_resources_physical_id_as_ref_returns_it() -> None:
    stack = load_stack(REPOSITORY / "tests" / "compat" / "fixtures" / "zip_code_uri" / "template.yaml")

    assert stack.physical_ids["Greet"] == stack.outputs["GreetArn"]
    assert stack.physical_ids["Greet"].startswith("arn:aws:states:us-east-1:")
    assert stack.physical_ids["Greeter"] in {function.name for function in stack.functions}


def test_a_deployed_stack_names_a_missing_resource() -> None:
    stack = DeployedStack("orders", {}, {"Table": "orders-Table-1"})

    assert stack.physical_id("Table") == "orders-Table-1"
    with pytest.raises(KeyError, match="the stack orders has no resource 'Queue'"):
        stack.physical_id("Queue")


def test_the_lambda_context_is_what_powertools_reads() -> None:
    context = LambdaContext(function_name="charge")

    assert context.invoked_function_arn.endswith(":function:charge")
    assert context.get_remaining_time_in_millis() == 30_000
    assert LambdaContext().aws_request_id != LambdaContext().aws_request_id
