"""The local cloud's answers while it deploys: its health, and AWS's 503 to everyone but the deployer."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sam_local_cloud.credentials import DUMMY_CREDENTIALS

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

# The deployment's own calls carry this key: they are the only ones served before the template is deployed.
DEPLOYER_CREDENTIALS = {"aws_access_key_id": "sam-local-cloud-deployer", "aws_secret_access_key": "deployer"}


def health_answer(deployed: bool, start_response: StartResponse) -> list[bytes]:
    body = json.dumps({"status": "deployed" if deployed else "deploying"}).encode()
    start_response(
        "200 OK" if deployed else "503 Service Unavailable",
        [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
    )
    return [body]


def still_deploying_answer(as_json: bool, start_response: StartResponse) -> list[bytes]:
    """AWS's own 503 shape, so boto3 and the AWS CLI retry it as they retry any ServiceUnavailable."""
    message = "The local cloud is still deploying its template; retry shortly."
    headers = [("Retry-After", "1")]
    if as_json:
        body = json.dumps({"__type": "ServiceUnavailableException", "message": message}).encode()
        content_type = "application/x-amz-json-1.0"
        headers.append(("x-amzn-ErrorType", "ServiceUnavailableException"))
    else:
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>ServiceUnavailable</Code><Message>{message}</Message></Error>"
        ).encode()
        content_type = "application/xml"
    start_response(
        "503 Service Unavailable",
        [("Content-Type", content_type), ("Content-Length", str(len(body))), *headers],
    )
    return [body]


def from_deployer(environ: WSGIEnvironment) -> bool:
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    return f"Credential={DEPLOYER_CREDENTIALS['aws_access_key_id']}/" in authorization


def known_credentials() -> dict[str, str]:
    """The keys every local cloud knows besides those it issues: the operator's, the deployer's, and the one
    moto's own Step Functions interpreter signs its Tasks' calls with when ours is not patched in."""
    return {
        DUMMY_CREDENTIALS["aws_access_key_id"]: DUMMY_CREDENTIALS["aws_secret_access_key"],
        DEPLOYER_CREDENTIALS["aws_access_key_id"]: DEPLOYER_CREDENTIALS["aws_secret_access_key"],
        "ak": "sk",
    }
