"""Bad requests to the local cloud's AWS protocols get AWS's answers, as boto3 and raw HTTP see them."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from orderbatch.faults.protocol_fuzz import FUZZ_TEMPLATE
from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud, LocalCloudConfig

pytestmark = pytest.mark.e2e
NO_VALIDATION = {"parameter_validation": False, "retries": {"total_max_attempts": 1}}


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(LocalCloudConfig(template=FUZZ_TEMPLATE, runtime_fallback=True)) as running:
        yield running


@pytest.fixture(scope="module")
def table(cloud: LocalCloud) -> str:
    return cloud.stack.tables[0].name


def raw(cloud: LocalCloud, target: str, body: bytes, service: str = "dynamodb") -> tuple[int, dict[str, Any]]:
    """A signed JSON-protocol request with exactly ``body``: the status and the decoded error document."""
    request = AWSRequest(
        method="POST",
        url=f"{cloud.endpoint}/",
        data=body,
        headers={"X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.0"},
    )
    credentials = Credentials(
        DUMMY_CREDENTIALS["aws_access_key_id"], DUMMY_CREDENTIALS["aws_secret_access_key"]
    )
    SigV4Auth(credentials, service, cloud.stack.region).add_auth(request)
    headers = dict(request.headers.items())
    prepared = urllib.request.Request(f"{cloud.endpoint}/", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(prepared, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def refused(call: Any, **params: Any) -> dict[str, Any]:
    with pytest.raises(ClientError) as caught:
        call(**params)
    return dict(caught.value.response)


@pytest.mark.parametrize(
    "body",
    [b'{"TableName": ', b'{"TableName": "\xff\xfe"}', b"[" * 100_000 + b"]" * 100_000, b"[1, 2]"],
    ids=["cut-short", "not-utf8", "nested-100000-deep", "not-an-object"],
)
def test_a_body_that_is_not_a_json_object_is_a_serialization_exception(
    cloud: LocalCloud, body: bytes
) -> None:
    status, error = raw(cloud, "DynamoDB_20120810.GetItem", body)

    assert status == 400
    assert error["__type"].endswith("#SerializationException")


def test_a_target_naming_no_operation_is_an_unknown_operation(cloud: LocalCloud) -> None:
    status, error = raw(cloud, "DynamoDB_20120810.GetEverything", b"{}")

    assert status == 400
    assert error["__type"].endswith("#UnknownOperationException")


def test_a_value_of_the_wrong_json_type_is_a_serialization_exception(cloud: LocalCloud) -> None:
    status, error = raw(cloud, "DynamoDB_20120810.DescribeTable", b'{"TableName": 12}')

    assert status == 400
    assert error["__type"].endswith("#SerializationException")
    assert error["message"] == "NUMBER_VALUE can not be converted to String"


def test_missing_members_and_values_out_of_range_are_listed_in_corals_words(
    cloud: LocalCloud, table: str
) -> None:
    dynamodb = cloud.client("dynamodb", **NO_VALIDATION)

    error = refused(dynamodb.query, TableName="", Limit=0, Select="EVERYTHING")

    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Code"] == "ValidationException"
    assert error["Error"]["Message"] == (
        "3 validation errors detected: "
        "Value '' at 'tableName' failed to satisfy constraint: Member must have length greater than or "
        "equal to 1; "
        "Value 0 at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1; "
        "Value 'EVERYTHING' at 'select' failed to satisfy constraint: Member must satisfy enum value set: "
        "[ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES, SPECIFIC_ATTRIBUTES, COUNT]"
    )
    missing = refused(dynamodb.get_item, TableName=table)
    assert missing["Error"]["Message"] == (
        "1 validation error detected: "
        "Value null at 'key' failed to satisfy constraint: Member must not be null"
    )


def test_an_arn_member_holding_no_arn_gets_the_operations_invalid_arn(cloud: LocalCloud) -> None:
    sfn = cloud.client("stepfunctions", **NO_VALIDATION)

    error = refused(sfn.describe_state_machine_alias, stateMachineAliasArn="0")

    assert error["Error"]["Code"] == "InvalidArn"
    assert error["Error"]["Message"] == "Invalid Arn: '0'"


def test_a_query_protocol_request_without_a_required_member_is_a_validation_error(cloud: LocalCloud) -> None:
    iam = cloud.client("iam", **NO_VALIDATION)

    error = refused(iam.get_role)

    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Code"] == "ValidationError"
    assert (
        "Value null at 'roleName' failed to satisfy constraint: Member must not be null"
        in error["Error"]["Message"]
    )


def test_values_echoed_into_xml_answers_leave_them_readable(cloud: LocalCloud) -> None:
    iam = cloud.client("iam", **NO_VALIDATION)

    error = refused(iam.get_policy, PolicyArn="arn:aws:iam::123456789012:policy/a\x02b")

    assert error["Error"]["Code"] in ("NoSuchEntity", "ValidationError")


def test_an_s3_xml_body_that_does_not_parse_is_malformed_xml(cloud: LocalCloud) -> None:
    s3 = cloud.client("s3", **NO_VALIDATION)
    bucket = next(iter(cloud.stack.buckets.values()))

    def spoil(request: Any, **_: Any) -> None:
        request.data = b"<Tagging><TagSet>"
        del request.headers["Content-Length"]
        request.headers["Content-Length"] = str(len(request.data))

    s3.meta.events.register("before-sign.s3.PutBucketTagging", spoil)
    error = refused(s3.put_bucket_tagging, Bucket=bucket, Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})

    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Code"] == "MalformedXML"


def test_an_error_carries_the_status_aws_documents_for_its_code(cloud: LocalCloud) -> None:
    # moto raises InvalidBucketState with 400; S3's list of error codes gives it 409 Conflict.
    s3 = cloud.client("s3", **NO_VALIDATION)
    bucket = next(iter(cloud.stack.buckets.values()))

    error = refused(
        s3.put_object_lock_configuration,
        Bucket=bucket,
        ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"},
    )

    assert error["Error"]["Code"] == "InvalidBucketState"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 409


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (b"not json", "Policies must be valid JSON and the first byte must be '{'"),
        (b'{"Version": "2012-10-17", "Statement": [', "This policy contains invalid Json"),
        (b'{"Statement": "\xc3"}', "This policy contains invalid Json"),
    ],
    ids=["first-byte", "cut-short", "cut-utf8"],
)
def test_a_bucket_policy_that_is_not_json_is_malformed_and_not_stored(
    cloud: LocalCloud, policy: bytes, message: str
) -> None:
    s3 = cloud.client("s3", **NO_VALIDATION)
    bucket = next(iter(cloud.stack.buckets.values()))

    def send_as_is(request: Any, **_: Any) -> None:
        request.data = policy
        del request.headers["Content-Length"]
        request.headers["Content-Length"] = str(len(request.data))

    s3.meta.events.register("before-sign.s3.PutBucketPolicy", send_as_is)
    error = refused(s3.put_bucket_policy, Bucket=bucket, Policy="{}")

    assert (error["ResponseMetadata"]["HTTPStatusCode"], error["Error"]["Code"]) == (400, "MalformedPolicy")
    assert error["Error"]["Message"] == message
    # Nothing was stored: the bucket has no policy an SDK could not decode.
    assert refused(s3.get_bucket_policy, Bucket=bucket)["Error"]["Code"] == "NoSuchBucketPolicy"


def test_an_operation_moto_lacks_is_said_plainly_not_as_a_server_error(cloud: LocalCloud) -> None:
    dynamodb = cloud.client("dynamodb", **NO_VALIDATION)

    error = refused(dynamodb.describe_kinesis_streaming_destination, TableName=cloud.stack.tables[0].name)

    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Code"] == "UnsupportedOperationException"
    assert (
        error["Error"]["Message"]
        == "The local cloud does not implement DynamoDB DescribeKinesisStreamingDestination."
    )


def test_what_the_sdk_sends_is_still_served_after_the_checks(cloud: LocalCloud, table: str) -> None:
    dynamodb = cloud.client("dynamodb")
    item = {"pk": {"S": "order-1"}, "sk": {"S": "v1"}, "blob": {"B": b"\x00\x01"}, "n": {"N": "1.5"}}

    dynamodb.put_item(TableName=table, Item=item, ConditionExpression="attribute_not_exists(pk)")
    answer = dynamodb.get_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]}, ConsistentRead=True)

    assert answer["Item"] == item
    lambda_client = cloud.client("lambda", read_timeout=60)
    invoked = lambda_client.invoke(
        FunctionName=cloud.stack.functions[0].name, Payload=b'{"a": [1, {"b": 2}]}'
    )
    assert json.loads(invoked["Payload"].read()) == {"a": [1, {"b": 2}]}


def test_a_lambda_payload_nested_past_any_parser_is_invalid_request_content(cloud: LocalCloud) -> None:
    lambda_client = cloud.client("lambda", **NO_VALIDATION)

    error = refused(
        lambda_client.invoke,
        FunctionName=cloud.stack.functions[0].name,
        Payload=b"[" * 100_000 + b"]" * 100_000,
    )

    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Code"] == "InvalidRequestContentException"


def test_clients_built_with_retries_see_no_retried_answers(cloud: LocalCloud) -> None:
    # A 400 is final: the client made one attempt for each refusal above, none of them a retried 5xx.
    dynamodb = cloud.client(
        "dynamodb", parameter_validation=False, retries={"max_attempts": 3, "mode": "standard"}
    )

    error = refused(dynamodb.get_item, TableName="")

    assert error["ResponseMetadata"]["RetryAttempts"] == 0
    assert error["Error"]["Code"] == "ValidationException"


def test_a_durable_api_body_nested_past_any_parser_is_an_invalid_parameter(cloud: LocalCloud) -> None:
    lambda_client = cloud.client("lambda", **NO_VALIDATION)

    def nest(request: Any, **_: Any) -> None:
        request.data = b"[" * 100_000 + b"]" * 100_000
        del request.headers["Content-Length"]
        request.headers["Content-Length"] = str(len(request.data))

    lambda_client.meta.events.register("before-sign.lambda.SendDurableExecutionCallbackFailure", nest)
    error = refused(lambda_client.send_durable_execution_callback_failure, CallbackId="c", Error={})

    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Code"] == "InvalidParameterValueException"
