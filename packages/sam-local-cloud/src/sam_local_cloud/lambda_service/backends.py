"""Where an admitted invocation actually runs: local runtime processes, or an external Lambda endpoint."""

from __future__ import annotations

import base64
import http.client
import json
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, urlsplit

from sam_local_cloud.lambda_service.environments import (
    Environment,
    EnvironmentPool,
    EnvironmentStartError,
    LaunchSettings,
)
from sam_local_cloud.lambda_service.errors import ServiceError
from sam_local_cloud.lambda_service.exit_status import with_lambda_exit_wording
from sam_local_cloud.lambda_service.forkserver import RuntimeForkServer, read_only_supported
from sam_local_cloud.lambda_service.functions import FunctionSpec
from sam_local_cloud.lambda_service.layers import LayerCache, LayerSpec
from sam_local_cloud.lambda_service.runtimes import RuntimeBuild, RuntimeCache, RuntimeResolver

TIMED_OUT_PREFIX = b"Task timed out after"
_ERROR_KEYS = frozenset({"errorType", "errorMessage", "requestId", "stackTrace", "cause"})
_LOG_TAIL_BYTES = 4096
EVICTION_MIN_IDLE_SECONDS = 60.0


@dataclass(frozen=True)
class BackendResult:
    payload: bytes
    function_error: bool = False
    timed_out: bool = False
    cold_start_seconds: float | None = None
    log_tail: bytes | None = None


class Backend(Protocol):
    # Whether faults that act inside the runtime (error_after_body, timeout) reach the runtime shim.
    supports_runtime_faults: bool

    def invoke(
        self,
        spec: FunctionSpec,
        payload: bytes,
        *,
        tail_log: bool = False,
        hold_after_seconds: float = 0.0,
        request_id: str | None = None,
    ) -> BackendResult:
        """Run one invocation; ``request_id`` is the one the runtime sees (the Invoke's, as on AWS)."""
        ...

    def reap(self, idle_timeout_seconds: float) -> None: ...

    def environments(self) -> dict[str, dict[str, int]]: ...

    def close(self) -> None: ...


def is_function_error_payload(body: bytes) -> bool:
    """Whether a 200 body from the runtime is awslambdaric's error document rather than a result.

    An emulator (``sam local start-lambda``) answers both with a plain 200, so the shape decides (as
    ``sam local`` does): the ``errorType``/``errorMessage``/``requestId`` keys and nothing but error keys.
    """
    if not body.startswith(b"{") or b'"errorType"' not in body:
        return False
    try:
        document = json.loads(body)
    except ValueError:
        return False
    return (
        isinstance(document, dict)
        and {"errorType", "errorMessage", "requestId"} <= document.keys()
        and document.keys() <= _ERROR_KEYS
    )


def _runtime_exit_payload(reason: str) -> bytes:
    return json.dumps({"errorType": "Runtime.ExitError", "errorMessage": f"Error: {reason}"}).encode()


