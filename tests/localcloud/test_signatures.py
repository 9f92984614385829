"""SigV4 signatures checked as AWS checks them (docs/iam.md, "Signatures").

The verifier alone first (requests signed by botocore, received as WSGI environs), then end to end: boto3
against a local cloud on the IAM probe template, each service answering a bad signature in its own shape.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from werkzeug.test import EnvironBuilder

from orderbatch.commands.local import exposure_warning
from orderbatch.project import PROJECT_ROOT
from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud, LocalCloudConfig
from sam_local_cloud.docker_api.server import DockerApiServer
from sam_local_cloud.iam import signatures as signatures_module
from sam_local_cloud.iam.signatures import (
    S3_SIGNATURE_MISMATCH,
    SIGNATURE_MISMATCH,
    UNKNOWN_KEY,
    SignatureVerifier,
)

# The probe template is the local cloud's own (its IAM resolution tests use it too).
PROBE_TEMPLATE = PROJECT_ROOT / "packages" / "sam-local-cloud" / "tests" / "iam_fixture" / "template.yaml"
REGION = "us-east-1"
HOST = "127.0.0.1:4566"
KEYS = {"testing": "testing"}
BUCKET = "orderbatch-probebucket"


def received(request: AWSRequest) -> dict[str, Any]:
    """The WSGI environ a server builds for the request botocore sent."""
    parts = urlsplit(str(request.url))
    body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
    return EnvironBuilder(
        method=str(request.method),
        base_url=f"{parts.scheme}://{parts.netloc}",
        path=parts.path,
        query_string=parts.query,
        headers=list(request.headers.items()),
        data=body,
    ).get_environ()


def signed(
    url: str, *, service: str, method: str = "GET", body: bytes = b"", secret: str = "testing", **headers: str
) -> AWSRequest:
    request = AWSRequest(method=method, url=url, data=body, headers=headers)
    signer = S3SigV4Auth if service == "s3" else SigV4Auth
    signer(Credentials("testing", secret), service, REGION).add_auth(request)
    return request


# ---------------------------------------------------------------------------------------------- verifier


def test_a_query_with_repeated_keys_and_spaces_and_a_lambda_path_encoded_twice_verify() -> None:
    verifier = SignatureVerifier(KEYS.get)
    url = f"http://{HOST}/2015-03-31/functions/orders%3Aprod/invocations?b=2&a=x%20y&a=1&empty="
    request = signed(url, service="lambda", method="POST", body=b'{"order": 1}')

    assert verifier.check(received(request)) is None


def test_s3_paths_with_spaces_and_unicode_are_signed_as_sent_not_encoded_again() -> None:
    verifier = SignatureVerifier(KEYS.get)
    request = signed(f"http://{HOST}/{BUCKET}/my%20key/%C3%A9t%C3%A9%2Bplus.csv", service="s3", method="PUT")

    assert verifier.check(received(request)) is None


def test_a_wrong_secret_is_a_mismatch_with_s3s_debugging_details() -> None:
    verifier = SignatureVerifier(KEYS.get)
    request = signed(f"http://{HOST}/{BUCKET}/key", service="s3", secret="wrong")

    refusal = verifier.check(received(request))

    assert refusal is not None
    assert (refusal.reason, refusal.message) == ("mismatch", S3_SIGNATURE_MISMATCH)
    details = dict(refusal.details)
    assert details["AWSAccessKeyId"] == "testing"
    assert details["CanonicalRequest"].startswith(f"GET\n/{BUCKET}/key\n\nhost:{HOST}\n")


def test_a_tampered_body_or_query_no_longer_matches() -> None:
    verifier = SignatureVerifier(KEYS.get)
    request = signed(f"http://{HOST}/?a=1", service="dynamodb", method="POST", body=b'{"TableName": "t"}')
    tampered_body = {**received(request), "wsgi.input": io.BytesIO(b'{"TableName": "u"}')}
    tampered_query = {**received(request), "QUERY_STRING": "a=2"}

    assert verifier.check(received(request)) is None
    assert [
        getattr(verifier.check(environ), "reason", None) for environ in (tampered_body, tampered_query)
    ] == [
        "mismatch",
        "mismatch",
    ]


SHAPES = {
    "dynamodb json": (
        f"http://{HOST}/",
        "dynamodb",
        "POST",
        b'{"TableName": "t", "Key": {"k": {"S": "\\u00e9"}}}',
    ),
    "lambda rest path": (
        f"http://{HOST}/2015-03-31/functions/orders%3Aprod/invocations?Qualifier=2",
        "lambda",
        "POST",
        b"{}",
    ),
    "query with spaces": (f"http://{HOST}/?b=2&a=x%20y&a=1&empty=", "sqs", "POST", b"Action=ListQueues"),
    "s3 key as sent": (
        f"http://{HOST}/{BUCKET}/my%20key/%C3%A9t%C3%A9%2Bplus.csv?uploads",
        "s3",
        "PUT",
        b"data",
    ),
    "dots in a path": (f"http://{HOST}/a/./b/../c", "execute-api", "GET", b""),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_every_request_shape_signed_right_verifies_and_a_tampered_header_does_not(shape: str) -> None:
    url, service, method, body = SHAPES[shape]
    verifier = SignatureVerifier(KEYS.get)
    request = signed(url, service=service, method=method, body=body, **{"X-Amz-Meta-Note": "  two   spaces "})
    tampered = {**received(request), "HTTP_X_AMZ_META_NOTE": "two spaces, changed"}

    assert verifier.check(received(request)) is None
    refusal = verifier.check(tampered)
    assert refusal is not None
    assert refusal.reason == "mismatch"


@pytest.mark.parametrize("shape", [shape for shape in SHAPES if SHAPES[shape][1] != "s3"])
def test_the_plain_request_shortcut_computes_botocores_signature(shape: str) -> None:
    url, service, method, body = SHAPES[shape]
    request = signed(
        url,
        service=service,
        method=method,
        body=body,
        **{"X-Amz-Meta-Note": "  two   spaces ", "X-Note": "é"},
    )
    environ = received(request)
    authorization = environ["HTTP_AUTHORIZATION"]
    verifier = SignatureVerifier(KEYS.get)
    long_way = mock.patch.object(signatures_module, "_has_plain_form", return_value=False)

    signed_request = signatures_module._signed_by(environ)
    assert signed_request is not None
    assert signatures_module._has_plain_form(signed_request)
    shortcut = signatures_module._plain_signature(environ, signed_request, "testing", verifier.signing_key)
    assert shortcut == authorization.rpartition("Signature=")[2]
    # Whatever the shortcut decides, a request the long way refuses is refused, and the other way round.
    tampered = {**received(request), "HTTP_X_AMZ_META_NOTE": "changed"}
    with long_way:
        expected = [getattr(verifier.check(env), "reason", None) for env in (received(request), tampered)]
    assert [getattr(verifier.check(env), "reason", None) for env in (received(request), tampered)] == expected
    assert expected == [None, "mismatch"]


def test_signed_headers_out_of_the_specifications_order_take_the_long_way() -> None:
    request = signed(f"http://{HOST}/", service="dynamodb", method="POST", body=b"{}")
    environ = received(request)
    in_order = signatures_module._signed_by(environ)
    assert in_order is not None
    reordered = dataclasses.replace(in_order, signed_headers=tuple(reversed(in_order.signed_headers)))
    upper = dataclasses.replace(
        in_order, signed_headers=tuple(name.title() for name in in_order.signed_headers)
    )
    presigned = dataclasses.replace(in_order, presigned=True)

    assert signatures_module._has_plain_form(in_order)
    assert not any(signatures_module._has_plain_form(shape) for shape in (reordered, upper, presigned))


def test_chunked_and_unsigned_s3_uploads_check_the_seed_signature_only() -> None:
    verifier = SignatureVerifier(KEYS.get)
    chunks = b"5;chunk-signature=" + b"0" * 64 + b"\r\nhello\r\n0;chunk-signature=" + b"0" * 64 + b"\r\n\r\n"
    for content_hash in ("STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "UNSIGNED-PAYLOAD"):
        for secret, expected in (("testing", None), ("wrong", "mismatch")):
            request = AWSRequest(
                method="PUT",
                url=f"http://{HOST}/{BUCKET}/chunked",
                data=chunks,
                headers={"X-Amz-Content-SHA256": content_hash, "Content-Encoding": "aws-chunked"},
            )
            # Signed with the header as given: S3SigV4Auth would replace it with the body's hash.
            SigV4Auth(Credentials("testing", secret), "s3", REGION).add_auth(request)
            refusal = verifier.check(received(request))
            assert (refusal.reason if refusal else None) == expected, (content_hash, secret)


def test_an_unknown_key_is_refused_with_the_local_hint_and_the_body_is_left_for_the_service() -> None:
    verifier = SignatureVerifier(KEYS.get, unknown_key_hint="sign with testing")
    request = AWSRequest(method="POST", url=f"http://{HOST}/", data=b"{}", headers={})
    SigV4Auth(Credentials("AKIANOTISSUED", "x"), "dynamodb", REGION).add_auth(request)
    environ = received(request)

    refusal = verifier.check(environ)

    assert refusal is not None
    assert (refusal.reason, refusal.message) == ("unknown-key", f"{UNKNOWN_KEY} (sign with testing)")
    assert environ["wsgi.input"].read() == b"{}"


def test_the_signing_key_is_derived_once_per_secret_day_region_and_service() -> None:
    verifier = SignatureVerifier(KEYS.get)
    for _ in range(3):
        assert verifier.check(received(signed(f"http://{HOST}/", service="dynamodb", method="POST"))) is None

    assert verifier.signing_key.cache_info().misses == 1
    assert verifier.signing_key.cache_info().hits == 2


def test_requests_too_far_from_now_are_refused_with_each_services_allowance() -> None:
    twenty_minutes_ago = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=20)
    ten_minutes_ago = twenty_minutes_ago + dt.timedelta(minutes=10)
    verifier = SignatureVerifier(KEYS.get)

    def refusal_at(when: dt.datetime, service: str) -> Any:
        with mock.patch("botocore.auth.get_current_datetime", return_value=when):
            request = signed(f"http://{HOST}/{BUCKET}", service=service)
        return verifier.check(received(request))

    assert refusal_at(ten_minutes_ago, "s3") is None  # S3 allows 15 minutes
    assert refusal_at(twenty_minutes_ago, "s3").reason == "skewed"
    expired = refusal_at(ten_minutes_ago, "dynamodb")
    assert expired.reason == "skewed"
    assert expired.message.startswith(
        f"Signature expired: {ten_minutes_ago:%Y%m%dT%H%M%SZ} is now earlier than"
    )
    assert expired.message.endswith(" - 5 min.)")


# ---------------------------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def signed_cloud(request: pytest.FixtureRequest) -> Iterator[LocalCloud]:
    """One cloud at a time (moto's state is per process): with signatures checked, or (param False) not."""
    cloud = LocalCloud(LocalCloudConfig(template=PROBE_TEMPLATE, verify_signatures=request.param)).start()
    try:
        yield cloud
    finally:
        cloud.stop()


def client(cloud: LocalCloud, service: str, *, key: str = "testing", secret: str = "testing") -> Any:
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=cloud.endpoint,
        region_name=REGION,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )


