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

_HEADER_END = b"\r\n\r\n"
_LINE_END = b"\r\n"
_RECEIVE_BYTES = 65536
# Headers larger than this are not an emulator's answer.
_MAX_HEADER_BYTES = 65536


class EmulatorConnection:
    """One TCP connection to one emulator, reopened on the next request after the peer closes it."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self._socket: socket.socket | None = None
        self._buffer = bytearray()

    def connect(self) -> None:
        self.close()
        connection = socket.create_connection((self.host, self.port), timeout=self.timeout)
        # A request is one write and the answer is awaited: Nagle's delay would only add latency.
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket = connection

    def post(self, path: str, body: bytes, content_type: str = "application/json") -> tuple[int, bytes]:
        """Send one POST and return the answer's status and body."""
        if self._socket is None:
            self.connect()
        assert self._socket is not None
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        try:
            self._socket.sendall(head + body)
            return self._read_response()
        except BaseException:
            # Whatever was half read or half sent, this connection's framing is lost.
            self.close()
            raise

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        self._buffer.clear()

    def _read_response(self) -> tuple[int, bytes]:
        end = self._buffer.find(_HEADER_END)
        while end < 0:
            if len(self._buffer) > _MAX_HEADER_BYTES:
                raise http.client.LineTooLong("emulator response headers")
            self._fill()
            end = self._buffer.find(_HEADER_END)
        head = bytes(self._buffer[:end])
        del self._buffer[: end + len(_HEADER_END)]
        status_line, *header_lines = head.split(_LINE_END)
        status = _status(status_line)
        headers: dict[bytes, bytes] = {}
        for line in header_lines:
            name, separator, value = line.partition(b":")
            if not separator:
                raise http.client.BadStatusLine(line.decode("latin-1"))
            headers[name.strip().lower()] = value.strip()
        if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
            body = self._read_chunked()
        elif b"content-length" in headers:
            body = self._read_exactly(_content_length(headers[b"content-length"]))
        else:
            body = self._read_to_end()
        if headers.get(b"connection", b"").lower() == b"close" or status_line.startswith(b"HTTP/1.0"):
            self.close()
        return status, body

    def _fill(self) -> None:
        assert self._socket is not None
        data = self._socket.recv(_RECEIVE_BYTES)
        if not data:
            raise http.client.RemoteDisconnected("the emulator closed the connection without an answer")
        self._buffer += data

    def _read_exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._fill()
        body = bytes(self._buffer[:size])
        del self._buffer[:size]
        return body

    def _read_line(self) -> bytes:
        end = self._buffer.find(_LINE_END)
        while end < 0:
            self._fill()
            end = self._buffer.find(_LINE_END)
        line = bytes(self._buffer[:end])
        del self._buffer[: end + len(_LINE_END)]
        return line

    def _read_chunked(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            size_text = self._read_line().partition(b";")[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError as error:
                raise http.client.IncompleteRead(b"".join(chunks)) from error
            if size == 0:
                # Trailers, if any, end with an empty line.
                while self._read_line():
                    pass
                return b"".join(chunks)
            chunks.append(self._read_exactly(size))
            if self._read_exactly(len(_LINE_END)) != _LINE_END:
                raise http.client.IncompleteRead(b"".join(chunks))

    def _read_to_end(self) -> bytes:
        assert self._socket is not None
        while data := self._socket.recv(_RECEIVE_BYTES):
            self._buffer += data
        body = bytes(self._buffer)
        self.close()
        return body


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
