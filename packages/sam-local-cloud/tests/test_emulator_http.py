"""The emulator connection reads each framing Go's net/http answers with, and fails as http.client did."""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from sam_local_cloud.lambda_service.emulator_http import EmulatorConnection


@contextmanager
def emulator(answers: list[bytes], *, close_after: bool = False) -> Iterator[tuple[int, list[bytes]]]:
    """A one-connection server: reads a request per answer (head and Content-Length body), sends it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    requests: list[bytes] = []

    def serve() -> None:
        peer, _ = listener.accept()
        with peer:
            buffer = b""
            for answer in answers:
                while b"\r\n\r\n" not in buffer:
                    buffer += peer.recv(65536)
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = int(
                    next(
                        line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
                    ).split(b":")[1]
                )
                while len(buffer) < length:
                    buffer += peer.recv(65536)
                requests.append(head + b"\r\n\r\n" + buffer[:length])
                buffer = buffer[length:]
                peer.sendall(answer)
            if close_after:
                peer.shutdown(socket.SHUT_WR)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], requests
    finally:
        thread.join(timeout=5)
        listener.close()


def test_content_length_and_chunked_answers_on_one_kept_alive_connection() -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"
    )
    sized = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'
    with emulator([sized, chunked]) as (port, requests):
        connection = EmulatorConnection("127.0.0.1", port, timeout=5)
        assert connection.post("/invoke", b'{"n":1}') == (200, b'{"ok":true}')
        assert connection.post("/invoke", b"x" * 100_000) == (200, b"hello world")
        connection.close()
    assert requests[0].startswith(b"POST /invoke HTTP/1.1\r\n")
    assert requests[0].endswith(b'\r\n\r\n{"n":1}')
    assert len(requests[1].partition(b"\r\n\r\n")[2]) == 100_000


def test_a_body_framed_by_the_connection_end_and_an_error_status() -> None:
    with emulator(
        [b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\nemulator gone"], close_after=True
    ) as (
        port,
        _,
    ):
        connection = EmulatorConnection("127.0.0.1", port, timeout=5)
        assert connection.post("/invoke", b"{}") == (502, b"emulator gone")


def test_a_closed_peer_raises_what_http_client_raised() -> None:
    with emulator([], close_after=True) as (port, _):
        connection = EmulatorConnection("127.0.0.1", port, timeout=5)
        with pytest.raises(http.client.RemoteDisconnected):
            connection.post("/invoke", b"{}")


def test_no_answer_in_time_raises_timeout_error() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        connection = EmulatorConnection("127.0.0.1", listener.getsockname()[1], timeout=0.2)
        with pytest.raises(TimeoutError):
            connection.post("/invoke", b"{}")
    finally:
        listener.close()


def test_a_malformed_status_line_is_an_http_exception() -> None:
    with emulator([b"SPDY/9 what\r\n\r\n"]) as (port, _):
        connection = EmulatorConnection("127.0.0.1", port, timeout=5)
        with pytest.raises(http.client.HTTPException):
            connection.post("/invoke", b"{}")
