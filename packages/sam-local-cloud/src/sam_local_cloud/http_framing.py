"""HTTP/1.1 message framing over one socket, shared by the Runtime API and the lean WSGI server.

Both read a head up to its blank line, then a body framed by ``Content-Length`` or chunked transfer
coding. Each says what a closed peer or a malformed frame raises, so callers keep their own errors
(a 400 from either server).
"""

from __future__ import annotations

import socket
from collections.abc import Callable

HEADER_END = b"\r\n\r\n"
LINE_END = b"\r\n"
_RECEIVE_BYTES = 65536


class FramedReader:
    """A receive buffer on ``peer``. ``closed()`` makes the error for a peer gone mid-message and
    ``malformed(reason)`` the one for bytes that are not HTTP framing."""

    def __init__(
        self,
        peer: socket.socket,
        *,
        closed: Callable[[], Exception],
        malformed: Callable[[str], Exception],
        max_head_bytes: int = 65536,
    ) -> None:
        self.peer = peer
        self.buffer = bytearray()
        self._closed = closed
        self._malformed = malformed
        self._max_head_bytes = max_head_bytes

    def fill(self) -> bool:
        """Receive what is there; False when the peer has closed."""
        data = self.peer.recv(_RECEIVE_BYTES)
        if not data:
            return False
        self.buffer += data
        return True

    def read_head(self) -> bytes | None:
        """The next message's head without its blank line; None when the peer closed between messages."""
        end = self.buffer.find(HEADER_END)
        while end < 0:
            if len(self.buffer) > self._max_head_bytes:
                raise self._malformed("headers too large")
            if not self.fill():
                if self.buffer:
                    raise self._closed()
                return None
            end = self.buffer.find(HEADER_END)
        head = bytes(self.buffer[:end])
        del self.buffer[: end + len(HEADER_END)]
        return head

    def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if not self.fill():
                raise self._closed()
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def read_line(self) -> bytes:
        end = self.buffer.find(LINE_END)
        while end < 0:
            if not self.fill():
                raise self._closed()
            end = self.buffer.find(LINE_END)
        line = bytes(self.buffer[:end])
        del self.buffer[: end + len(LINE_END)]
        return line

    def read_chunked(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            try:
                size = int(self.read_line().partition(b";")[0].strip(), 16)
            except ValueError as error:
                raise self._malformed("bad chunk size") from error
            if size == 0:
                # Trailers, if any, end with an empty line.
                while self.read_line():
                    pass
                return b"".join(chunks)
            chunks.append(self.read_exactly(size))
            if self.read_exactly(len(LINE_END)) != LINE_END:
                raise self._malformed("chunk not followed by CRLF")

    def read_to_end(self) -> bytes:
        while self.fill():
            pass
        data = bytes(self.buffer)
        self.buffer.clear()
        return data
