"""The quota doctor: demand arithmetic on templates, and reading a deployed stack through stubbed clients."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from orderbatch.cli import main
from orderbatch.doctor import (
    AccountConcurrency,
    AwsClients,
    diagnose,
    read_account_concurrency,
    read_stack,
)
from orderbatch.lint.template_model import read_template_file

FIXTURES = Path(__file__).parents[1] / "lint" / "fixtures"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:orders-ValidateFunction-Ab12"
STATE_MACHINE_ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:orders-Batch"


def test_parallel_tasks_in_a_map_multiply_and_a_reservation_caps_one_function() -> None:
    model = read_template_file(FIXTURES / "bad_concurrency.yaml")

    report = diagnose(model, AccountConcurrency(limit=1000, unreserved=995), batches=1)

    (quote_map,) = report.maps
    assert (quote_map.max_concurrency, quote_map.lambda_tasks_per_iteration) == (20, 2)
    assert quote_map.concurrent_invocations == 40
    by_name = {function.function: function for function in report.functions}
    assert by_name["PriceFunction"].over_reservation
    assert by_name["PriceFunction"].concurrent_invocations == 20
    assert report.unreserved_demand == 20  # StockFunction only: PriceFunction has its own reservation
    assert not report.fits
    assert any(
        "PriceFunction is reserved at 5 but 1 batch(es) can run 20" in line for line in report.recommendations
    )


def test_batches_running_at_once_get_a_concrete_max_concurrency() -> None:
    model = read_template_file(FIXTURES / "good_sam_definition_uri.yaml")

    report = diagnose(model, AccountConcurrency(limit=10, unreserved=5), batches=3)

    # MaxConcurrency 4, one unreserved task (Validate) per iteration, 3 batches: 12 > 5.
    assert report.unreserved_demand == 12
    assert not report.fits
    assert any(
        "Set MaxConcurrency of OrdersStateMachine 'Process each order' to 1 (now 4)" in line
        for line in report.recommendations
    )
    assert any("none is possible, as Lambda keeps 100 unreserved" in line for line in report.recommendations)


def test_a_template_that_fits_says_how_many_batches_fit() -> None:
    model = read_template_file(FIXTURES / "good_sam_definition_uri.yaml")

    report = diagnose(model, AccountConcurrency(limit=1000, unreserved=995), batches=1)

    assert report.fits
    # 995 unreserved would take 248 batches, but ChargeFunction's reservation of 5 takes one of 4.
    assert report.recommendations == [
        "Fits: worst case 4 concurrent invocations for 1 batch(es) against 995 unreserved; "
        "up to 1 batches fit at once."
    ]


def test_unbounded_distributed_map_counts_ten_thousand_children() -> None:
    model = read_template_file(FIXTURES / "bad_unbounded_maps.yaml")

    report = diagnose(model, AccountConcurrency(limit=1000, unreserved=1000))

    distributed = next(item for item in report.maps if item.distributed)
    assert distributed.worst_case_iterations == 10_000
    assert report.unreserved_demand == 10_000 + 40  # the two Maps run in parallel branches
    assert any("Distributed Map without MaxConcurrency" in line for line in report.recommendations)


def test_batches_must_be_positive() -> None:
    model = read_template_file(FIXTURES / "good_jsonata.yaml")

    with pytest.raises(ValueError, match="batches"):
        diagnose(model, AccountConcurrency(10, 10), batches=0)


def _stubbed_clients() -> tuple[AwsClients, list[Stubber]]:
    session = boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
    clients = {name: session.client(name) for name in ("cloudformation", "stepfunctions", "lambda")}
    stubbers = {name: Stubber(client) for name, client in clients.items()}
    stubbers["cloudformation"].add_response(
        "list_stack_resources",
        {
            "StackResourceSummaries": [
                _resource("ValidateFunction", "orders-ValidateFunction-Ab12", "AWS::Lambda::Function"),
                _resource("BatchStateMachine", STATE_MACHINE_ARN, "AWS::StepFunctions::StateMachine"),
                _resource("OrdersTable", "orders-table", "AWS::DynamoDB::Table"),
            ]
        },
        {"StackName": "orders"},
    )
    stubbers["lambda"].add_response(
        "get_function_concurrency",
        {"ReservedConcurrentExecutions": 3},
        {"FunctionName": "orders-ValidateFunction-Ab12"},
    )
    definition = {
        "StartAt": "Each order",
        "States": {
            "Each order": {
                "Type": "Map",
                "MaxConcurrency": 6,
                "ItemProcessor": {
                    "StartAt": "Validate",
                    "States": {
                        "Validate": {
                            "Type": "Task",
                            "Resource": "arn:aws:states:::lambda:invoke",
                            "Parameters": {"FunctionName": FUNCTION_ARN, "Payload.$": "$"},
                            "End": True,
                        }
                    },
                },
                "End": True,
            }
        },
    }
    stubbers["stepfunctions"].add_response(
        "describe_state_machine",
        {
            "stateMachineArn": STATE_MACHINE_ARN,
            "name": "orders-Batch",
            "definition": json.dumps(definition),
            "roleArn": "arn:aws:iam::123456789012:role/orders",
            "type": "STANDARD",
            "creationDate": "2025-01-01T00:00:00Z",
        },
        {"stateMachineArn": STATE_MACHINE_ARN},
    )
    stubbers["lambda"].add_response(
        "get_account_settings",
        {"AccountLimit": {"ConcurrentExecutions": 10, "UnreservedConcurrentExecutions": 7}},
        {},
    )
    for stubber in stubbers.values():
        stubber.activate()
    return AwsClients(clients=clients), list(stubbers.values())


def _resource(logical_id: str, physical_id: str, resource_type: str) -> dict[str, object]:
    return {
        "LogicalResourceId": logical_id,
        "PhysicalResourceId": physical_id,
        "ResourceType": resource_type,
        "LastUpdatedTimestamp": "2025-01-01T00:00:00Z",
        "ResourceStatus": "CREATE_COMPLETE",
    }


def test_deployed_stack_maps_real_function_arns_to_reserved_concurrency() -> None:
    clients, stubbers = _stubbed_clients()

    model = read_stack("orders", clients)
    account = read_account_concurrency(clients("lambda"))
    report = diagnose(model, account, batches=1)

    assert account == AccountConcurrency(limit=10, unreserved=7)
    (validate,) = report.functions
    assert (validate.function, validate.physical_name, validate.reserved_concurrency) == (
        "ValidateFunction",
        "orders-ValidateFunction-Ab12",
        3,
    )
    assert validate.concurrent_invocations == 6
    assert validate.over_reservation
    assert not report.fits
    for stubber in stubbers:
        stubber.assert_no_pending_responses()


def test_doctor_command_on_a_template_with_a_given_limit(capsys: pytest.CaptureFixture[str]) -> None:
    template = str(FIXTURES / "good_jsonata.yaml")

    fits = main(["doctor", "--template", template, "--account-concurrency", "10", "--json"])
    report = json.loads(capsys.readouterr().out)
    too_many = main(["doctor", "--template", template, "--account-concurrency", "10", "--batches", "3"])
    text = capsys.readouterr().out

    assert fits == 0
    assert report["unreserved_demand"] == 5
    assert report["maps"][0]["concurrent_invocations"] == 5
    assert too_many == 3
    assert "Unreserved demand 15 of 10: DOES NOT FIT." in text
    assert "Set MaxConcurrency of ScoreStateMachine 'Score each' to 3 (now 5)" in text


def test_doctor_command_reports_an_unreachable_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = main(
        ["doctor", "--template", str(FIXTURES / "good_jsonata.yaml"), "--endpoint", "http://127.0.0.1:9"]
    )

    assert exit_code == 1
    assert "orderbatch doctor:" in capsys.readouterr().err


APP_TEMPLATE = Path(__file__).parents[2] / "template.yaml"


def test_the_planner_gives_makespan_and_429s_and_names_the_template_parameter() -> None:
    # Given the app's template, 2 batches at once on a quota of 10 (MapMaxConcurrency 8: 16 > 10)
    model = read_template_file(APP_TEMPLATE)

    # When the doctor runs with the planner
    report = diagnose(model, AccountConcurrency(limit=10, unreserved=10), batches=2, plan_orders=400)

    # Then the planner simulated MapMaxConcurrency 8 (429s) against 5 (none), and says which parameter to set
    planned = report.plan[0]
    assert "with 2 batch(es) of 400 orders at quota 10" in planned
    now, fitting = planned.split("; MapMaxConcurrency 5: ")
    assert "MapMaxConcurrency 8 (now): makespan" in now
    assert float(now.split(", ")[-2].split(" ")[0]) > 0.1  # 429s per order at 8
    assert ", 0.00 429s per order, 0 failed orders" in fitting
    assert report.plan[1] == (
        "Set the template parameter MapMaxConcurrency to 5 (now 8; it feeds MaxConcurrency of "
        "OrderBatchStateMachine 'Process inline orders' through DefinitionSubstitutions): "
        "sam deploy --parameter-overrides MapMaxConcurrency=5."
        # The same parameter feeds the durable function: 2 x (1 + 5) = 12 does not fit in 10.
        " MapMaxConcurrency also sets durable function DurableOrderBatchFunction's max_concurrency: "
        "at 5 its worst case is 12 of 10 unreserved, which does NOT fit."
    )


def test_without_a_parameter_the_planner_names_the_state_field() -> None:
    # Given a template whose Map's MaxConcurrency is a literal 5, 3 batches on a quota of 10
    model = read_template_file(FIXTURES / "good_jsonata.yaml")

    # When the doctor runs with the planner
    report = diagnose(model, AccountConcurrency(limit=10, unreserved=10), batches=3, plan_orders=200)

    # Then the advice names the Map's field and the value that fits (3 x 3 = 9 of 10)
    assert "Set MaxConcurrency of ScoreStateMachine 'Score each' to 3 (now 5)." in report.plan


def test_the_planner_is_off_unless_asked() -> None:
    model = read_template_file(APP_TEMPLATE)

    report = diagnose(model, AccountConcurrency(limit=10, unreserved=10), batches=2)

    assert report.plan == []


PROJECT_TEMPLATE = Path(__file__).parents[2] / "template.yaml"


def test_the_apps_durable_function_is_judged_beside_its_state_machine() -> None:
    model = read_template_file(PROJECT_TEMPLATE)

    report = diagnose(model, AccountConcurrency(limit=10, unreserved=10), batches=1)

    (durable,) = report.durable
    assert durable.function == "DurableOrderBatchFunction"
    assert (durable.max_concurrency, durable.invokes_in_flight_per_branch) == (8, 1)
    assert (
        durable.concurrency_origin == "environment variable MAP_MAX_CONCURRENCY = !Ref MapMaxConcurrency = 8"
    )
    assert durable.concurrent_invocations_per_execution == 9  # its own invocation + 8 chained invokes
    assert report.unreserved_demand == 8  # the state machine's Map, judged on its own
    assert report.fits
    two_batches = diagnose(model, AccountConcurrency(limit=10, unreserved=10), batches=2)
    assert two_batches.durable[0].unreserved_demand == 18
    assert not two_batches.fits
    assert any(
        "Set max_concurrency of durable function DurableOrderBatchFunction to 4 (now 8" in line
        for line in two_batches.recommendations
    )


def test_durable_demand_from_an_environment_variable_and_over_the_quota() -> None:
    fitting = diagnose(
        read_template_file(FIXTURES / "good_durable_env_concurrency.yaml"), AccountConcurrency(10, 10)
    )
    over = diagnose(read_template_file(FIXTURES / "bad_durable_over_quota.yaml"), AccountConcurrency(10, 10))

    assert [item.unreserved_demand for item in fitting.durable] == [7]
    assert fitting.fits
    assert [item.unreserved_demand for item in over.durable] == [51]
    assert not over.fits
    assert any(
        "max_concurrency of durable function PriceOrdersFunction to 9 (now 50" in line
        for line in over.recommendations
    )


def test_an_unbounded_durable_map_never_fits() -> None:
    report = diagnose(
        read_template_file(FIXTURES / "bad_durable_unbounded_map.yaml"), AccountConcurrency(1000, 1000)
    )

    (durable,) = report.durable
    assert durable.unreserved_demand is None
    assert not report.fits
    assert any(
        "Durable function ShipOrdersFunction: worst case unknown (MapConfig without max_concurrency)" in line
        for line in report.recommendations
    )


def test_doctor_command_prints_the_durable_figure(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["doctor", "--template", str(PROJECT_TEMPLATE), "--account-concurrency", "10", "--plan-orders", "0"]
    )
    text = capsys.readouterr().out

    assert code == 0
    assert "= 9 per execution; unreserved demand 9 of 10: fits." in text
    assert "Both orchestrators running 1 batch(es) at once: 17 of 10." in text


def test_the_planner_says_when_its_parameter_also_sets_a_durable_functions_concurrency() -> None:
    model = read_template_file(PROJECT_TEMPLATE)

    report = diagnose(model, AccountConcurrency(limit=10, unreserved=10), batches=1, plan_orders=200)

    (durable,) = report.durable
    assert durable.concurrency_parameter == "MapMaxConcurrency"
    advice = [line for line in report.plan if "Set the template parameter MapMaxConcurrency to 10" in line]
    assert advice
    assert all(
        "MapMaxConcurrency also sets durable function DurableOrderBatchFunction's max_concurrency: at 10 its "
        "worst case is 11 of 10 unreserved, which does NOT fit." in line
        for line in advice
    )


@pytest.mark.slow  # two doctor runs forecasting 400 simulated batches per Map: about 40 s
def test_under_contention_the_doctor_warns_only_for_the_design_without_the_second_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    from orderbatch.capacity.retriers import without_second_pass
    from orderbatch.project import PROJECT_ROOT

    # The app's template with its definition rewritten to the design before the second pass.
    definition = yaml.safe_load((PROJECT_ROOT / "statemachine" / "order_batch.asl.yaml").read_text())
    (tmp_path / "statemachine").mkdir()
    (tmp_path / "statemachine" / "order_batch.asl.yaml").write_text(
        json.dumps(without_second_pass("OrderBatchStateMachine", definition))
    )
    (tmp_path / "template.yaml").write_text((PROJECT_ROOT / "template.yaml").read_text())
    arguments = ["--account-concurrency", "10", "--contention", "5@0+300"]

    main(["doctor", "--template", str(PROJECT_ROOT / "template.yaml"), *arguments])
    shipped = capsys.readouterr().out
    main(["doctor", "--template", str(tmp_path / "template.yaml"), *arguments])
    old = capsys.readouterr().out

    assert "the second pass ran them again and none failed" in shipped
    assert "the throttle retrier can be spent" not in shipped
    assert "the throttle retrier can be spent" in old
    assert "second pass after the batch (docs/throttling.md)" in old
