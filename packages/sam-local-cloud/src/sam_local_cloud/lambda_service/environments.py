"""Execution environments: one AWS Lambda Runtime Interface Emulator process each, pooled per function.

An environment serves one invocation at a time (the emulator crashes on a second concurrent one, and
that is Lambda's model anyway). The pool hands out an idle environment or starts a new one (a cold
start), takes it back after the call, and reaps environments idle longer than the idle timeout.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import platform
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sam_local_cloud.credentials import DUMMY_CREDENTIALS
from sam_local_cloud.lambda_service.emulator_http import EmulatorConnection
from sam_local_cloud.lambda_service.exit_status import process_state_text
from sam_local_cloud.lambda_service.forkserver import (
    SOCKET_VARIABLE,
    TOKEN_VARIABLE,
    ForkServerError,
    PreparedRuntime,
    RuntimeForkServer,
    read_only_variables,
)
from sam_local_cloud.lambda_service.functions import LATEST, FunctionSpec
from sam_local_cloud.lambda_service.layers import python_layer_dirs
from sam_local_cloud.lambda_service.runtimes import RuntimeBuild
from sam_local_cloud.process_groups import start_session

INVOCATION_PATH = "/2015-03-31/functions/function/invocations"
_STARTUP_ATTEMPTS = 3
# AWS gives a cold start's init phase (importing the handler's module) 10 s of its own, before and apart
# from the function timeout. An init that fails or takes longer is stopped, and the first invocation
# starts the runtime again, its init then counting against the function timeout ("Lambda execution
# environment lifecycle", Init phase).
INIT_PHASE_SECONDS = 10.0
# The emulator enforces the function timeout itself; this margin only guards against a hung emulator.
_READ_TIMEOUT_MARGIN_SECONDS = 10.0
_POLL_INTERVAL_SECONDS = 0.005


class EnvironmentStartError(RuntimeError):
    """The emulator process exited or never accepted connections."""


def find_rie_binary() -> Path:
    """The Runtime Interface Emulator binary shipped inside the aws-sam-cli package, for this machine."""
    spec = importlib.util.find_spec("samcli")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("aws-sam-cli is not installed; it ships the Runtime Interface Emulator")
    architecture = "arm64" if platform.machine().lower() in {"aarch64", "arm64"} else "x86_64"
    binary = (
        Path(next(iter(spec.submodule_search_locations)))
        / "local"
        / "rapid"
        / f"aws-lambda-rie-{architecture}"
    )
    if not os.access(binary, os.X_OK):
        raise FileNotFoundError(f"Runtime Interface Emulator not found or not executable: {binary}")
    return binary


@dataclass(frozen=True)
class LaunchSettings:
    """What every environment of this service shares."""

    rie_binary: Path
    # The local cloud's own Python: what a function runs on when its runtime's Python is not installed
    # and ``runtime_fallback`` allows the substitution (see ``runtimes.RuntimeResolver``).
    python_executable: str
    endpoint_url: str
    region: str
    log_dir: Path
    startup_timeout_seconds: float = 10.0
    runtime_fallback: bool = False
    # Where built runtime environments are cached; None for ~/.cache/sam-local-cloud/runtimes (and layers'
    # /opt folders beside it, in .../layers).
    runtime_cache_dir: Path | None = None


class PortAllocator:
    """Loopback ports for emulators, never the same one to two live environments of this process.

    A port probed free (bound to 0, then closed) can be handed out again by the kernel moments later. If
    two environments got the same port, the second emulator would fail to bind and exit while its
    connection reached the first one: two environments sharing one emulator, whose responses then mix
    (it serves one invocation at a time). Ports stay taken here until their environment is killed.
    """

    def __init__(self) -> None:
        self._taken: set[int] = set()
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            while True:
                port = self._probe()
                if port not in self._taken:
                    self._taken.add(port)
                    return port

    @staticmethod
    def _probe() -> int:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
            return port

    def give_back(self, *ports: int) -> None:
        with self._lock:
            self._taken.difference_update(ports)


PORTS = PortAllocator()


def listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` itself holds the loopback socket listening on ``port`` (Linux; else True).

    The allocator keeps this process's environments apart; another program can still take a probed port
    first. Then the emulator exits, but a connection to the port would reach that program instead.
    """
    # A Go listener on 0.0.0.0 (SAM CLI's container_host_interface for durable functions) is one IPv6
    # socket taking IPv4 too: it is listed in tcp6 only.
    tables = [table for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")) if table.exists()]
    if not tables:
        return True
    listening_inodes = set()
    for table in tables:
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rpartition(":")[2], 16)
            if local_port == port and fields[3] == "0A":  # 0A: LISTEN
                listening_inodes.add(fields[9])
    try:
        for descriptor in Path(f"/proc/{pid}/fd").iterdir():
            target = os.readlink(descriptor)
            if target.startswith("socket:[") and target[8:-1] in listening_inodes:
                return True
    except OSError:
        return False
    return False


