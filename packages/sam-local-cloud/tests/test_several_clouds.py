"""Two local clouds in one process, side by side: each on its own port and account, sharing no state.

moto's backends and the interpreter's hooks are the process's; each cloud owns an account ID, so a
table, an execution, a quota or a function's invocations in one are nowhere in the other, and neither
writes to ``os.environ``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sam_local_cloud import LocalCloud, LocalCloudConfig

pytestmark = pytest.mark.e2e

REPOSITORY = Path(__file__).resolve().parents[3]
TEMPLATE = REPOSITORY / "examples" / "stock-trader" / "template.yaml"
MACHINE = "StockTradingStateMachine"
FUNCTIONS = ("StockCheckerFunction", "StockBuyerFunction", "StockSellerFunction")


def environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name != "PYTEST_CURRENT_TEST"}


@pytest.fixture(scope="module")
def environment_before() -> dict[str, str]:
    return environment()


@pytest.fixture(scope="module")
def two_clouds(environment_before: dict[str, str]) -> Iterator[tuple[LocalCloud, LocalCloud]]:
    with (
        LocalCloud(LocalCloudConfig(template=TEMPLATE, account_concurrency=5)) as first,
        LocalCloud(LocalCloudConfig(template=TEMPLATE, account_concurrency=7)) as second,
    ):
        yield first, second


def machine_arn(cloud: LocalCloud) -> str:
    return cloud.stack.physical_ids[MACHINE]


def trade(cloud: LocalCloud) -> Any:
    started = cloud.client("stepfunctions").start_execution(stateMachineArn=machine_arn(cloud), input="{}")
    return cloud.wait_for_execution(started["executionArn"], timeout=60)


def invocations(cloud: LocalCloud) -> dict[str, int]:
    assert cloud.lambda_service is not None
    functions = cloud.lambda_service.stats(include_timeseries=False)["functions"]
    return {name: counters["invocations"] for name, counters in functions.items() if counters["invocations"]}


def test_each_cloud_has_its_own_port_and_account(two_clouds: tuple[LocalCloud, LocalCloud]) -> None:
    first, second = two_clouds
    assert first.port != second.port
    # 123456789012 and the next, unless a cloud of another test in this process holds one of them.
    assert first.account_id != second.account_id
    assert all(len(cloud.account_id) == 12 and cloud.account_id.isdigit() for cloud in two_clouds)
    for cloud in two_clouds:
        assert cloud.client("sts").get_caller_identity()["Account"] == cloud.account_id
        assert f":{cloud.account_id}:" in machine_arn(cloud)


def test_an_execution_runs_only_in_its_own_cloud(two_clouds: tuple[LocalCloud, LocalCloud]) -> None:
    first, second = two_clouds
    before = invocations(second)

    run = trade(first)

    assert run.status == "SUCCEEDED"
    assert invocations(second) == before
    assert sum(invocations(first).values()) >= 2  # the checker, then the buyer or the seller
    listed_in_second = second.client("stepfunctions").list_executions(stateMachineArn=machine_arn(second))
    assert run.arn not in [e["executionArn"] for e in listed_in_second["executions"]]
    with pytest.raises(ClientError) as unknown:
        second.client("stepfunctions").describe_execution(executionArn=run.arn)
    assert unknown.value.response["Error"]["Code"] == "ExecutionDoesNotExist"


def test_a_table_item_is_only_in_its_own_cloud(two_clouds: tuple[LocalCloud, LocalCloud]) -> None:
    first, second = two_clouds
    table = first.stack.table_name("TransactionTable")
    assert table == second.stack.table_name("TransactionTable")

    first.client("dynamodb").put_item(TableName=table, Item={"Id": {"S": "only-in-the-first"}})

    key = {"Id": {"S": "only-in-the-first"}}
    assert "Item" in first.client("dynamodb").get_item(TableName=table, Key=key)
    assert "Item" not in second.client("dynamodb").get_item(TableName=table, Key=key)


def test_a_quota_is_its_own_clouds(two_clouds: tuple[LocalCloud, LocalCloud]) -> None:
    first, second = two_clouds
    first.set_quota(lambda_concurrency=1)
    try:
        lambda_of = {cloud.account_id: cloud.client("lambda") for cloud in two_clouds}
        limits = {account: c.get_account_settings()["AccountLimit"] for account, c in lambda_of.items()}
        assert limits[first.account_id]["ConcurrentExecutions"] == 1
        assert limits[second.account_id]["ConcurrentExecutions"] == 7
    finally:
        first.set_quota(lambda_concurrency=5)


def test_one_stops_and_the_other_goes_on(environment_before: dict[str, str]) -> None:
    with LocalCloud(LocalCloudConfig(template=TEMPLATE)) as staying:
        with LocalCloud(LocalCloudConfig(template=TEMPLATE)) as leaving:
            assert trade(leaving).status == "SUCCEEDED"
        assert trade(staying).status == "SUCCEEDED"
        assert sum(invocations(staying).values()) >= 2
        # A cloud gives its account back when it stops, and the next one starts it empty.
        with LocalCloud(LocalCloudConfig(template=TEMPLATE)) as after:
            assert after.account_id == leaving.account_id
            listed = after.client("stepfunctions").list_executions(stateMachineArn=machine_arn(after))
            assert listed["executions"] == []


def test_no_cloud_writes_to_the_environment(
    two_clouds: tuple[LocalCloud, LocalCloud], environment_before: dict[str, str]
) -> None:
    assert environment() == environment_before


def test_an_account_held_by_a_running_cloud_is_refused_and_the_running_cloud_goes_on() -> None:
    with LocalCloud(LocalCloudConfig(template=TEMPLATE)) as holder:
        taken = LocalCloudConfig(template=TEMPLATE, account_id=holder.account_id)
        with pytest.raises(ValueError, match=f"account {holder.account_id} belongs to another local cloud"):
            LocalCloud(taken).start()
        assert trade(holder).status == "SUCCEEDED"


def test_clouds_made_but_not_started_hold_no_account() -> None:
    made = [LocalCloud(LocalCloudConfig(template=TEMPLATE)) for _ in range(2)]
    assert made[0].account_id == made[1].account_id  # the account each would get if started now
    with made[0], made[1]:
        assert made[0].account_id != made[1].account_id
        assert f":{made[1].account_id}:" in machine_arn(made[1])  # read again for the account it got
        assert trade(made[1]).status == "SUCCEEDED"


def test_a_start_that_fails_gives_its_account_back(tmp_path: Path) -> None:
    expected = LocalCloud(LocalCloudConfig(template=TEMPLATE)).account_id
    unusable = tmp_path / "mock-config.json"
    unusable.write_text("{not json")
    failing = LocalCloud(LocalCloudConfig(template=TEMPLATE, mock_config=unusable))

    with pytest.raises(Exception, match=r"mock-config\.json"):
        failing.start()

    assert LocalCloud(LocalCloudConfig(template=TEMPLATE)).account_id == expected


def test_an_account_id_that_is_not_twelve_digits_is_refused() -> None:
    with pytest.raises(ValueError, match="an AWS account ID is 12 digits"):
        LocalCloud(LocalCloudConfig(template=TEMPLATE, account_id="12345")).start()
