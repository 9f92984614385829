"""The local cloud's pytest plugin in a project of its own: the ini file's template, another one by
marker, a quota and a fault plan per test, each undone after its test, and a reset between tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
GREETER = REPOSITORY / "tests" / "compat" / "fixtures" / "zip_code_uri" / "template.yaml"
STOCK_TRADER = REPOSITORY / "examples" / "stock-trader" / "template.yaml"

PROJECT_TESTS = textwrap.dedent(
    f"""
    import json
    from concurrent.futures import ThreadPoolExecutor

    import pytest

    from sam_local_cloud import finished_execution


    def greet(aws_client, sam_stack, name):
        stepfunctions = aws_client("stepfunctions")
        arn = sam_stack.outputs["GreetArn"]
        started = stepfunctions.start_execution(stateMachineArn=arn, input=json.dumps({{"name": name}}))
        return finished_execution(stepfunctions, started["executionArn"], timeout=60)


    def test_the_ini_files_template(aws_client, sam_stack, local_cloud):
        assert greet(aws_client, sam_stack, "ini").output == {{"greeting": "hello, ini"}}
        assert sam_stack.physical_id("Greeter") == "Greeter"


    @pytest.mark.lambda_concurrency(1)
    @pytest.mark.lambda_faults({{"latency": {{"Greeter": 1.0}}}})
    def test_a_quota_and_faults_for_one_test(aws_client):
        lambda_client = aws_client("lambda", retries=False)
        payload = json.dumps({{"name": "x"}}).encode()
        outcomes = []
        with ThreadPoolExecutor(2) as pool:
            calls = [pool.submit(lambda_client.invoke, FunctionName="Greeter", Payload=payload) for _ in "ab"]
            for call in calls:
                try:
                    outcomes.append(call.result()["StatusCode"])
                except lambda_client.exceptions.TooManyRequestsException:
                    outcomes.append(429)
        assert sorted(outcomes) == [200, 429]


    def test_both_are_undone_after_their_test(local_cloud):
        assert local_cloud.lambda_service.accounting.account_limit == 3
        assert not local_cloud.lambda_service.fault_plan.functions


    def test_the_next_test_starts_on_the_stack_as_deployed(aws_client, sam_stack, sam_cloud_pool):
        sfn, arn = aws_client("stepfunctions"), sam_stack.outputs["GreetArn"]
        # The first test's execution went with the reset.
        assert sfn.list_executions(stateMachineArn=arn)["executions"] == []
        assert (sam_cloud_pool.starts, sam_cloud_pool.resets) == (1, 3)


    @pytest.mark.sam_template({str(STOCK_TRADER)!r}, lambda_concurrency=4)
    def test_another_template_by_marker(sam_stack, local_cloud, sam_cloud_pool):
        assert "StockTradingStateMachineArn" in sam_stack.outputs
        assert local_cloud.lambda_service.accounting.account_limit == 4
        assert sam_cloud_pool.starts == 2
    """
)


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_the_plugins_fixtures_and_markers_in_a_project_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nsam_template = {GREETER}\nsam_lambda_concurrency = 3\n")
    (tmp_path / "test_project.py").write_text(PROJECT_TESTS)

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=200,
    )

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "5 passed" in done.stdout
