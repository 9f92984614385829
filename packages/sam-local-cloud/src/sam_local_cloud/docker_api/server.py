"""The Docker Engine API subset SAM CLI uses for Lambda, served on a unix socket and optionally TCP.

Every path is served with or without its version prefix (``/v1.35/containers/create``, as docker-py
sends it). Errors are Docker's: an HTTP status with ``{"message": ...}``. ``attach`` upgrades the
connection and writes the container's multiplexed output on the raw socket, as dockerd does.

Every call is recorded (``calls``) with the route it matched and its status, and can be printed as it
happens (``log_calls``): the list of calls a SAM CLI command makes is what docs/sam-local.md shows.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import logging
import os
import re
import socket
import socketserver
import tempfile
import threading
import time
import traceback
from base64 import b64encode
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from werkzeug.exceptions import MethodNotAllowed, NotFound
from werkzeug.routing import Map, Rule

from sam_local_cloud.docker_api.containers import Container, ContainerStore
from sam_local_cloud.docker_api.errors import ApiError, bad_request
from sam_local_cloud.docker_api.events import EventLog, check_filters
from sam_local_cloud.docker_api.execution import ExecutionEnvironments
from sam_local_cloud.docker_api.images import ImageStore, host_architecture
from sam_local_cloud.docker_api.networks import Networks
from sam_local_cloud.docker_api.streams import (
    LAST_CHUNK,
    STDERR,
    STDOUT,
    chunk,
    copy_body,
    frame,
    json_line,
)
from sam_local_cloud.runtime_forkserver import peer_closed

if TYPE_CHECKING:
    from email.message import Message
    from io import BufferedIOBase

API_VERSION = "1.45"
MIN_API_VERSION = "1.24"
ENGINE_VERSION = "25.0.0-sam-local-cloud"
_VERSION_PREFIX = re.compile(r"^/v\d+\.\d+(?=/)")
_ROUTE_ARGUMENT = re.compile(r"<(?:\w+:)?(\w+)>")
_SPOOL_BYTES = 8 << 20
# docker-py reads an attach stream straight from the socket once it has read the response headers
# through a buffered reader; bytes sent with the headers can land in that buffer and be lost to it.
# Replayed output waits this long after the headers.
_ATTACH_REPLAY_DELAY_SECONDS = 0.1
LOG = logging.getLogger(__name__)

ROUTES = Map(
    [
        Rule("/_ping", endpoint="ping", methods=["GET", "HEAD"]),
        Rule("/version", endpoint="version", methods=["GET"]),
        Rule("/info", endpoint="info", methods=["GET"]),
        Rule("/events", endpoint="events", methods=["GET"]),
        Rule("/images/json", endpoint="image_list", methods=["GET"]),
        Rule("/images/create", endpoint="image_pull", methods=["POST"]),
        Rule("/images/<path:name>/json", endpoint="image_inspect", methods=["GET"]),
        Rule("/images/<path:name>/tag", endpoint="image_tag", methods=["POST"]),
        Rule("/images/<path:name>", endpoint="image_remove", methods=["DELETE"]),
        Rule("/distribution/<path:name>/json", endpoint="distribution", methods=["GET"]),
        Rule("/build", endpoint="build", methods=["POST"]),
        Rule("/containers/json", endpoint="container_list", methods=["GET"]),
        Rule("/containers/create", endpoint="container_create", methods=["POST"]),
        Rule("/containers/<id>/json", endpoint="container_inspect", methods=["GET"]),
        Rule("/containers/<id>/start", endpoint="container_start", methods=["POST"]),
        Rule("/containers/<id>/stop", endpoint="container_stop", methods=["POST"]),
        Rule("/containers/<id>/kill", endpoint="container_kill", methods=["POST"]),
        Rule("/containers/<id>/wait", endpoint="container_wait", methods=["POST"]),
        Rule("/containers/<id>/attach", endpoint="container_attach", methods=["POST"]),
        Rule("/containers/<id>/logs", endpoint="container_logs", methods=["GET"]),
        Rule("/containers/<id>/archive", endpoint="archive_get", methods=["GET", "HEAD"]),
        Rule("/containers/<id>/archive", endpoint="archive_put", methods=["PUT"]),
        Rule("/containers/<id>", endpoint="container_remove", methods=["DELETE"]),
        Rule("/networks", endpoint="network_list", methods=["GET"]),
        Rule("/networks/create", endpoint="network_create", methods=["POST"]),
        Rule("/networks/<id>", endpoint="network_inspect", methods=["GET"]),
        Rule("/networks/<id>/connect", endpoint="network_connect", methods=["POST"]),
        Rule("/networks/<id>/disconnect", endpoint="network_disconnect", methods=["POST"]),
        Rule("/networks/<id>", endpoint="network_remove", methods=["DELETE"]),
    ],
    strict_slashes=False,
)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: Message
    rfile: BufferedIOBase  # the connection's buffered reader
    args: dict[str, str] = field(default_factory=dict)
    _body_read: bool = False

    def param(self, name: str, default: str = "") -> str:
        values = self.query.get(name)
        return values[-1] if values else default

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.param(name, "")
        return default if value == "" else value.lower() in {"1", "true", "yes"}

    def filters(self) -> dict[str, list[str]]:
        """Docker's ``filters`` parameter: {"key": ["value"]} or the older {"key": {"value": true}}."""
        raw = self.param("filters")
        if not raw:
            return {}
        try:
            document = json.loads(raw)
        except json.JSONDecodeError:
            raise bad_request(f"invalid filters: {raw}") from None
        return {key: list(values) for key, values in document.items()}

    def json(self) -> dict[str, Any]:
        with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as body:
            self.copy_body(body)
            body.seek(0)
            data = body.read()
        if not data.strip():
            return {}
        try:
            document = json.loads(data)
        except json.JSONDecodeError as error:
            raise bad_request(f"invalid JSON body: {error}") from None
        if not isinstance(document, dict):
            raise bad_request("the body must be a JSON object")
        return document

    def copy_body(self, target: IO[bytes]) -> None:
        if not self._body_read:
            self._body_read = True
            copy_body(self.rfile, self.headers, target)

    def drain(self) -> None:
        """Read what the endpoint left unread, so the next request on this connection starts clean."""
        if not self._body_read:
            with open(os.devnull, "wb") as sink:
                self.copy_body(sink)