class Environment:
    """One running emulator (and the Python runtime it manages) with a kept-alive HTTP connection."""

    def __init__(
        self,
        env_id: str,
        process: subprocess.Popen[bytes],
        connection: EmulatorConnection,
        log_path: Path,
        ports: tuple[int, ...] = (),
        prepared: PreparedRuntime | None = None,
    ) -> None:
        self.env_id = env_id
        self.process = process
        self.connection = connection
        self.log_path = log_path
        self.ports = ports
        # The runtime whose init already ran, until the emulator adopts it in the first invocation.
        self.prepared = prepared
        self.last_used = time.monotonic()
        self.invocations = 0

    def invoke(self, payload: bytes) -> tuple[int, bytes]:
        """POST one event; raises OSError/HTTPException when the emulator is gone or hangs."""
        self.invocations += 1
        try:
            return self.connection.post(INVOCATION_PATH, payload)
        finally:
            self._release_prepared()

    def _release_prepared(self) -> None:
        if self.prepared is not None:
            self.prepared.close()
            self.prepared = None

    def kill(self) -> None:
        self._release_prepared()
        self.connection.close()
        if self.process.poll() is None:
            # The emulator and its runtime share the session (process group) we created for them.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
        PORTS.give_back(*self.ports)


def environment_variables(
    spec: FunctionSpec,
    settings: LaunchSettings,
    log_stream: str,
    build: RuntimeBuild,
    opt_dir: Path | None = None,
) -> dict[str, str]:
    """The process environment Lambda gives a function: its own variables plus the reserved ones.

    Its imports come from its code first, then its requirements' packages (both /var/task on AWS), then
    its layers (``opt_dir``, its /opt: ``python/lib/pythonX.Y/site-packages`` and ``python``), then what
    the runtime ships (the environment's interpreter adds those), in AWS's ``sys.path`` order. The
    runtime server shows those folders to the runtime read-only, as Lambda mounts /var/task and /opt.
    """
    code_dir = str(spec.code_dir.resolve())
    task_dirs = [code_dir, *map(str, build.package_dirs)]
    layer_dirs = [str(folder) for folder in python_layer_dirs(opt_dir, spec.runtime)] if opt_dir else []
    python_path = os.pathsep.join([*task_dirs, *layer_dirs])
    read_only = read_only_variables([Path(folder) for folder in task_dirs] + ([opt_dir] if opt_dir else []))
    reserved: Mapping[str, str] = {
        "AWS_LAMBDA_FUNCTION_NAME": spec.name,
        "AWS_LAMBDA_FUNCTION_TIMEOUT": str(spec.timeout_seconds),
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": LATEST,
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{spec.name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": log_stream,
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{spec.runtime}",
        "AWS_REGION": settings.region,
        "AWS_DEFAULT_REGION": settings.region,
        "AWS_ACCESS_KEY_ID": spec.environment.get(
            "AWS_ACCESS_KEY_ID", DUMMY_CREDENTIALS["aws_access_key_id"]
        ),
        "AWS_SECRET_ACCESS_KEY": spec.environment.get(
            "AWS_SECRET_ACCESS_KEY", DUMMY_CREDENTIALS["aws_secret_access_key"]
        ),
        "AWS_ENDPOINT_URL": settings.endpoint_url,
        "LAMBDA_TASK_ROOT": code_dir,
        "PYTHONPATH": python_path,
        # Unbuffered so every log line reaches the file even when the runtime is killed (timeouts).
        "PYTHONUNBUFFERED": "1",
        # What `sam local` sets: Powertools Tracer then stays off instead of looking for an X-Ray daemon.
        "AWS_SAM_LOCAL": "true",
        # Lambda's PATH ends with /opt/bin: a layer's executables run by name.
        "PATH": os.pathsep.join(
            [os.environ.get("PATH", "/usr/bin:/bin"), *([str(opt_dir / "bin")] if opt_dir else [])]
        ),
        "LANG": "C.UTF-8",
        "TZ": ":UTC",
        **read_only,
    }
    return {**spec.environment, **reserved}


class EnvironmentPool:
    """The warm environments of one function."""

    _ids = itertools.count(1)

    def __init__(
        self,
        spec: FunctionSpec,
        settings: LaunchSettings,
        build: RuntimeBuild,
        fork_server: RuntimeForkServer,
        opt_dir: Path | None = None,
    ) -> None:
        self.spec = spec
        self.settings = settings
        self.build = build
        self.fork_server = fork_server
        self.opt_dir = opt_dir
        self._idle: list[Environment] = []
        self._all: set[Environment] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.started = 0
        self.reaped = 0
        self.evicted = 0
        self.discarded = 0

    def checkout(self) -> tuple[Environment, float | None]:
        """An idle environment (most recently used first) or a new one; with the cold-start seconds if new."""
        with self._lock:
            if self._closed:
                raise EnvironmentStartError("the Lambda service is closed")
            if self._idle:
                return self._idle.pop(), None
        started = time.monotonic()
        environment = self._start()
        with self._lock:
            self.started += 1
            self._all.add(environment)
            if self._closed:
                self._all.discard(environment)
                environment.kill()
                raise EnvironmentStartError("the Lambda service is closed")
        return environment, time.monotonic() - started

    def checkin(self, environment: Environment) -> None:
        environment.last_used = time.monotonic()
        with self._lock:
            if not self._closed:
                self._idle.append(environment)
                return
        environment.kill()

    def discard(self, environment: Environment) -> None:
        with self._lock:
            self._all.discard(environment)
            self.discarded += 1
        environment.kill()

    def reap(self, idle_timeout_seconds: float) -> int:
        deadline = time.monotonic() - idle_timeout_seconds
        with self._lock:
            expired = [env for env in self._idle if env.last_used < deadline]
            self._idle = [env for env in self._idle if env.last_used >= deadline]
            self._all.difference_update(expired)
            self.reaped += len(expired)
        for environment in expired:
            environment.kill()
        return len(expired)

    def size(self) -> int:
        with self._lock:
            return len(self._all)

    def has_idle(self) -> bool:
        with self._lock:
            return bool(self._idle)

    def oldest_idle_since(self) -> float | None:
        """When the least recently used idle environment was last used (None: none idle)."""
        with self._lock:
            return self._idle[0].last_used if self._idle else None

    def evict_oldest_idle(self) -> bool:
        """Stop the least recently used idle environment to make room for another function's."""
        with self._lock:
            if not self._idle:
                return False
            environment = self._idle.pop(0)
            self._all.discard(environment)
            self.evicted += 1
        environment.kill()
        return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            everything = list(self._all)
            self._all.clear()
            self._idle.clear()
        for environment in everything:
            environment.kill()

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {
                "idle": len(self._idle),
                "busy": len(self._all) - len(self._idle),
                "started": self.started,
                "reaped": self.reaped,
                "evicted": self.evicted,
                "discarded": self.discarded,
            }

    def _start(self) -> Environment:
        env_id = f"{next(self._ids):05d}-{uuid.uuid4().hex[:8]}"
        log_stream = f"{datetime.now(UTC):%Y/%m/%d}/[{LATEST}]{uuid.uuid4().hex}"
        log_path = self.settings.log_dir / self.spec.name / f"{env_id}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        variables = environment_variables(self.spec, self.settings, log_stream, self.build, self.opt_dir)
        token = uuid.uuid4().hex
        try:
            # The runtime server's own start (once per runtime environment, a second or two) is no part
            # of any function's init: under load it could eat the whole init budget before init began.
            self.fork_server.socket_path()
            # The init phase starts now, beside the emulator's start-up, on its own clock.
            init_deadline = time.monotonic() + INIT_PHASE_SECONDS
            prepared = self.fork_server.prepare(
                token, variables, self.spec.code_dir, self.spec.handler, log_path
            )
            variables.update({SOCKET_VARIABLE: self.fork_server.socket_path(), TOKEN_VARIABLE: token})
        except ForkServerError as error:
            raise EnvironmentStartError(str(error)) from error
        try:
            process, connection, ports = self._start_emulator(env_id, variables, log_path)
        except BaseException:
            prepared.close()
            raise
        if not prepared.wait_ready(init_deadline):
            # Failed or too slow: the first invocation starts a runtime whose init runs inside it.
            prepared.close()
            return Environment(env_id, process, connection, log_path, ports)
        return Environment(env_id, process, connection, log_path, ports, prepared)

    def _start_emulator(
        self, env_id: str, variables: dict[str, str], log_path: Path
    ) -> tuple[subprocess.Popen[bytes], EmulatorConnection, tuple[int, int]]:
        failure = ""
        for _ in range(_STARTUP_ATTEMPTS):
            try:
                return self._start_emulator_once(env_id, variables, log_path)
            except EnvironmentStartError as error:  # most likely the probed port was taken meanwhile
                failure = str(error)
        raise EnvironmentStartError(failure)

    def _start_emulator_once(
        self, env_id: str, variables: dict[str, str], log_path: Path
    ) -> tuple[subprocess.Popen[bytes], EmulatorConnection, tuple[int, int]]:
        port, runtime_api_port = PORTS.take(), PORTS.take()
        command = [
            str(self.settings.rie_binary),
            "--runtime-interface-emulator-address",
            f"127.0.0.1:{port}",
            # The Runtime API between emulator and runtime defaults to the fixed 127.0.0.1:9001.
            "--runtime-api-address",
            f"127.0.0.1:{runtime_api_port}",
            *self.fork_server.command(self.spec.handler),
        ]
        with log_path.open("ab") as log_file:
            process = start_session(
                command,
                cwd=self.spec.code_dir,
                env=variables,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
        read_timeout = self.spec.timeout_seconds + _READ_TIMEOUT_MARGIN_SECONDS
        deadline = time.monotonic() + self.settings.startup_timeout_seconds
        while True:
            connection = EmulatorConnection("127.0.0.1", port, timeout=read_timeout)
            try:
                connection.connect()
                if listens_on(process.pid, port):
                    return process, connection, (port, runtime_api_port)
            except OSError:
                pass
            connection.close()
            if process.poll() is not None or time.monotonic() > deadline:
                ended = "timed out" if process.returncode is None else process_state_text(process.returncode)
                Environment(env_id, process, connection, log_path, (port, runtime_api_port)).kill()
                raise EnvironmentStartError(
                    f"environment {env_id} of {self.spec.name} did not start ({ended}); see {log_path}"
                )
            time.sleep(_POLL_INTERVAL_SECONDS)
