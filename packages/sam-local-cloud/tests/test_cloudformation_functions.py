"""A plain CloudFormation function (``AWS::Lambda::Function``) in a SAM template runs as SAM's own do.

Its ``Code`` is written in the template (``ZipFile``: CloudFormation writes ``index.py``) or a local folder
(as ``aws cloudformation package`` takes it before uploading); its other properties have SAM's names and
meanings. Code already in Amazon S3 is AWS's to fetch: that function alone is not created, and the rest of
the stack deploys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sam_local_cloud import LocalCloud, LocalCloudConfig, finished_execution
from sam_local_cloud.stack import load_stack

INLINE_SOURCE = """import os


def handler(event, context):
    return {"greeting": os.environ["GREETING"] + ", " + event["name"], "function": context.function_name}
"""
FOLDER_SOURCE = "def lambda_handler(event, context):\n    return {'doubled': event['n'] * 2}\n"


def _template(folder: Path) -> Path:
    (folder / "src").mkdir()
    (folder / "src" / "app.py").write_text(FOLDER_SOURCE)
    role = {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "lambda.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        },
    }
    resources: dict[str, Any] = {
        "FunctionRole": role,
        "Greeter": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Runtime": "python3.12",
                "Handler": "index.handler",
                "Role": {"Fn::GetAtt": ["FunctionRole", "Arn"]},
                "Code": {"ZipFile": INLINE_SOURCE},
                "Timeout": 10,
                "Environment": {"Variables": {"GREETING": "Hello"}},
            },
        },
        "Doubler": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "FunctionName": "doubler",
                "Runtime": "python3.12",
                "Handler": "app.lambda_handler",
                "Role": {"Fn::GetAtt": ["FunctionRole", "Arn"]},
                "Code": "src",
            },
        },
        "FromS3": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Runtime": "python3.12",
                "Handler": "app.handler",
                "Role": {"Fn::GetAtt": ["FunctionRole", "Arn"]},
                "Code": {"S3Bucket": "some-artifacts", "S3Key": "app.zip"},
            },
        },
        "Machine": {
            "Type": "AWS::Serverless::StateMachine",
            "Properties": {
                "Definition": {
                    "StartAt": "Greet",
                    "States": {
                        "Greet": {
                            "Type": "Task",
                            "Resource": "arn:aws:states:::lambda:invoke",
                            "Parameters": {"FunctionName": "${GreeterArn}", "Payload.$": "$"},
                            "OutputPath": "$.Payload",
                            "End": True,
                        }
                    },
                },
                "DefinitionSubstitutions": {"GreeterArn": {"Fn::GetAtt": ["Greeter", "Arn"]}},
                "Policies": [{"LambdaInvokePolicy": {"FunctionName": {"Ref": "Greeter"}}}],
            },
        },
    }
    template = folder / "template.yaml"
    template.write_text(json.dumps({"Transform": "AWS::Serverless-2016-10-31", "Resources": resources}))
    return template


def test_a_cloudformation_function_is_created_from_its_inline_code_or_local_folder(tmp_path: Path) -> None:
    stack = load_stack(_template(tmp_path))

    functions = {spec.name: spec for spec in stack.functions}
    greeter = functions[stack.physical_ids["Greeter"]]
    assert (greeter.handler, greeter.timeout_seconds, dict(greeter.environment)) == (
        "index.handler",
        10,
        {"GREETING": "Hello"},
    )
    assert (greeter.code_dir / "index.py").read_text() == INLINE_SOURCE
    assert functions["doubler"].code_dir == tmp_path / "src"
    assert stack.physical_ids["FromS3"] not in functions
    assert any(line.startswith("FromS3.Code: ") for line in stack.not_honoured)


def test_cloudformation_functions_answer_invokes_and_state_machine_tasks(tmp_path: Path) -> None:
    config = LocalCloudConfig(template=_template(tmp_path), port=0, state_dir=tmp_path / "state")
    with LocalCloud(config) as cloud:
        lambda_client = cloud.client("lambda")
        greeter = cloud.stack.physical_ids["Greeter"]
        answer = lambda_client.invoke(FunctionName=greeter, Payload=json.dumps({"name": "Ada"}).encode())
        assert json.loads(answer["Payload"].read()) == {"greeting": "Hello, Ada", "function": greeter}
        answer = lambda_client.invoke(FunctionName="doubler", Payload=b'{"n": 21}')
        assert json.loads(answer["Payload"].read()) == {"doubled": 42}
        assert lambda_client.get_function(FunctionName="doubler")["Configuration"]["Handler"] == (
            "app.lambda_handler"
        )

        stepfunctions = cloud.client("stepfunctions")
        machine = cloud.stack.state_machine("Machine")
        started = stepfunctions.start_execution(stateMachineArn=machine.arn, input='{"name": "Grace"}')
        finished = finished_execution(stepfunctions, started["executionArn"], timeout=60, poll_seconds=0.1)
        assert (finished.status, finished.output) == (
            "SUCCEEDED",
            {"greeting": "Hello, Grace", "function": greeter},
        )