# A read-only call per service: (service, method, arguments).
CALLS = [
    ("dynamodb", "list_tables", {}),
    ("stepfunctions", "list_state_machines", {}),
    ("lambda", "list_functions", {}),
    ("s3", "list_objects_v2", {"Bucket": BUCKET}),
    ("sqs", "list_queues", {}),
    ("sns", "list_topics", {}),
]


def refused(service_client: Any, method: str, arguments: dict[str, Any]) -> tuple[str, int, str]:
    with pytest.raises(ClientError) as raised:
        getattr(service_client, method)(**arguments)
    error = raised.value.response
    return error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"], error["Error"]["Message"]


@pytest.mark.parametrize("signed_cloud", [True], indirect=True)
def test_header_values_with_non_ascii_text_verify_as_the_sdk_signed_them(signed_cloud: LocalCloud) -> None:
    # botocore signs the text and sends it UTF-8 encoded; WSGI hands it over decoded as latin-1.
    s3 = client(signed_cloud, "s3")

    s3.put_object(Bucket=BUCKET, Key="café", Body=b"x", ContentDisposition="attachment; filename=ré.txt")

    head = s3.head_object(Bucket=BUCKET, Key="café")
    assert head["ResponseMetadata"]["HTTPStatusCode"] == 200


@pytest.mark.parametrize("signed_cloud", [True], indirect=True)
def test_a_wrong_secret_gets_each_services_code_and_status(signed_cloud: LocalCloud) -> None:
    answers = {
        service: refused(client(signed_cloud, service, secret="wrong"), method, arguments)
        for service, method, arguments in CALLS
    }

    assert {service: answer[:2] for service, answer in answers.items()} == {
        "dynamodb": ("InvalidSignatureException", 400),
        "stepfunctions": ("InvalidSignatureException", 400),
        "lambda": ("InvalidSignatureException", 403),
        "s3": ("SignatureDoesNotMatch", 403),
        "sqs": ("SignatureDoesNotMatch", 403),
        "sns": ("SignatureDoesNotMatch", 403),
    }
    assert answers["dynamodb"][2] == SIGNATURE_MISMATCH
    assert answers["s3"][2] == S3_SIGNATURE_MISMATCH


