"""Nested stacks (AWS::CloudFormation::Stack, AWS::Serverless::Application) deployed as CloudFormation does.

Given a parent that nests one child template twice, passing its table as a parameter, and that calls a
child's function through the child's output, each child must be deployed as a stack of its own (its
functions and state machines named under ``<parent>-<LogicalId>``, running with its template's roles),
the parent must read the children's outputs, and a template only AWS could fetch (S3, HTTPS, the
Serverless Application Repository) must be refused naming the resource, never reported deployed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.stack import TemplateError, load_stack

TEMPLATE = Path(__file__).resolve().parent / "fixtures" / "nested_stack" / "template.yaml"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:{}"


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(LocalCloudConfig(template=TEMPLATE)) as started:
        yield started


def test_each_child_is_a_stack_of_its_own_whose_outputs_the_parent_reads() -> None:
    stack = load_stack(TEMPLATE)

    functions = {function.name: function.environment for function in stack.functions}
    assert functions == {
        "sam-app-Worker-Record": {"LEDGER_TABLE": "sam-app-Ledger", "GREETING": "hello"},
        "sam-app-Reporter-Record": {
            "LEDGER_TABLE": "sam-app-Ledger",
            "GREETING": "report from sam-app",
        },
    }
    machines = {machine.logical_id: machine.name for machine in stack.state_machines}
    assert machines == {
        "Worker/Flow": "sam-app-Worker-Flow",
        "Reporter/Flow": "sam-app-Reporter-Flow",
        "Orchestrate": "sam-app-Orchestrate",
    }
    assert stack.outputs["WorkerMachineArn"].endswith(":stateMachine:sam-app-Worker-Flow")
    call = json.loads(stack.state_machine("Orchestrate").definition)["States"]["Report"]
    assert call["Parameters"]["FunctionName"] == FUNCTION_ARN.format("sam-app-Reporter-Record")
    assert stack.nested_stacks["Worker"].outputs["FunctionName"] == "sam-app-Worker-Record"
    assert stack.not_honoured == []


@pytest.mark.e2e
def test_the_childs_state_machine_runs_its_own_function(cloud: LocalCloud) -> None:
    sfn, dynamodb = cloud.client("stepfunctions"), cloud.client("dynamodb")

    execution = sfn.start_execution(
        stateMachineArn=cloud.stack.outputs["WorkerMachineArn"], input='{"order": "o-1"}'
    )

    assert wait_for_execution(sfn, execution["executionArn"], timeout=30) == "SUCCEEDED"
    output = json.loads(sfn.describe_execution(executionArn=execution["executionArn"])["output"])
    assert output == {"greeting": "hello", "order": "o-1", "by": "sam-app-Worker-Record"}
    item = dynamodb.get_item(TableName=cloud.stack.outputs["LedgerName"], Key={"id": {"S": "o-1"}})
    assert item["Item"]["by"] == {"S": "sam-app-Worker-Record"}


@pytest.mark.e2e
def test_the_parent_calls_a_childs_function_through_its_output(cloud: LocalCloud) -> None:
    sfn = cloud.client("stepfunctions")

    execution = sfn.start_execution(
        stateMachineArn=cloud.stack.outputs["OrchestrateArn"], input='{"order": "o-2"}'
    )

    assert wait_for_execution(sfn, execution["executionArn"], timeout=30) == "SUCCEEDED"
    output = json.loads(sfn.describe_execution(executionArn=execution["executionArn"])["output"])
    assert output == {
        "greeting": "report from sam-app",
        "order": "o-2",
        "by": "sam-app-Reporter-Record",
    }


@pytest.mark.parametrize(
    ("kind", "location", "refusal"),
    [
        (
            "AWS::CloudFormation::Stack",
            "TemplateURL: https://s3.amazonaws.com/bucket/child.yaml",
            r"^Child: TemplateURL https://s3\.amazonaws\.com/bucket/child\.yaml is a remote template, "
            "which AWS would fetch",
        ),
        (
            "AWS::Serverless::Application",
            "Location: s3://bucket/child.yaml",
            r"^Child: Location s3://bucket/child\.yaml is a remote template, which AWS would fetch",
        ),
        (
            "AWS::Serverless::Application",
            "Location: {ApplicationId: 'arn:aws:serverlessrepo:us-east-1:077246666028:applications/hello', "
            "SemanticVersion: 1.0.0}",
            r"^Child: Location is the Serverless Application Repository application "
            r"arn:aws:serverlessrepo:.*hello \(1\.0\.0\), which AWS would fetch",
        ),
        (
            "AWS::CloudFormation::Stack",
            "TemplateURL: missing/template.yaml",
            r"^Child: TemplateURL .*missing/template\.yaml does not exist",
        ),
    ],
    ids=["https", "s3", "serverless-repo", "missing"],
)
def test_a_template_only_aws_could_fetch_is_refused_naming_the_resource(
    tmp_path: Path, kind: str, location: str, refusal: str
) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        f"Resources:\n  Child:\n    Type: {kind}\n    Properties:\n      {location}\n"
    )

    with pytest.raises(TemplateError, match=refusal):
        load_stack(template)


def test_a_parameter_the_child_does_not_declare_is_refused_naming_the_nested_stack(tmp_path: Path) -> None:
    template = tmp_path / "template.yaml"
    worker = TEMPLATE.parent / "worker" / "template.yaml"
    template.write_text(
        "Resources:\n  Child:\n    Type: AWS::CloudFormation::Stack\n    Properties:\n"
        f"      TemplateURL: {worker}\n"
        "      Parameters: {LedgerTable: t, Greeting: g, Colour: blue}\n"
    )

    with pytest.raises(
        TemplateError, match=r"^Child \(nested stack\): parameter override\(s\) Colour not declared"
    ):
        load_stack(template)
