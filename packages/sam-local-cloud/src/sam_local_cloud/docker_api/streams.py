"""The byte-level formats of the Docker Engine API: multiplexed output frames, chunked bodies, JSON lines.

A container without a TTY has its stdout and stderr multiplexed on one connection (attach, logs): each
write is a frame of an 8-byte header (stream number, three zero bytes, payload length as a big-endian
uint32) and the payload. docker-py reads frames straight from the socket after the attach handshake
(``docker.utils.socket.frames_iter``), so they must go out exactly so, unwrapped by any HTTP encoding.

Progress streams (pull, build) and followed logs are chunked HTTP bodies: docker-py only decodes a
response as a stream of JSON objects when it is chunked.
"""

from __future__ import annotations

import json
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from email.message import Message
    from io import BufferedIOBase

STDOUT = 1
STDERR = 2
_FRAME_HEADER = struct.Struct(">BxxxL")
_COPY_CHUNK_BYTES = 1 << 16


def frame(stream: int, payload: bytes) -> bytes:
    return _FRAME_HEADER.pack(stream, len(payload)) + payload


def chunk(payload: bytes) -> bytes:
    """One chunk of a ``Transfer-Encoding: chunked`` body (never the last, empty one)."""
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


LAST_CHUNK = b"0\r\n\r\n"


def json_line(document: object) -> bytes:
    return json.dumps(document).encode() + b"\r\n"


def copy_body(source: BufferedIOBase, headers: Message, target: IO[bytes]) -> int:
    """Copy a request body (Content-Length or chunked) from ``source`` to ``target``; returns its size.

    docker-py streams a build context as chunked when it cannot tell the file's length.
    """
    if "chunked" in (headers.get("Transfer-Encoding") or "").lower():
        return _copy_chunked(source, target)
    length = int(headers.get("Content-Length") or 0)
    _copy_exactly(source, target, length, "the request body")
    return length


def _copy_exactly(source: BufferedIOBase, target: IO[bytes], size: int, what: str) -> None:
    remaining = size
    while remaining > 0:
        data = source.read(min(remaining, _COPY_CHUNK_BYTES))
        if not data:
            raise ConnectionError(f"the client closed in the middle of {what}")
        target.write(data)
        remaining -= len(data)


def _copy_chunked(source: BufferedIOBase, target: IO[bytes]) -> int:
    copied = 0
    while True:
        size_line = source.readline()
        if not size_line:
            raise ConnectionError("the client closed in the middle of a chunked body")
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while source.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return copied
        _copy_exactly(source, target, size, "a chunk")
        copied += size
        source.readline()  # the CRLF after the chunk


@dataclass(frozen=True)
class OutputRecord:
    stream: int
    data: bytes
    timestamp: float


class OutputLog:
    """Everything a container wrote, in order, for attach and logs to replay and follow.

    Docker keeps a container's whole output until it is removed; so does this (a Lambda container lives
    for one invocation under ``sam local invoke``, or while warm under start-lambda).
    """

    def __init__(self) -> None:
        self._records: list[OutputRecord] = []
        self._closed = False
        self._changed = threading.Condition()

    def append(self, stream: int, data: bytes) -> None:
        with self._changed:
            if self._closed:
                return
            self._records.append(OutputRecord(stream, data, time.time()))
            self._changed.notify_all()

    def close(self) -> None:
        """No more output (later appends are dropped): followers end once they have read everything."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def reopen(self) -> None:
        """More output after all (a restarted container): later appends are kept again."""
        with self._changed:
            self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def records(self) -> list[OutputRecord]:
        with self._changed:
            return list(self._records)

    def follow(
        self, *, replay: bool, streams: frozenset[int], stop: threading.Event | None = None
    ) -> Iterator[OutputRecord]:
        """The records (all so far if ``replay``, then new ones) until the log closes or ``stop`` is set."""
        with self._changed:
            position = 0 if replay else len(self._records)
        while True:
            with self._changed:
                while position >= len(self._records) and not self._closed:
                    if stop is not None and stop.is_set():
                        return
                    self._changed.wait(timeout=0.5)
                pending = self._records[position:]
                position = len(self._records)
                finished = self._closed
            for record in pending:
                if record.stream in streams:
                    yield record
            if finished:
                return