@pytest.mark.parametrize("signed_cloud", [True], indirect=True)
def test_a_key_the_cloud_did_not_issue_gets_each_services_code_and_the_credentials_to_use(
    signed_cloud: LocalCloud,
) -> None:
    answers = {
        service: refused(client(signed_cloud, service, key="AKIANOTISSUED"), method, arguments)
        for service, method, arguments in CALLS
    }

    assert {service: answer[:2] for service, answer in answers.items()} == {
        "dynamodb": ("UnrecognizedClientException", 400),
        "stepfunctions": ("UnrecognizedClientException", 400),
        "lambda": ("UnrecognizedClientException", 403),
        "s3": ("InvalidAccessKeyId", 403),
        "sqs": ("InvalidClientTokenId", 403),
        "sns": ("InvalidClientTokenId", 403),
    }
    assert answers["dynamodb"][2].startswith(f"{UNKNOWN_KEY} (local cloud: ")
    assert "AWS_ACCESS_KEY_ID=testing" in answers["dynamodb"][2]
    assert answers["s3"][2].startswith("The AWS Access Key Id you provided does not exist in our records.")


@pytest.mark.parametrize("signed_cloud", [True], indirect=True)
def test_functions_sign_with_their_keys_and_the_data_plane_checks_direct_callers_too(
    signed_cloud: LocalCloud,
) -> None:
    # ReaderFunction reads DynamoDB at the data plane's own endpoint and S3 at the cloud's, as its role.
    response = signed_cloud.client("lambda").invoke(FunctionName="ReaderFunction", Payload=b"{}")
    outcome = json.loads(response["Payload"].read())
    assert outcome["dynamodb:GetItem"] == {"code": None}
    assert outcome["s3:ListBucket"] == {"code": None}

    assert signed_cloud.data_plane is not None
    direct = boto3.client(
        "dynamodb",
        endpoint_url=signed_cloud.data_plane.endpoint,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="wrong",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )
    assert refused(direct, "list_tables", {})[:2] == ("InvalidSignatureException", 400)