class ProcessBackend:
    """Each execution environment is a runtime process of its own (see ``environments``).

    Every function runs on the environment ``sam build`` would give it (``runtimes``): its runtime's
    Python with its requirements and the runtime's own packages, built and resolved for all ``functions``
    at construction, so a missing interpreter fails the start-up, with its layers merged into its own
    /opt folder (``layers``), laid out at construction too. Each runtime environment has its own
    runtime server, which forks runtimes from a warm interpreter (or spawns them, ``fork_runtimes=False``).
    """

    supports_runtime_faults = True

    def __init__(
        self,
        settings: LaunchSettings,
        *,
        fork_runtimes: bool = True,
        max_environments: int | None = None,
        functions: Iterable[FunctionSpec] = (),
    ) -> None:
        self.settings = settings
        # Live environments of all functions together; None for no bound. Busy ones never exceed the
        # concurrency quota, so with a bound at or above it there is always an idle one to stop.
        self.max_environments = max_environments
        self._starting = 0
        self.fork_runtimes = fork_runtimes
        self.runtimes = RuntimeResolver(
            RuntimeCache(settings.runtime_cache_dir),
            fallback=settings.runtime_fallback,
            fallback_python=settings.python_executable,
        )
        # By (runtime, code folder): the requirements.txt there and the runtime decide the environment.
        self._builds: dict[tuple[str, Path], RuntimeBuild] = {}
        self._fork_servers: dict[str, RuntimeForkServer] = {}
        self._pools: dict[str, EnvironmentPool] = {}
        self._lock = threading.Lock()
        cache_dir = settings.runtime_cache_dir
        self.layers = LayerCache(cache_dir.parent / "layers" if cache_dir is not None else None)
        self._opt_dirs: dict[tuple[LayerSpec, ...], Path | None] = {}
        functions = list(functions)
        resolved = self.runtimes.resolve(functions)
        self._builds.update({(spec.runtime, spec.code_dir): resolved[spec.name] for spec in functions})
        for spec in functions:
            self.opt_dir_for(spec)
        if functions and not read_only_supported():
            print(
                "sam-local-cloud: function code stays writable here (a read-only task root takes root or "
                "unprivileged user namespaces); on AWS a write under /var/task or /opt fails with EROFS",
                file=sys.stderr,
                flush=True,
            )

    def opt_dir_for(self, spec: FunctionSpec) -> Path | None:
        """The folder that is ``spec``'s /opt (its layers merged), None without layers."""
        key = tuple(spec.layers)
        if key not in self._opt_dirs:
            self._opt_dirs[key] = self.layers.opt_view(spec.layers)
        return self._opt_dirs[key]

    def build_for(self, spec: FunctionSpec) -> RuntimeBuild:
        """The runtime environment ``spec`` runs on (resolved, and built if need be, on first use)."""
        build = self._builds.get((spec.runtime, spec.code_dir))
        if build is None:
            build = self._builds[(spec.runtime, spec.code_dir)] = self.runtimes.resolve([spec])[spec.name]
        return build

    def fork_server_for(self, spec: FunctionSpec) -> RuntimeForkServer:
        """The runtime server of ``spec``'s runtime environment, shared by all functions on it."""
        build = self.build_for(spec)
        server = self._fork_servers.get(build.key)
        if server is None:
            server = self._fork_servers.setdefault(
                build.key, RuntimeForkServer(build, self.settings.log_dir, spawn=not self.fork_runtimes)
            )
        return server

    def pool(self, spec: FunctionSpec) -> EnvironmentPool:
        pool = self._pools.get(spec.name)
        if pool is not None and pool.spec is spec:
            return pool
        with self._lock:
            pool = self._pools.get(spec.name)
            if pool is None or pool.spec is not spec:
                if pool is not None:  # the function was redefined: its old environments are stale
                    pool.close()
                server = self.fork_server_for(spec)
                pool = self._pools[spec.name] = EnvironmentPool(
                    spec, self.settings, server.build, server, self.opt_dir_for(spec)
                )
            return pool

    def invoke(
        self,
        spec: FunctionSpec,
        payload: bytes,
        *,
        tail_log: bool = False,
        hold_after_seconds: float = 0.0,
        request_id: str | None = None,
    ) -> BackendResult:
        pool = self.pool(spec)
        starting = self.max_environments is not None and not pool.has_idle()
        if starting:
            self._make_room()
        try:
            environment, cold_start_seconds = pool.checkout()
        except EnvironmentStartError as error:
            return BackendResult(_runtime_exit_payload(str(error)), function_error=True)
        finally:
            if starting:
                with self._lock:
                    self._starting -= 1
        log_offset = _file_size(environment) if tail_log else 0
        timed_out = False
        try:
            answer = environment.invoke(payload, request_id or str(uuid.uuid4()))
            body, function_error, keep = answer.body, answer.function_error, not answer.init_failed
        except TimeoutError:
            # Lambda stops a runtime that runs past its timeout: the next invocation starts afresh.
            timed_out, function_error, keep = True, True, False
            body = TIMED_OUT_PREFIX + f" {spec.timeout_seconds}.00 seconds".encode()
        except OSError as error:  # the runtime's stub could not start
            function_error, keep = True, False
            body = _runtime_exit_payload(f"execution environment lost: {error!r}")
        if hold_after_seconds > 0:
            time.sleep(hold_after_seconds)
        log_tail = _read_log_tail(environment, log_offset) if tail_log else None
        if keep:
            pool.checkin(environment)
        else:
            pool.discard(environment)
        return BackendResult(body, function_error, timed_out, cold_start_seconds, log_tail)

    def _make_room(self) -> None:
        """At the bound, a cold start first stops least recently used idle environments of any function.

        Environments still starting count too, so concurrent cold starts cannot overshoot the bound together.
        One used in the last ``EVICTION_MIN_IDLE_SECONDS`` is not stopped: a batch moving between steps
        would otherwise stop and restart the same environments over and over. With one second, a batch
        whose steps took longer than that fed on itself: every cold start slowed the steps, slower steps
        rested their environments past the second, and a 100-order batch at quota 10 cold-started on
        all 400 invocations (4.5 tasks/s instead of 24); ten seconds still let it happen on a machine
        loaded by other work. A minute is far below the idle minutes AWS keeps an environment warm, and
        far above any step's spacing in a running batch. The bound then gives way while a batch runs, and
        ``reap`` (every second) brings the count back to it once environments have rested.
        """
        with self._lock:
            self._evict_rested_beyond((self.max_environments or 0) - 1)
            self._starting += 1

    def _evict_rested_beyond(self, allowed: int) -> None:
        """Stop rested idle environments, least recently used first, while more than ``allowed`` live."""
        pools = list(self._pools.values())
        rested_before = time.monotonic() - EVICTION_MIN_IDLE_SECONDS
        while sum(pool.size() for pool in pools) + self._starting > allowed:
            idle = [(since, pool) for pool in pools if (since := pool.oldest_idle_since()) is not None]
            oldest = min(idle, key=lambda candidate: candidate[0], default=None)
            if oldest is None or oldest[0] > rested_before:
                return
            oldest[1].evict_oldest_idle()

    def reap(self, idle_timeout_seconds: float) -> None:
        for pool in list(self._pools.values()):
            pool.reap(idle_timeout_seconds)
        if self.max_environments is not None:
            # Back down to the bound once the environments a busy moment needed have rested.
            with self._lock:
                self._evict_rested_beyond(self.max_environments)

    def environments(self) -> dict[str, dict[str, int]]:
        return {name: pool.counts() for name, pool in list(self._pools.items())}

    def launch_runtime_servers(self, functions: Iterable[FunctionSpec]) -> None:
        """Starts the runtime server of each environment these functions run on, without waiting: a cold
        start then forks a runtime whose shared imports are loaded, from the first Invoke on."""
        for spec in functions:
            self.fork_server_for(spec).launch()

    def close(self) -> None:
        with self._lock:
            pools = list(self._pools.values())
            servers = list(self._fork_servers.values())
        for pool in pools:
            pool.close()
        for server in servers:
            server.close()


