"""A SigV4-signing client for the app's HTTP API, deployed (`--api URL`) or local (`--endpoint URL`)."""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

LOCAL_API_ID = "batchesapi"  # the HttpApi's logical ID, lower-cased, as the local cloud names it
# An HTTP API answers 500 when Lambda throttles its integration, so 5xx is retried like a 429.
RETRYABLE_STATUSES = {429, 500, 502, 503, 504}


@dataclass(frozen=True)
class ApiResponse:
    status: int
    body: dict[str, Any]


def local_api_url(endpoint: str) -> str:
    return f"{endpoint.rstrip('/')}/execute-api/{LOCAL_API_ID}"


class BatchesApiClient:
    def __init__(
        self,
        api_url: str,
        *,
        region: str | None = None,
        session: boto3.Session | None = None,
        timeout_seconds: float = 30.0,
        max_attempts: int = 6,
    ) -> None:
        self._api_url = api_url.rstrip("/")
        self._session = session or boto3.Session()
        self._region = region or self._session.region_name or "us-east-1"
        self._timeout = timeout_seconds
        self._max_attempts = max_attempts

    def submit(self, batch: Mapping[str, object]) -> ApiResponse:
        return self.request("POST", "/batches", json.dumps(batch).encode())

    def status(self, batch_id: str) -> ApiResponse:
        return self.request("GET", f"/batches/{batch_id}")

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        sign: bool = True,
        content_type: str = "application/json",
    ) -> ApiResponse:
        """One API call, retried like the SDKs' standard mode: 429s and 5xx with capped, fully
        jittered exponential backoff. Safe for both routes: POST /batches is idempotent on the batch ID."""
        for attempt in range(1, self._max_attempts + 1):
            response = self._send(method, path, body, sign=sign, content_type=content_type)
            if response.status not in RETRYABLE_STATUSES or attempt == self._max_attempts:
                return response
            time.sleep(random.uniform(0, min(5.0, 0.2 * 2**attempt)))
        raise AssertionError("unreachable")

    def _send(
        self, method: str, path: str, body: bytes | None, *, sign: bool, content_type: str
    ) -> ApiResponse:
        headers = {"Content-Type": content_type} if body is not None else {}
        aws_request = AWSRequest(method=method, url=self._api_url + path, data=body, headers=headers)
        if sign:
            credentials = self._session.get_credentials()
            if credentials is None:
                raise RuntimeError(
                    "no AWS credentials found to sign the API request (set AWS_PROFILE or keys)"
                )
            SigV4Auth(credentials.get_frozen_credentials(), "execute-api", self._region).add_auth(aws_request)
        prepared = urllib.request.Request(
            str(aws_request.url), data=body, method=method, headers=dict(aws_request.headers.items())
        )
        try:
            with urllib.request.urlopen(prepared, timeout=self._timeout) as response:
                return ApiResponse(response.status, _json_or_text(response.read()))
        except urllib.error.HTTPError as error:
            return ApiResponse(error.code, _json_or_text(error.read()))


def _json_or_text(data: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(data or b"{}")
    except json.JSONDecodeError:
        return {"message": data.decode(errors="replace")}
    return parsed if isinstance(parsed, dict) else {"body": parsed}