def send(request: AWSRequest) -> tuple[int, bytes]:
    prepared = request.prepare()
    body = prepared.body if isinstance(prepared.body, bytes) else None
    sent = urllib.request.Request(
        prepared.url,
        data=body or None,
        headers=dict(prepared.headers.items()),
        method=prepared.method,
    )
    try:
        with urllib.request.urlopen(sent, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.mark.parametrize("signed_cloud", [True], indirect=True)
def test_a_clock_twenty_minutes_behind_is_too_skewed_for_s3_and_expired_for_dynamodb(
    signed_cloud: LocalCloud,
) -> None:
    twenty_minutes_ago = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=20)
    with mock.patch("botocore.auth.get_current_datetime", return_value=twenty_minutes_ago):
        listing = signed(f"{signed_cloud.endpoint}/{BUCKET}", service="s3")
        tables = signed(
            f"{signed_cloud.endpoint}/",
            service="dynamodb",
            method="POST",
            body=b"{}",
            **{"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": "application/x-amz-json-1.0"},
        )

    status, body = send(listing)
    assert status == 403
    assert b"<Code>RequestTimeTooSkewed</Code>" in body
    assert b"<MaxAllowedSkewMilliseconds>900000</MaxAllowedSkewMilliseconds>" in body
    status, body = send(tables)
    assert status == 400
    answer = json.loads(body)
    assert answer["__type"].endswith("#InvalidSignatureException")
    assert answer["message"].startswith(
        f"Signature expired: {twenty_minutes_ago:%Y%m%dT%H%M%SZ} is now earlier than"
    )


