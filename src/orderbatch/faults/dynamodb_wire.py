"""A DynamoDB client that speaks the JSON protocol itself, for workloads that measure the store.

boto3's client spends about 2 ms of CPU on each call (its user agent, hooks, validation and parsers), more
than the store it calls: a linearizability run of 200,000 calls spent more time in its own clients than in
the data plane under test. This client sends the same signed requests (SigV4, the DynamoDB JSON 1.0
protocol) over one kept-alive connection and answers as boto3's low-level client does: the response's
JSON on success, ``ClientError`` with botocore's ``Error`` and the error's other fields on a refusal,
``BotoCoreError`` when no answer came. Values stay in DynamoDB JSON (``{"N": "5"}``), as boto3's client
returns them.
"""

from __future__ import annotations

import http.client
import json
import socket
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from sam_local_cloud.json_types import JsonObject

_TARGET_PREFIX = "DynamoDB_20120810."
_CONTENT_TYPE = "application/x-amz-json-1.0"


class DynamoDBWireClient:
    """One connection's worth of boto3's DynamoDB client: the operations the workloads make."""

    def __init__(
        self,
        endpoint: str,
        *,
        region: str,
        access_key: str,
        secret_key: str,
        read_timeout: float,
    ) -> None:
        parts = urlsplit(endpoint)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"an http:// endpoint with a host is needed, not {endpoint!r}")
        self._endpoint = endpoint
        self._host = parts.hostname
        self._port = parts.port or 80
        self._signer = SigV4Auth(Credentials(access_key, secret_key), "dynamodb", region)
        self._read_timeout = read_timeout
        self._connection: http.client.HTTPConnection | None = None

    def put_item(self, **params: object) -> JsonObject:
        return self._call("PutItem", params)

    def update_item(self, **params: object) -> JsonObject:
        return self._call("UpdateItem", params)

    def delete_item(self, **params: object) -> JsonObject:
        return self._call("DeleteItem", params)

    def get_item(self, **params: object) -> JsonObject:
        return self._call("GetItem", params)

    def query(self, **params: object) -> JsonObject:
        return self._call("Query", params)

    def transact_write_items(self, **params: object) -> JsonObject:
        return self._call("TransactWriteItems", params)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _call(self, operation: str, params: dict[str, object]) -> JsonObject:
        body = json.dumps(params).encode()
        request = AWSRequest(
            method="POST",
            url=self._endpoint + "/",
            data=body,
            headers={"Content-Type": _CONTENT_TYPE, "X-Amz-Target": _TARGET_PREFIX + operation},
        )
        self._signer.add_auth(request)
        headers = {name: str(value) for name, value in request.headers.items()}
        try:
            status, answer = self._exchange(body, headers)
        except TimeoutError as error:
            self.close()
            raise ReadTimeoutError(endpoint_url=self._endpoint, error=error) from error
        except (OSError, http.client.HTTPException) as error:
            self.close()
            raise EndpointConnectionError(endpoint_url=self._endpoint, error=error) from error
        document = _json_or_nothing(answer)
        if status < 300:
            return document
        raise ClientError(_error_response(status, document), operation)  # type: ignore[arg-type]

    def _exchange(self, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        if self._connection is None:
            self._connection = http.client.HTTPConnection(self._host, self._port, timeout=self._read_timeout)
            self._connection.connect()
            self._connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._connection.request("POST", "/", body=body, headers=headers)
        response = self._connection.getresponse()
        answer = response.read()
        if response.will_close:
            self.close()
        return response.status, answer


def _json_or_nothing(answer: bytes) -> JsonObject:
    try:
        document = json.loads(answer) if answer else {}
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def _error_response(status: int, document: JsonObject) -> JsonObject:
    """botocore's shape of a JSON protocol error: the code after the ``#``, the message under either
    spelling, the error's other fields (a refused condition's ``Item``, a transaction's reasons) beside."""
    code = str(document.get("__type", "")).rpartition("#")[2]
    message = document.get("message", document.get("Message", ""))
    extra = {name: value for name, value in document.items() if name not in ("__type", "message", "Message")}
    return {
        **extra,
        "Error": {"Code": code or str(status), "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
