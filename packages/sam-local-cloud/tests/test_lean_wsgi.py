"""The data plane's HTTP server: what a WSGI application and an HTTP/1.1 client rely on."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from sam_local_cloud.lean_wsgi import LeanWsgiServer


def echo_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    if environ["PATH_INFO"] == "/fail":
        raise RuntimeError("the application failed")
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    document = {
        "method": environ["REQUEST_METHOD"],
        "path": environ["PATH_INFO"],
        "query": environ["QUERY_STRING"],
        "content_type": environ.get("CONTENT_TYPE"),
        "target": environ.get("HTTP_X_AMZ_TARGET"),
        "underscored": environ.get("HTTP_X_UNDER_SCORE"),
        "body": body.decode(),
    }
    answer = json.dumps(document).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("x-amzn-RequestId", "r-1")])
    return [answer]


@pytest.fixture
def server() -> Iterator[LeanWsgiServer]:
    running = LeanWsgiServer("127.0.0.1", 0, echo_app)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running
    running.shutdown()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_requests_on_one_kept_alive_connection_reach_the_application_as_sent(server: LeanWsgiServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=5)
    for number in range(3):
        connection.request(
            "POST",
            "/a%20b?x=1",
            body=json.dumps({"n": number}),
            headers={
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": "DynamoDB_20120810.GetItem",
            },
        )
        response = connection.getresponse()
        document = json.loads(response.read())
        assert response.status == 200
        assert response.getheader("Connection") == "keep-alive"
        assert response.getheader("x-amzn-RequestId") == "r-1"
        assert response.getheader("Date")
        assert document == {
            "method": "POST",
            "path": "/a b",
            "query": "x=1",
            "content_type": "application/x-amz-json-1.0",
            "target": "DynamoDB_20120810.GetItem",
            "underscored": None,
            "body": json.dumps({"n": number}),
        }
    connection.close()


def test_a_chunked_body_after_100_continue_and_connection_close(server: LeanWsgiServer) -> None:
    with socket.create_connection(("127.0.0.1", server.server_port), timeout=5) as raw:
        raw.sendall(
            b"POST /chunked HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n"
            b"X_Under_Score: spoof\r\nConnection: close\r\n\r\n"
        )
        assert raw.recv(64) == b"HTTP/1.1 100 Continue\r\n\r\n"
        raw.sendall(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n")
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert b"Connection: close" in head
    document = json.loads(body)
    assert document["body"] == "abcde"
    assert document["underscored"] is None


def test_an_application_error_is_a_500_and_a_malformed_request_a_400(server: LeanWsgiServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=5)
    connection.request("POST", "/fail", body=b"{}")
    response = connection.getresponse()
    assert (response.status, response.read()) == (500, b"Internal Server Error")
    connection.request("POST", "/after-failure", body=b"{}")
    assert connection.getresponse().status == 200
    connection.close()
    with socket.create_connection(("127.0.0.1", server.server_port), timeout=5) as raw:
        raw.sendall(b"NONSENSE\r\n\r\n")
        answer = raw.recv(65536)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request")