@pytest.mark.parametrize("signed_cloud", [True], indirect=True)
def test_presigned_urls_work_until_they_expire(signed_cloud: LocalCloud) -> None:
    # SigV4 URLs (botocore presigns S3 with SigV2 unless told; SigV2 is not checked locally).
    s3 = boto3.client(
        "s3",
        endpoint_url=signed_cloud.endpoint,
        region_name=REGION,
        config=Config(signature_version="s3v4"),
        **DUMMY_CREDENTIALS,
    )
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "presigned.txt"})
    put = urllib.request.Request(
        put_url, data=b"sent by URL", method="PUT", headers={"Content-Type": "text/plain"}
    )
    with urllib.request.urlopen(put, timeout=30) as answer:
        assert answer.status == 200
    get_url = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "presigned.txt"})
    with urllib.request.urlopen(get_url, timeout=30) as answer:
        assert answer.read() == b"sent by URL"

    expired_url = s3.generate_presigned_url(
        "get_object", Params={"Bucket": BUCKET, "Key": "presigned.txt"}, ExpiresIn=1
    )
    time.sleep(2.1)
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(expired_url, timeout=30)
    body = raised.value.read()
    assert raised.value.code == 403
    assert b"<Code>AccessDenied</Code><Message>Request has expired</Message>" in body
    assert b"<X-Amz-Expires>1</X-Amz-Expires>" in body


@pytest.mark.parametrize("signed_cloud", [False], indirect=True)
def test_with_verify_signatures_off_a_wrong_secret_is_taken(signed_cloud: LocalCloud) -> None:
    assert signed_cloud.signatures is None
    tables = client(signed_cloud, "dynamodb", secret="wrong").list_tables()["TableNames"]
    assert tables == ["orderbatch-ProbeTable"]
    assert client(signed_cloud, "s3", secret="wrong").list_objects_v2(Bucket=BUCKET)["KeyCount"] == 0


# ---------------------------------------------------------------------------------------------- binding


def test_binding_beyond_loopback_warns_and_loopback_does_not() -> None:
    assert exposure_warning("127.0.0.1") is None
    assert exposure_warning("::1") is None
    assert exposure_warning("localhost") is None
    warning = exposure_warning("0.0.0.0")
    assert warning is not None
    assert "0.0.0.0" in warning
    assert "act as any identity" in warning
    assert exposure_warning("192.168.1.20") is not None


def test_the_docker_api_socket_is_the_owners_only(tmp_path: Path) -> None:
    socket_path = tmp_path / "docker.sock"
    with DockerApiServer(mock.Mock(), socket_path=socket_path):
        assert socket_path.stat().st_mode & 0o777 == 0o600


def test_local_up_binds_loopback_by_default_and_warns_for_another_host(
    local_up_config: Callable[..., LocalCloudConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    default = local_up_config()
    quiet = capsys.readouterr().err
    exposed = local_up_config("--host", "0.0.0.0", "--no-verify-signatures")
    warned = capsys.readouterr().err

    assert (default.host, default.verify_signatures) == ("127.0.0.1", True)
    assert (exposed.host, exposed.verify_signatures) == ("0.0.0.0", False)
    assert quiet == ""
    assert "listening on 0.0.0.0, not loopback" in warned
