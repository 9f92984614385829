"""A small threaded HTTP/1.1 WSGI server for the data plane, where every request is a short JSON call.

werkzeug's development server (``make_server(threaded=True)``) took about half of the DynamoDB data
plane's CPU in a profile of the app's handlers: ``http.server`` parses each request's headers with the
``email`` package, werkzeug then builds the environ with URL handling meant for any client, checks every
header it writes and writes status, headers and body in separate system calls. The data plane's clients
are the SDKs in the functions' runtimes and the local cloud's own forwarding, on kept-alive loopback
connections, so this server reads a request line, headers and a ``Content-Length`` (or chunked) body,
calls the application, and answers in one write. It keeps what a WSGI application may rely on
(PEP 3333's environ, ``start_response`` with ``exc_info``, the iterable's ``close``) and what werkzeug did
that clients see: ``Date`` and ``Server`` headers, ``100 Continue`` for a client that expects it, a
connection kept alive unless HTTP/1.0 or ``Connection: close`` says otherwise, and header names with an
underscore dropped (WSGI cannot tell ``X_Foo`` from ``X-Foo``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import sys
import threading
from collections.abc import Callable
from email.utils import formatdate
from http import HTTPStatus
from time import time
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

from sam_local_cloud.http_framing import LINE_END, FramedReader

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication, WSGIEnvironment

SERVER_SOFTWARE = "sam-local-cloud-lean-wsgi"
_LOG = logging.getLogger(__name__)


class MalformedRequestError(Exception):
    """A request this server cannot frame: answered 400 and the connection closed."""


class LeanWsgiServer:
    """``serve_forever`` accepts connections and serves each on a daemon thread; ``shutdown`` stops it."""

    def __init__(
        self,
        host: str,
        port: int,
        app: WSGIApplication,
        *,
        backlog: int = 128,
        listener: socket.socket | None = None,
    ) -> None:
        """``listener``: a socket already listening (handed down by a parent process) instead of a new one
        on ``host``:``port``."""
        self._app = app
        if listener is None:
            listener = socket.create_server((host, port), backlog=backlog)
        self._listener = listener
        self.server_address: tuple[str, int] = self._listener.getsockname()[:2]
        self.server_port = self.server_address[1]
        self._closing = threading.Event()
        self._stopped = threading.Event()

    def serve_forever(self) -> None:
        try:
            while not self._closing.is_set():
                try:
                    peer, address = self._listener.accept()
                except OSError:
                    if self._closing.is_set():
                        return
                    raise
                peer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                connection = _Connection(peer, address, self._app, self.server_address)
                threading.Thread(target=connection.serve, name="lean-wsgi-connection", daemon=True).start()
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        self._closing.set()
        # Wakes the accept() that close() alone would leave blocked.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()

    def server_close(self) -> None:
        self.shutdown()


class _Connection:
    def __init__(
        self, peer: socket.socket, address: object, app: WSGIApplication, server_address: tuple[str, int]
    ) -> None:
        self._peer = peer
        self._address = address
        self._app = app
        self._server_address = server_address
        self._reader = FramedReader(
            peer,
            closed=lambda: ConnectionError("the client closed the connection inside a request"),
            malformed=MalformedRequestError,
        )

    def serve(self) -> None:
        with self._peer:
            try:
                while self._serve_one():
                    pass
            except MalformedRequestError as error:
                self._send_plain(HTTPStatus.BAD_REQUEST, str(error))
            except (ConnectionError, TimeoutError):
                return

    def _serve_one(self) -> bool:
        """Answer one request; False when the connection is to close."""
        head = self._reader.read_head()
        if head is None:
            return False
        request_line, *header_lines = head.split(LINE_END)
        parts = request_line.split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
            raise MalformedRequestError(f"bad request line {request_line[:200]!r}")
        method, target, version = (part.decode("latin-1") for part in parts)
        environ = self._environ(method, target, version)
        framing = _read_headers(header_lines, environ)
        connection_tokens, chunked, expects_continue = framing
        if expects_continue and version == "HTTP/1.1":
            self._peer.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        if chunked:
            body = self._reader.read_chunked()
            environ["CONTENT_LENGTH"] = str(len(body))
        else:
            body = self._reader.read_exactly(_content_length(environ.get("CONTENT_LENGTH", "")))
        environ["wsgi.input"] = io.BytesIO(body)
        keep_alive = (version == "HTTP/1.1" and "close" not in connection_tokens) or (
            version == "HTTP/1.0" and "keep-alive" in connection_tokens
        )
        status, headers, answer = self._call(environ)
        self._send(status, headers, b"" if method == "HEAD" else answer, len(answer), keep_alive)
        return keep_alive

    def _environ(self, method: str, target: str, version: str) -> WSGIEnvironment:
        path, _, query = target.partition("?")
        host, port = self._server_address
        return {
            "REQUEST_METHOD": method,
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
            "QUERY_STRING": query,
            "RAW_URI": target,
            "REQUEST_URI": target,
            "SERVER_NAME": host,
            "SERVER_PORT": str(port),
            "SERVER_PROTOCOL": version,
            "SERVER_SOFTWARE": SERVER_SOFTWARE,
            "REMOTE_ADDR": self._address[0] if isinstance(self._address, tuple) else "",
            "REMOTE_PORT": self._address[1] if isinstance(self._address, tuple) else 0,
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }

    def _call(self, environ: WSGIEnvironment) -> tuple[str, list[tuple[str, str]], bytes]:
        answer: dict[str, Any] = {}

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Callable[[bytes], None]:
            if exc_info is not None and answer.get("sent"):
                raise exc_info[1].with_traceback(exc_info[2])
            answer["status"], answer["headers"] = status, headers
            return pieces.append

        pieces: list[bytes] = []
        try:
            iterable = self._app(environ, start_response)
            try:
                pieces.extend(iterable)
            finally:
                close = getattr(iterable, "close", None)
                if close is not None:
                    close()
        except Exception:
            _LOG.exception("the application failed on %s %s", environ["REQUEST_METHOD"], environ["RAW_URI"])
            message = b"Internal Server Error"
            return "500 Internal Server Error", [("Content-Type", "text/plain")], message
        if "status" not in answer:
            return "500 Internal Server Error", [("Content-Type", "text/plain")], b"no start_response"
        return answer["status"], answer["headers"], b"".join(pieces)

    def _send(
        self, status: str, headers: list[tuple[str, str]], body: bytes, length: int, keep_alive: bool
    ) -> None:
        names = {name.lower() for name, _ in headers}
        lines = [f"HTTP/1.1 {status}"]
        lines.extend(f"{name}: {value}" for name, value in headers if name.lower() != "connection")
        if "content-length" not in names:
            lines.append(f"Content-Length: {length}")
        if "date" not in names:
            lines.append(f"Date: {_http_date()}")
        if "server" not in names:
            lines.append(f"Server: {SERVER_SOFTWARE}")
        lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self._peer.sendall(head + body)

    def _send_plain(self, status: HTTPStatus, text: str) -> None:
        body = text.encode("utf-8", errors="replace")
        with contextlib.suppress(OSError):
            self._send(
                f"{status.value} {status.phrase}", [("Content-Type", "text/plain")], body, len(body), False
            )


def _read_headers(header_lines: list[bytes], environ: WSGIEnvironment) -> tuple[str, bool, bool]:
    """Put the headers in ``environ``; return the Connection tokens, whether the body is chunked, and
    whether the client waits for ``100 Continue``."""
    connection_tokens = ""
    chunked = False
    expects_continue = False
    for line in header_lines:
        name, separator, value = line.partition(b":")
        if not separator:
            raise MalformedRequestError(f"bad header line {line[:200]!r}")
        key = name.strip().decode("latin-1")
        text = value.strip().decode("latin-1")
        lowered = key.lower()
        if lowered == "content-type":
            environ["CONTENT_TYPE"] = text
        elif lowered == "content-length":
            environ["CONTENT_LENGTH"] = text
        elif "_" in key:
            continue
        else:
            if lowered == "connection":
                connection_tokens = text.lower()
            elif lowered == "transfer-encoding":
                chunked = "chunked" in text.lower()
            elif lowered == "expect":
                expects_continue = text.lower() == "100-continue"
            environ_key = "HTTP_" + key.upper().replace("-", "_")
            environ[environ_key] = f"{environ[environ_key]},{text}" if environ_key in environ else text
    return connection_tokens, chunked, expects_continue


def _content_length(text: str) -> int:
    if not text:
        return 0
    try:
        length = int(text)
    except ValueError as error:
        raise MalformedRequestError(f"bad Content-Length {text!r}") from error
    if length < 0:
        raise MalformedRequestError(f"bad Content-Length {text!r}")
    return length


_date_cache: tuple[int, str] = (0, "")


def _http_date() -> str:
    global _date_cache
    now = int(time())
    if _date_cache[0] != now:
        _date_cache = (now, formatdate(now, usegmt=True))
    return _date_cache[1]