def _file_size(environment: Environment) -> int:
    try:
        return environment.log_path.stat().st_size
    except OSError:
        return 0


def _read_log_tail(environment: Environment, offset: int) -> bytes:
    try:
        with environment.log_path.open("rb") as log:
            log.seek(offset)
            return log.read()[-_LOG_TAIL_BYTES:]
    except OSError:
        return b""


class RemoteBackend:
    """Forwards invocations to an external Lambda endpoint, such as ``sam local start-lambda``."""

    supports_runtime_faults = False

    def __init__(self, endpoint_url: str, read_timeout_margin_seconds: float = 10.0) -> None:
        parts = urlsplit(endpoint_url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError(f"lambda_endpoint must be an http(s) URL, got {endpoint_url!r}")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._margin = read_timeout_margin_seconds
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._invocations: dict[str, int] = {}

    def invoke(
        self,
        spec: FunctionSpec,
        payload: bytes,
        *,
        tail_log: bool = False,
        hold_after_seconds: float = 0.0,
        request_id: str | None = None,
    ) -> BackendResult:
        # The endpoint gives its runtime a request ID of its own.
        del request_id
        headers = {"Content-Type": "application/json", "X-Amz-Invocation-Type": "RequestResponse"}
        if tail_log:
            headers["X-Amz-Log-Type"] = "Tail"
        path = f"/2015-03-31/functions/{quote(spec.name, safe='')}/invocations"
        timeout = spec.timeout_seconds + self._margin
        try:
            with self._connection(timeout) as (connection, reused):
                try:
                    response = _post(connection, path, payload, headers)
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                    if not reused:
                        raise
                    connection.close()  # a kept-alive connection the server had closed: one fresh attempt
                    response = _post(connection, path, payload, headers)
                body = response.read()
        except (OSError, http.client.HTTPException) as error:
            raise ServiceError(f"Lambda endpoint unreachable: {error!r}") from error
        self._invocations[spec.name] = self._invocations.get(spec.name, 0) + 1
        error_header = bool(response.getheader("X-Amz-Function-Error"))
        if response.status >= 300 and not error_header:
            raise ServiceError(f"Lambda endpoint answered {response.status}: {body[:500]!r}")
        # Endpoints differ in how they report a timeout: a bare message or an error document naming it.
        timed_out = body.startswith(TIMED_OUT_PREFIX) or (error_header and b"Task timed out" in body[:300])
        body = with_lambda_exit_wording(body)
        function_error = error_header or timed_out or is_function_error_payload(body)
        if hold_after_seconds > 0:
            time.sleep(hold_after_seconds)
        encoded_log = response.getheader("X-Amz-Log-Result")
        log_tail = base64.b64decode(encoded_log) if encoded_log else None
        return BackendResult(body, function_error, timed_out, None, log_tail)

    @contextmanager
    def _connection(self, timeout: float) -> Iterator[tuple[http.client.HTTPConnection, bool]]:
        with self._lock:
            connection = self._idle.pop() if self._idle else None
        reused = connection is not None
        if connection is None:
            factory = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            connection = factory(self._host, self._port)
        connection.timeout = timeout
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        try:
            yield connection, reused
        except BaseException:
            connection.close()
            raise
        with self._lock:
            self._idle.append(connection)

    def reap(self, idle_timeout_seconds: float) -> None:
        """Nothing to reap: the external endpoint manages its own environments."""

    def environments(self) -> dict[str, dict[str, int]]:
        return {name: {"forwarded": count} for name, count in self._invocations.items()}

    def close(self) -> None:
        with self._lock:
            connections, self._idle = self._idle, []
        for connection in connections:
            connection.close()


def _post(
    connection: http.client.HTTPConnection, path: str, payload: bytes, headers: dict[str, str]
) -> http.client.HTTPResponse:
    connection.request("POST", path, body=payload, headers=headers)
    return connection.getresponse()