@dataclass
class Reply:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    # A chunked body, written as it is produced; None is a heartbeat: nothing to send, is the client there?
    stream: Iterable[bytes | None] | None = None
    # An upgraded connection: called with a writer once the 101 is sent; the connection closes after.
    hijack: Callable[[Callable[[bytes], None]], None] | None = None


def json_reply(status: int, document: object) -> Reply:
    return Reply(status, json.dumps(document).encode())


def empty(status: int = 204) -> Reply:
    return Reply(status, content_type="")


@dataclass(frozen=True)
class Call:
    method: str
    route: str  # the matched route, e.g. "POST /containers/{id}/start"
    status: int
    seconds: float

    def __str__(self) -> str:
        return f"{self.route} -> {self.status} ({self.seconds * 1000:.0f} ms)"


class DockerApi:
    """The endpoints; no HTTP in here beyond the Request and Reply shapes."""

    def __init__(
        self,
        state_dir: Path,
        environments: ExecutionEnvironments,
        *,
        log_calls: Callable[[Call], None] | None = None,
    ) -> None:
        self.events = EventLog()
        self.images = ImageStore(state_dir / "images", self.events.publish)
        self.networks = Networks()
        self.containers = ContainerStore(self.images, environments, state_dir, publish=self.events.publish)
        self.environments = environments
        self.calls: list[Call] = []
        self.log_calls = log_calls
        self.stopping = threading.Event()
        self._calls_lock = threading.Lock()

    def handle(self, request: Request) -> Reply:
        started = time.monotonic()
        route = f"{request.method} {request.path}"
        try:
            rule, arguments = ROUTES.bind("localhost").match(
                request.path, method=request.method, return_rule=True
            )
            request.args = dict(arguments)
            route = request.method + " " + _ROUTE_ARGUMENT.sub(r"{\1}", rule.rule)
            handler: Callable[[Request], Reply] = getattr(self, f"_{rule.endpoint}")
            reply = handler(request)
        except NotFound:
            reply = json_reply(404, {"message": "page not found"})
        except MethodNotAllowed:
            reply = json_reply(405, {"message": f"method {request.method} not allowed on {request.path}"})
        except ApiError as error:
            reply = json_reply(error.status, {"message": error.message})
        except Exception as error:
            LOG.error("%s failed:\n%s", route, traceback.format_exc())
            reply = json_reply(500, {"message": f"{type(error).__name__}: {error}"})
        self._record(Call(request.method, route, reply.status, time.monotonic() - started))
        return reply

    def _record(self, call: Call) -> None:
        with self._calls_lock:
            self.calls.append(call)
        if self.log_calls is not None:
            self.log_calls(call)

    def close(self) -> None:
        self.stopping.set()
        self.containers.close()
        self.environments.close()

    # -- system -------------------------------------------------------------------------------------

    def _ping(self, request: Request) -> Reply:
        headers = {"Api-Version": API_VERSION, "Docker-Experimental": "false", "Ostype": "linux"}
        return Reply(200, b"" if request.method == "HEAD" else b"OK", "text/plain; charset=utf-8", headers)

    def _version(self, request: Request) -> Reply:
        return json_reply(
            200,
            {
                "Platform": {"Name": "sam-local-cloud (Docker Engine API subset for SAM CLI)"},
                "Version": ENGINE_VERSION,
                "ApiVersion": API_VERSION,
                "MinAPIVersion": MIN_API_VERSION,
                "Os": "linux",
                "Arch": host_architecture(),
                "KernelVersion": os.uname().release,
                "Components": [{"Name": "Engine", "Version": ENGINE_VERSION, "Details": {}}],
            },
        )

    def _info(self, request: Request) -> Reply:
        containers = self.containers.summaries(include_stopped=True, filters={})
        return json_reply(
            200,
            {
                "ID": "sam-local-cloud",
                "Containers": len(containers),
                "ContainersRunning": sum(1 for c in containers if c["State"] == "running"),
                "Images": len(self.images.summaries({})),
                "Driver": "sam-local-cloud",
                "OperatingSystem": "sam-local-cloud execution environments",
                "OSType": "linux",
                "Architecture": os.uname().machine,
                "ServerVersion": ENGINE_VERSION,
                "NCPU": os.cpu_count() or 1,
            },
        )

    def _events(self, request: Request) -> Reply:
        filters = request.filters()
        check_filters(filters)
        since = float(request.param("since")) if request.param("since") else None
        until = float(request.param("until")) if request.param("until") else None
        events = self.events.follow(filters, since=since, until=until, stop=self.stopping)
        return Reply(200, stream=(None if event is None else json_line(event) for event in events))

    # -- images -------------------------------------------------------------------------------------

    def _image_list(self, request: Request) -> Reply:
        filters = request.filters()
        if request.param("filter"):
            filters.setdefault("reference", []).append(request.param("filter"))
        return json_reply(200, self.images.summaries(filters))

    def _image_inspect(self, request: Request) -> Reply:
        return json_reply(200, self.images.get(request.args["name"]).inspect())

    def _image_pull(self, request: Request) -> Reply:
        if request.param("fromSrc"):
            raise bad_request("importing images is not supported: only the Lambda Python base images exist")
        repository, tag = request.param("fromImage"), request.param("tag") or "latest"
        if ":" in repository.rsplit("/", 1)[-1] and not request.param("tag"):
            repository, _, tag = repository.rpartition(":")
        lines = self.images.pull(repository, tag)
        return Reply(200, stream=(json_line(line) for line in lines))

    def _image_tag(self, request: Request) -> Reply:
        image = self.images.get(request.args["name"])
        repository, tag = request.param("repo"), request.param("tag") or "latest"
        if not repository:
            raise bad_request("repository name is required")
        self.images.tag(image, f"{repository}:{tag}")
        return empty(201)

    def _image_remove(self, request: Request) -> Reply:
        removed = self.images.remove(
            request.args["name"], force=request.flag("force"), in_use=self.containers.uses_image
        )
        return json_reply(200, removed)

    def _distribution(self, request: Request) -> Reply:
        return json_reply(200, self.images.distribution(request.args["name"]))

    def _build(self, request: Request) -> Reply:
        if request.param("remote"):
            raise bad_request("remote build contexts are not supported: send the context as a tar body")
        with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as context:
            request.copy_body(context)
            context.seek(0)
            lines = self.images.build(
                context,
                tags=[tag for tag in request.query.get("t", []) if tag],
                dockerfile=request.param("dockerfile") or "Dockerfile",
                target_platform=request.param("platform"),
            )
        return Reply(200, stream=(json_line(line) for line in lines))

    # -- containers ---------------------------------------------------------------------------------

    def _container_list(self, request: Request) -> Reply:
        containers = self.containers.summaries(include_stopped=request.flag("all"), filters=request.filters())
        return json_reply(200, containers)

    def _container_create(self, request: Request) -> Reply:
        body = request.json()
        network_mode = (body.get("HostConfig") or {}).get("NetworkMode") or "bridge"
        if network_mode == "default":
            network_mode = "bridge"
        # Another container's network namespace ("container:<id>") is this machine's loopback too.
        network = None if network_mode.startswith("container:") else self.networks.get(network_mode)
        container = self.containers.create(body, request.param("name") or None)
        if network is not None:
            endpoint = self.networks.connect(network["Id"], container.id, container.name)
            container.networks[network["Name"]] = endpoint
        return json_reply(201, {"Id": container.id, "Warnings": []})

    def _container_inspect(self, request: Request) -> Reply:
        return json_reply(200, self.containers.get(request.args["id"]).inspect())

    def _container_start(self, request: Request) -> Reply:
        return empty(204 if self.containers.start(request.args["id"]) else 304)

    def _container_stop(self, request: Request) -> Reply:
        timeout = float(request.param("t") or request.param("timeout") or 10)
        return empty(204 if self.containers.stop(request.args["id"], timeout) else 304)

    def _container_kill(self, request: Request) -> Reply:
        self.containers.kill(request.args["id"], request.param("signal") or "SIGKILL")
        return empty()

    def _container_wait(self, request: Request) -> Reply:
        return json_reply(200, self.containers.wait(request.args["id"], request.param("condition")))

    def _container_remove(self, request: Request) -> Reply:
        container = self.containers.get(request.args["id"])
        self.containers.remove(container.id, force=request.flag("force"))
        self.networks.forget(container.id)
        return empty()

    def _container_attach(self, request: Request) -> Reply:
        container = self.containers.get(request.args["id"])
        streams = _wanted_streams(request)
        replay, follow = request.flag("logs"), request.flag("stream")

        def attach(write: Callable[[bytes], None]) -> None:
            if replay and container.output.records():
                time.sleep(_ATTACH_REPLAY_DELAY_SECONDS)
            for data in _output(container, streams, replay=replay, follow=follow, stop=self.stopping):
                write(data)

        upgrade = "upgrade" in (request.headers.get("Connection") or "").lower()
        content_type = (
            "application/vnd.docker.raw-stream"
            if container.config.tty
            else "application/vnd.docker.multiplexed-stream"
        )
        headers = {"Connection": "Upgrade", "Upgrade": "tcp"} if upgrade else {}
        return Reply(101 if upgrade else 200, content_type=content_type, headers=headers, hijack=attach)

    def _container_logs(self, request: Request) -> Reply:
        container = self.containers.get(request.args["id"])
        streams = _wanted_streams(request)
        timestamps, tail = request.flag("timestamps"), request.param("tail") or "all"
        content_type = (
            "application/vnd.docker.raw-stream"
            if container.config.tty
            else "application/vnd.docker.multiplexed-stream"
        )
        if request.flag("follow"):
            pieces = _output(
                container, streams, replay=True, follow=True, stop=self.stopping, timestamps=timestamps
            )
            return Reply(200, content_type=content_type, stream=pieces)
        records = [record for record in container.output.records() if record.stream in streams]
        if tail != "all":
            records = records[-int(tail) :] if int(tail) > 0 else []
        body = b"".join(
            _encode(container, record.stream, record.data, record.timestamp, timestamps) for record in records
        )
        return Reply(200, body, content_type)

    def _archive_get(self, request: Request) -> Reply:
        archive, stat_document = self.containers.get_archive(request.args["id"], request.param("path"))
        headers = {"X-Docker-Container-Path-Stat": b64encode(json.dumps(stat_document).encode()).decode()}
        body = b"" if request.method == "HEAD" else archive
        return Reply(200, body, "application/x-tar", headers)

    def _archive_put(self, request: Request) -> Reply:
        with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as archive:
            request.copy_body(archive)
            archive.seek(0)
            self.containers.put_archive(request.args["id"], request.param("path"), archive)
        return empty(200)

    # -- networks -----------------------------------------------------------------------------------

    def _network_list(self, request: Request) -> Reply:
        return json_reply(200, self.networks.all())

    def _network_inspect(self, request: Request) -> Reply:
        return json_reply(200, self.networks.get(request.args["id"]))

    def _network_create(self, request: Request) -> Reply:
        return json_reply(201, self.networks.create(request.json()))

    def _network_connect(self, request: Request) -> Reply:
        body = request.json()
        container = self.containers.get(body.get("Container") or "")
        network = self.networks.get(request.args["id"])
        endpoint = self.networks.connect(network["Id"], container.id, container.name)
        container.networks[network["Name"]] = endpoint
        return empty(200)

    def _network_disconnect(self, request: Request) -> Reply:
        body = request.json()
        container = self.containers.get(body.get("Container") or "")
        network = self.networks.get(request.args["id"])
        self.networks.disconnect(network["Id"], container.id)
        container.networks.pop(network["Name"], None)
        return empty(200)

    def _network_remove(self, request: Request) -> Reply:
        self.networks.remove(request.args["id"])
        return empty()


