"""A cloud started without a template, then given one: ``cloud.deploy(template, parameters=...)``.

The shape moto's ``ThreadedMotoServer`` and LocalStack's ``deploy_cfn_template`` users know: start a
cloud, deploy, read the stack's outputs. One stack per cloud; another template gets a cloud of its own.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from sam_local_cloud import DeployedStack, LocalCloud, LocalCloudConfig

pytestmark = pytest.mark.e2e

REPOSITORY = Path(__file__).resolve().parents[3]
STOCK_TRADER = REPOSITORY / "examples" / "stock-trader" / "template.yaml"

GREETER = textwrap.dedent(
    """\
    AWSTemplateFormatVersion: "2010-09-09"
    Transform: AWS::Serverless-2016-10-31
    Parameters:
      Greeting:
        Type: String
        Default: hello
    Resources:
      Greeter:
        Type: AWS::Serverless::Function
        Properties:
          Runtime: python3.12
          Handler: index.handler
          InlineCode: |
            import os
            def handler(event, context):
                return {"said": os.environ["GREETING"] + ", " + event["name"]}
          Environment:
            Variables:
              GREETING: !Ref Greeting
    Outputs:
      GreeterName:
        Value: !Ref Greeter
      Greeting:
        Value: !Sub "${Greeting} from ${AWS::StackName}"
    """
)


@pytest.fixture
def greeter_template(tmp_path: Path) -> Path:
    template = tmp_path / "template.yaml"
    template.write_text(GREETER)
    return template


def test_deploy_after_start_gives_the_stack_with_its_parameters(greeter_template: Path) -> None:
    with LocalCloud(port=0, lambda_concurrency=3, runtime_fallback=True) as cloud:
        stack = cloud.deploy(greeter_template, parameters={"Greeting": "bonjour"})

        assert isinstance(stack, DeployedStack)
        assert stack.name == "sam-app"
        assert stack.outputs["Greeting"] == "bonjour from sam-app"
        function_name = stack.physical_id("Greeter")
        assert stack.outputs["GreeterName"] == function_name
        answer = cloud.client("lambda", retries=False).invoke(
            FunctionName=function_name, Payload=b'{"name": "Ada"}'
        )
        assert json.loads(answer["Payload"].read()) == {"said": "bonjour, Ada"}
        assert cloud.client("lambda").get_account_settings()["AccountLimit"]["ConcurrentExecutions"] == 3
        assert cloud.deployed_stack() == stack


def test_a_deployed_state_machine_runs(tmp_path: Path) -> None:
    with LocalCloud(state_dir=tmp_path) as cloud:
        stack = cloud.deploy(str(STOCK_TRADER))
        started = cloud.client("stepfunctions").start_execution(
            stateMachineArn=stack.outputs["StockTradingStateMachineArn"], input="{}"
        )
        assert cloud.wait_for_execution(started["executionArn"], timeout=60).status == "SUCCEEDED"


def test_a_second_stack_is_refused_with_the_way_to_run_it(greeter_template: Path) -> None:
    with LocalCloud(LocalCloudConfig(template=greeter_template, runtime_fallback=True)) as cloud:
        with pytest.raises(RuntimeError, match="holds the stack sam-app already; one stack per cloud"):
            cloud.deploy(STOCK_TRADER)
        assert cloud.client("lambda").list_functions()["Functions"]  # the first stack still serves


def test_before_its_deploy_a_cloud_says_what_is_missing() -> None:
    cloud = LocalCloud()
    with cloud:
        with pytest.raises(RuntimeError, match=r"call cloud.deploy\(template\) first"):
            cloud.deployed_stack()
        with pytest.raises(RuntimeError, match="not started"):
            _ = cloud.endpoint
    with pytest.raises(RuntimeError, match="stopped"):
        cloud.deploy(STOCK_TRADER)


def test_a_config_and_keywords_together_are_refused() -> None:
    with pytest.raises(TypeError, match="not both"):
        LocalCloud(LocalCloudConfig(), port=0)
    with pytest.raises(TypeError, match="name one quota"):
        LocalCloud(lambda_concurrency=2, account_concurrency=3)


def test_a_client_without_retries_makes_one_attempt_and_with_them_the_standard_mode() -> None:
    with LocalCloud(port=0) as cloud:
        cloud.deploy(STOCK_TRADER)
        assert cloud.client("sts", retries=False).meta.config.retries["total_max_attempts"] == 1
        assert cloud.client("sts", retries=True).meta.config.retries["mode"] == "standard"
        retried = cloud.client("sts", retries={"total_max_attempts": 7})
        assert retried.meta.config.retries["total_max_attempts"] == 7
