import json

import pytest
from sam_local_cloud import finished_execution


def trade(aws_client, sam_stack, count=1):
    stepfunctions = aws_client("stepfunctions")
    arn = sam_stack.outputs["StockTradingStateMachineArn"]
    started = [stepfunctions.start_execution(stateMachineArn=arn, input="{}") for _ in range(count)]
    return [finished_execution(stepfunctions, s["executionArn"], timeout=120) for s in started]


def test_a_trade_is_recorded_in_the_transaction_table(aws_client, sam_stack):
    (run,) = trade(aws_client, sam_stack)
    assert run.status == "SUCCEEDED"
    entered = [e["stateEnteredEventDetails"] for e in run.events("TaskStateEntered")]
    (trade_input,) = [state["input"] for state in entered if state["name"] == "Record Transaction"]
    transaction, table = json.loads(trade_input), sam_stack.physical_id("TransactionTable")
    item = aws_client("dynamodb").get_item(TableName=table, Key={"Id": {"S": transaction["id"]}})["Item"]
    assert (item["Type"]["S"], item["Quantity"]["N"]) == (transaction["type"], transaction["qty"])


@pytest.mark.lambda_concurrency(2)
@pytest.mark.lambda_faults({"latency": {"StockCheckerFunction": 0.5}})
def test_its_retry_absorbs_429s_at_a_quota_of_2(aws_client, sam_stack):
    runs = trade(aws_client, sam_stack, count=3)
    assert [run.status for run in runs] == ["SUCCEEDED"] * 3
    failed = [e["lambdaFunctionFailedEventDetails"] for r in runs for e in r.events("LambdaFunctionFailed")]
    assert "Lambda.TooManyRequestsException" in [failure["error"] for failure in failed]