def _wanted_streams(request: Request) -> frozenset[int]:
    wanted = {STDOUT} if request.flag("stdout") else set()
    if request.flag("stderr"):
        wanted.add(STDERR)
    return frozenset(wanted)


def _encode(container: Container, stream: int, data: bytes, timestamp: float, timestamps: bool) -> bytes:
    if timestamps:
        seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(timestamp))
        data = f"{seconds}.{int(timestamp % 1 * 1e9):09d}Z ".encode() + data
    return data if container.config.tty else frame(stream, data)


def _output(
    container: Container,
    streams: frozenset[int],
    *,
    replay: bool,
    follow: bool,
    stop: threading.Event,
    timestamps: bool = False,
) -> Iterator[bytes]:
    if not follow:
        records = [record for record in container.output.records() if record.stream in streams]
        for record in records if replay else []:
            yield _encode(container, record.stream, record.data, record.timestamp, timestamps)
        return
    for record in container.output.follow(replay=replay, streams=streams, stop=stop):
        yield _encode(container, record.stream, record.data, record.timestamp, timestamps)


# -- HTTP ------------------------------------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sam-local-cloud-docker"
    api: DockerApi  # set on the subclass each server makes

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: object) -> None:
        """Calls are recorded by the API (with the route they matched), not as access log lines."""

    def _serve(self) -> None:
        parsed = urlsplit(self.path)
        request = Request(
            method=self.command,
            path=_VERSION_PREFIX.sub("", parsed.path),
            query=parse_qs(parsed.query, keep_blank_values=True),
            headers=self.headers,
            rfile=self.rfile,
        )
        reply = self.api.handle(request)
        try:
            request.drain()
            self._send(reply, request.method)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send(self, reply: Reply, method: str) -> None:
        self.send_response(reply.status)
        if reply.content_type:
            self.send_header("Content-Type", reply.content_type)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Api-Version", API_VERSION)
        if reply.hijack is not None:
            self.end_headers()
            self.wfile.flush()
            self.close_connection = True
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                reply.hijack(self._write_now)
            return
        if reply.stream is not None:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in reply.stream:
                if piece is None:
                    if peer_closed(self.connection):
                        self.close_connection = True
                        return
                    continue
                self._write_now(chunk(piece))
            self._write_now(LAST_CHUNK)
            return
        if reply.status not in {204, 304} and not (100 <= reply.status < 200):
            self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if method != "HEAD" and reply.body:
            self.wfile.write(reply.body)

    def _write_now(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()


# SAM CLI opens many connections at once (each start-lambda invocation pings, inspects, creates,
# attaches): socketserver's backlog of 5 refused the rest of a burst of ten (a unix socket connect
# then fails with EAGAIN, which SAM CLI reports as "requires a container runtime"). dockerd listens
# with the system's maximum.
_LISTEN_BACKLOG = socket.SOMAXCONN
SOCKET_MODE = 0o600


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = _LISTEN_BACKLOG

    def server_bind(self) -> None:
        super().server_bind()
        # Whoever can connect can run any process as this user, as with dockerd's socket: the owner only.
        # Set after bind and before listen, so no one connects in between.
        os.chmod(str(self.server_address), SOCKET_MODE)


class _TcpServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = _LISTEN_BACKLOG


class DockerApiServer:
    """The API on a unix socket (``DOCKER_HOST=unix://PATH``) and, optionally, TCP (``tcp://HOST:PORT``)."""

    def __init__(
        self, api: DockerApi, *, socket_path: Path | None = None, tcp: tuple[str, int] | None = None
    ) -> None:
        if socket_path is None and tcp is None:
            raise ValueError("serve on a unix socket, TCP or both")
        self.api = api
        self.socket_path = socket_path
        handler = type("DockerApiHandler", (_Handler,), {"api": api})
        self._servers: list[socketserver.BaseServer] = []
        if socket_path is not None:
            if socket_path.is_socket():
                socket_path.unlink()  # left by a server that was killed
            socket_path.parent.mkdir(parents=True, exist_ok=True)
            self._servers.append(_UnixServer(str(socket_path), handler))
        if tcp is not None:
            self._servers.append(_TcpServer(tcp, handler))
        self._threads: list[threading.Thread] = []

    @property
    def tcp_address(self) -> tuple[str, int] | None:
        for server in self._servers:
            if isinstance(server, _TcpServer):
                host, port = server.server_address[:2]
                return str(host), int(port)
        return None

    def docker_hosts(self) -> list[str]:
        hosts = [f"unix://{self.socket_path}"] if self.socket_path is not None else []
        if self.tcp_address is not None:
            hosts.append(f"tcp://{self.tcp_address[0]}:{self.tcp_address[1]}")
        return hosts

    def start(self) -> DockerApiServer:
        for server in self._servers:
            thread = threading.Thread(target=server.serve_forever, name="docker-api", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def close(self) -> None:
        """Stop serving and stop every process a container started."""
        self.api.close()
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=10)
        if self.socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()

    def __enter__(self) -> DockerApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
