"""Files a template names, read as CloudFormation and SAM read them: ``AWS::Include``'s content takes the
place of the ``Fn::Transform`` and the intrinsic functions inside it are resolved with the rest of the
template; a ``DefinitionUri`` that names no file is refused naming it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sam_local_cloud.stack import load_stack
from sam_local_cloud.stack.model import TemplateError

TEMPLATE = """\
Transform: AWS::Serverless-2016-10-31
Resources:
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      Type: EXPRESS
      Definition: {StartAt: Done, States: {Done: {Type: Succeed}}}
  Api:
    Type: AWS::Serverless::HttpApi
    Properties:
      DefinitionBody:
        Fn::Transform: {Name: AWS::Include, Parameters: {Location: %s}}
  ApiRole:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Statement: [{Effect: Allow, Principal: {Service: apigateway.amazonaws.com}, Action: sts:AssumeRole}]
"""

OPENAPI = """\
openapi: "3.0.1"
info: {title: sync, version: "1"}
paths:
  /:
    post:
      x-amazon-apigateway-integration:
        integrationSubtype: StepFunctions-StartSyncExecution
        credentials:
          Fn::GetAtt: [ApiRole, Arn]
        requestParameters:
          Input: $request.body
          StateMachineArn:
            Fn::GetAtt: [Machine, Arn]
        payloadFormatVersion: "1.0"
        type: aws_proxy
"""


def _app(tmp_path: Path, location: str = "api.yaml") -> Path:
    (tmp_path / "api.yaml").write_text(OPENAPI)
    template = tmp_path / "template.yaml"
    template.write_text(TEMPLATE % location)
    return template


def test_intrinsics_inside_an_included_openapi_body_are_resolved(tmp_path: Path) -> None:
    stack = load_stack(_app(tmp_path))

    (route,) = stack.service_routes
    assert route.integration["credentials"] == "arn:aws:iam::123456789012:role/sam-app-ApiRole"
    assert route.integration["requestParameters"]["StateMachineArn"] == stack.state_machine("Machine").arn


def test_an_include_of_a_missing_file_or_from_s3_is_refused_naming_its_location(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match=re.escape("AWS::Include Location 'nowhere.yaml': no such file")):
        load_stack(_app(tmp_path, "nowhere.yaml"))
    refused = "AWS::Include Location 's3://bucket/api.yaml': only a file beside"
    with pytest.raises(TemplateError, match=re.escape(refused)):
        load_stack(_app(tmp_path, "s3://bucket/api.yaml"))


def test_a_definition_uri_naming_no_file_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "statemachine").mkdir()
    (tmp_path / "statemachine" / "stateMachine.asl.json").write_text('{"StartAt": "A", "States": {}}')
    template = tmp_path / "template.yaml"
    template.write_text(
        "Transform: AWS::Serverless-2016-10-31\nResources:\n  Machine:\n"
        "    Type: AWS::Serverless::StateMachine\n"
        "    Properties:\n      DefinitionUri: statemachine/StateMachine.asl.json\n"
    )

    refused = "Machine: DefinitionUri 'statemachine/StateMachine.asl.json' does not exist"
    with pytest.raises(TemplateError, match=re.escape(refused)):
        load_stack(template)
