"""The Runtime API of one execution environment, served by the Lambda service itself.

A function's runtime (awslambdaric, or any custom runtime) asks ``AWS_LAMBDA_RUNTIME_API`` for its next
event and posts the answer back (the "AWS Lambda runtime API", 2018-06-01): ``GET
/runtime/invocation/next``, then ``POST /runtime/invocation/{id}/response`` or ``.../error``, or ``POST
/runtime/init/error`` when its init failed. On AWS that endpoint belongs to Lambda's own runtime manager.
Here each environment's endpoint is a loopback listener of the Lambda service process, and the thread
that runs an invocation drives it: it hands the event to the runtime's pending ``next`` request, then
reads the runtime's requests until the answer for that event comes, the deadline passes or the runtime
dies. Nothing runs between invocations: a ``next`` request waits in its socket until the next one.

A second process per environment (the Runtime Interface Emulator did this before) cost 3.6 MB of memory
and two more HTTP hops per invocation.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import subprocess
import time
from dataclasses import dataclass

from sam_local_cloud.http_framing import LINE_END, FramedReader

_PREFIX = "/2018-06-01/runtime/"
NEXT_PATH = _PREFIX + "invocation/next"
INIT_ERROR_PATH = _PREFIX + "init/error"
# Lambda's limit on a synchronous invocation's response ("Lambda quotas": 6 MB, as the runtime API counts).
RESPONSE_LIMIT_BYTES = 6_291_556
_RESPONSE_TOO_LARGE = {
    "errorMessage": (
        f"Response payload size exceeded maximum allowed payload size ({RESPONSE_LIMIT_BYTES} bytes)."
    ),
    "errorType": "Function.ResponseSizeTooLarge",
}
# How often a wait without events looks whether the runtime is still there, where no pidfd tells it.
_LIVENESS_POLL_SECONDS = 0.05
_REASONS = {
    200: "OK",
    202: "Accepted",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    413: "Payload Too Large",
}
_ACCEPTED = json.dumps({"status": "OK"}).encode()


@dataclass(frozen=True)
class Invocation:
    """One event for the runtime, with the headers the runtime API sends along with it."""

    request_id: str
    payload: bytes
    deadline_epoch_ms: int
    function_arn: str


@dataclass(frozen=True)
class RuntimeAnswer:
    """What the runtime answered an invocation with."""

    body: bytes
    # Posted to .../error or /init/error (or refused by Lambda, e.g. too large): the Invoke's FunctionError.
    function_error: bool = False
    # The runtime failed its init and exits: its environment is done, the next invocation starts another.
    init_failed: bool = False


class RuntimeExitedError(Exception):
    """The runtime ended before it answered; ``returncode`` is its stub's (``subprocess``'s convention)."""

    def __init__(self, returncode: int | None) -> None:
        super().__init__(f"the runtime exited ({returncode})")
        self.returncode = returncode


class _MalformedRequestError(Exception):
    pass


class _PeerGoneError(Exception):
    pass


@dataclass
class _Request:
    method: str
    path: str
    headers: dict[bytes, bytes]
    body: bytes


class RuntimeApi:
    """The endpoint of one environment. Not thread-safe: one invocation at a time, as Lambda runs them."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind((host, 0))
        self._listener.listen(8)
        self._listener.setblocking(False)
        self.address = f"{host}:{self._listener.getsockname()[1]}"
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._readers: list[FramedReader] = []
        # A connection whose ``next`` request waits for an event.
        self._waiting: FramedReader | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._pidfd: int | None = None
        self._closed = False

    def watch(self, process: subprocess.Popen[bytes]) -> None:
        """The process whose end means the runtime is gone (the runtime's stub)."""
        self._process = process
        try:
            self._pidfd = os.pidfd_open(process.pid)
        except (AttributeError, OSError):  # no pidfd here: the waits poll instead
            return
        self._selector.register(self._pidfd, selectors.EVENT_READ, None)

    def invoke(self, invocation: Invocation, deadline: float) -> RuntimeAnswer:
        """Run ``invocation``: ``TimeoutError`` past ``deadline`` (monotonic), ``RuntimeExitedError``."""
        while self._waiting is None:
            early = self._serve(deadline, None)
            if early is not None:  # an init error, before the runtime asked for any event
                return early
        waiting, self._waiting = self._waiting, None
        headers = {
            "Content-Type": "application/json",
            "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
            "Lambda-Runtime-Deadline-Ms": str(invocation.deadline_epoch_ms),
            "Lambda-Runtime-Invoked-Function-Arn": invocation.function_arn,
        }
        try:
            _respond(waiting, 200, invocation.payload, headers)
        except OSError:
            self._drop(waiting)
        while True:
            answer = self._serve(deadline, invocation.request_id)
            if answer is not None:
                return answer

    def close(self) -> None:
        self._closed = True
        for reader in self._readers:
            reader.peer.close()
        self._readers.clear()
        self._waiting = None
        self._selector.close()
        self._listener.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    # -- serving ------------------------------------------------------------------------------------

    def _serve(self, deadline: float, request_id: str | None) -> RuntimeAnswer | None:
        """Wait for and handle what the runtime sends next; the answer to ``request_id`` once it came."""
        for reader in [reader for reader in self._readers if reader.buffer and reader is not self._waiting]:
            # Sent on the heels of an earlier request and read along with it: no readiness will tell.
            answer = self._read_requests(reader, deadline, request_id)
            if answer is not None or self._waiting is not None:
                return answer
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the runtime did not answer in time")
        poll = remaining if self._pidfd is not None else min(remaining, _LIVENESS_POLL_SECONDS)
        try:
            events = self._selector.select(timeout=poll)
        except (OSError, ValueError):
            if self._closed:  # the environment was stopped meanwhile (the service closing)
                raise RuntimeExitedError(self._returncode()) from None
            raise
        runtime_ended = False
        for key, _ in events:
            if key.fileobj is self._listener:
                self._accept()
            elif isinstance(key.fileobj, int):
                runtime_ended = True
            else:
                answer = self._read_requests(key.data, deadline, request_id)
                if answer is not None:
                    return answer
        if runtime_ended or (self._pidfd is None and self._ended()):
            raise RuntimeExitedError(self._returncode())
        return None

    def _accept(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while True:
                connection, _ = self._listener.accept()
                connection.setblocking(True)
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                reader = FramedReader(connection, closed=_PeerGoneError, malformed=_MalformedRequestError)
                self._readers.append(reader)
                self._selector.register(connection, selectors.EVENT_READ, reader)

    def _read_requests(
        self, reader: FramedReader, deadline: float, request_id: str | None
    ) -> RuntimeAnswer | None:
        """Handle what this connection has sent; the answer to ``request_id`` if it was among it."""
        while True:
            reader.peer.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                request = _read_request(reader)
            except TimeoutError:
                raise
            except (_PeerGoneError, _MalformedRequestError, OSError):
                self._drop(reader)
                return None
            if request is None:
                self._drop(reader)
                return None
            try:
                answer = self._handle(reader, request, request_id)
            except OSError:
                self._drop(reader)
                return None
            if answer is not None or reader is self._waiting or not reader.buffer:
                return answer

    def _handle(
        self, reader: FramedReader, request: _Request, request_id: str | None
    ) -> RuntimeAnswer | None:
        if request.method == "GET" and request.path == NEXT_PATH:
            if request_id is not None:
                # Lambda's runtime manager refuses a runtime that asks for more work mid-invocation.
                refusal = "State transition from Running to Ready failed"
                _respond_error(reader, 403, "InvalidStateTransition", refusal)
                return None
            self._waiting = reader
            return None
        if request.method == "POST" and request.path == INIT_ERROR_PATH:
            _respond(reader, 202, _ACCEPTED)
            return RuntimeAnswer(request.body, function_error=True, init_failed=True)
        if request.method == "POST" and request.path.startswith(_PREFIX + "invocation/"):
            posted_id, _, kind = request.path[len(_PREFIX + "invocation/") :].partition("/")
            if kind not in {"response", "error"}:
                _respond_error(reader, 404, "NotFound", f"no such path: {request.path}")
                return None
            if posted_id != request_id:
                _respond_error(reader, 400, "InvalidRequestID", "Invalid request ID")
                return None
            if kind == "error":
                _respond(reader, 202, _ACCEPTED)
                return RuntimeAnswer(request.body, function_error=True)
            if len(request.body) > RESPONSE_LIMIT_BYTES:
                _respond_error(
                    reader,
                    413,
                    "RequestEntityTooLarge",
                    f"Exceeded maximum allowed payload size ({RESPONSE_LIMIT_BYTES} bytes).",
                )
                return RuntimeAnswer(json.dumps(_RESPONSE_TOO_LARGE).encode(), function_error=True)
            _respond(reader, 202, _ACCEPTED)
            return RuntimeAnswer(request.body)
        _respond_error(reader, 404, "NotFound", f"no such path: {request.path}")
        return None

    def _drop(self, reader: FramedReader) -> None:
        if reader is self._waiting:
            self._waiting = None
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(reader.peer)
        if reader in self._readers:
            self._readers.remove(reader)
        reader.peer.close()

    def _ended(self) -> bool:
        return self._process is not None and self._process.poll() is not None

    def _returncode(self) -> int | None:
        if self._process is None:
            return None
        try:
            return self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None


def _read_request(reader: FramedReader) -> _Request | None:
    head = reader.read_head()
    if head is None:
        return None
    request_line, *header_lines = head.split(LINE_END)
    parts = request_line.split(b" ")
    if len(parts) != 3:
        raise _MalformedRequestError("bad request line")
    headers: dict[bytes, bytes] = {}
    for line in header_lines:
        name, separator, value = line.partition(b":")
        if not separator:
            raise _MalformedRequestError("bad header line")
        headers[name.strip().lower()] = value.strip()
    if headers.get(b"expect", b"").lower() == b"100-continue":
        reader.peer.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        body = reader.read_chunked()
    else:
        try:
            length = int(headers.get(b"content-length", b"0"))
        except ValueError as error:
            raise _MalformedRequestError("bad Content-Length") from error
        body = reader.read_exactly(length) if length > 0 else b""
    return _Request(parts[0].decode("latin-1"), parts[1].decode("latin-1"), headers, body)


def _respond(reader: FramedReader, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, '')}"]
    lines += [f"{name}: {value}" for name, value in (headers or {"Content-Type": "application/json"}).items()]
    lines.append(f"Content-Length: {len(body)}")
    reader.peer.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)


def _respond_error(reader: FramedReader, status: int, error_type: str, message: str) -> None:
    _respond(reader, status, json.dumps({"errorMessage": message, "errorType": error_type}).encode())
