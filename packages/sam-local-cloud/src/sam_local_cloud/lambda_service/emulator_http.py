"""The kept-alive HTTP/1.1 connection the Lambda service posts each invocation on to an emulator.

``http.client`` parses every response's headers with the ``email`` package's feed parser and builds a
response object around a buffered file: about a tenth of the local cloud's CPU per trivial Lambda task in
a profile. The emulator is the Runtime Interface Emulator (Go's ``net/http``) on loopback and is asked one
thing, so this reads its answers directly: a status line, headers, and a body framed by
``Content-Length``, chunked transfer coding (Go's choice for larger bodies) or the connection's end.
Failures raise what ``http.client`` raised, so callers handle them the same way: ``TimeoutError`` when
the emulator does not answer in time, ``ConnectionError``/``OSError`` when it is gone, and
``http.client.HTTPException`` subclasses for a malformed answer.
"""

from __future__ import annotations

import http.client
import socket

from sam_local_cloud.http_framing import LINE_END, FramedReader


class EmulatorConnection:
    """One TCP connection to one emulator, reopened on the next request after the peer closes it."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self._reader: FramedReader | None = None

    def connect(self) -> None:
        self.close()
        connection = socket.create_connection((self.host, self.port), timeout=self.timeout)
        # A request is one write and the answer is awaited: Nagle's delay would only add latency.
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._reader = FramedReader(connection, closed=_closed, malformed=_malformed)

    def post(self, path: str, body: bytes, content_type: str = "application/json") -> tuple[int, bytes]:
        """Send one POST and return the answer's status and body."""
        if self._reader is None:
            self.connect()
        assert self._reader is not None
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        try:
            self._reader.peer.sendall(head + body)
            return self._read_response(self._reader)
        except BaseException:
            # Whatever was half read or half sent, this connection's framing is lost.
            self.close()
            raise

    def close(self) -> None:
        if self._reader is not None:
            self._reader.peer.close()
            self._reader = None

    def _read_response(self, reader: FramedReader) -> tuple[int, bytes]:
        head = reader.read_head()
        if head is None:
            raise _closed()
        status_line, *header_lines = head.split(LINE_END)
        status = _status(status_line)
        headers: dict[bytes, bytes] = {}
        for line in header_lines:
            name, separator, value = line.partition(b":")
            if not separator:
                raise http.client.BadStatusLine(line.decode("latin-1"))
            headers[name.strip().lower()] = value.strip()
        if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
            body = reader.read_chunked()
        elif b"content-length" in headers:
            body = reader.read_exactly(_content_length(headers[b"content-length"]))
        else:
            body = reader.read_to_end()
            self.close()
        if headers.get(b"connection", b"").lower() == b"close" or status_line.startswith(b"HTTP/1.0"):
            self.close()
        return status, body


def _closed() -> Exception:
    return http.client.RemoteDisconnected("the emulator closed the connection without an answer")


def _malformed(reason: str) -> Exception:
    return http.client.HTTPException(f"malformed answer from the emulator: {reason}")


def _status(status_line: bytes) -> int:
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
        raise http.client.BadStatusLine(status_line.decode("latin-1"))
    try:
        return int(parts[1])
    except ValueError as error:
        raise http.client.BadStatusLine(status_line.decode("latin-1")) from error


def _content_length(value: bytes) -> int:
    try:
        length = int(value)
    except ValueError as error:
        raise http.client.HTTPException(f"bad Content-Length {value!r}") from error
    if length < 0:
        raise http.client.HTTPException(f"bad Content-Length {value!r}")
    return length
