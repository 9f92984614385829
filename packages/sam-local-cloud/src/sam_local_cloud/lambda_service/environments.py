"""Execution environments: one Python runtime each, with its Runtime API, pooled per function.

An environment serves one invocation at a time, as Lambda's do. The pool hands out an idle environment or
starts a new one (a cold start), takes it back after the call, and reaps environments idle longer than
the idle timeout. A runtime is forked by its runtime server and runs its init at once (``prepare``); its
stub, started with the first invocation, hands it the environment's streams and variables, and the
Lambda service serves its Runtime API itself (``runtime_api``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sam_local_cloud.credentials import DUMMY_CREDENTIALS
from sam_local_cloud.lambda_service.exit_status import (
    RUNTIME_EXIT_ERROR,
    process_state_text,
    runtime_exit_text,
)
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
from sam_local_cloud.lambda_service.runtime_api import (
    Invocation,
    RuntimeAnswer,
    RuntimeApi,
    RuntimeExitedError,
)
from sam_local_cloud.lambda_service.runtimes import RuntimeBuild
from sam_local_cloud.process_groups import start_session

# AWS gives a cold start's init phase (importing the handler's module) 10 s of its own, before and apart
# from the function timeout. An init that fails or takes longer is stopped, and the first invocation
# starts the runtime again, its init then counting against the function timeout ("Lambda execution
# environment lifecycle", Init phase).
INIT_PHASE_SECONDS = 10.0


class EnvironmentStartError(RuntimeError):
    """The environment's runtime server is not there to start its runtime."""


@dataclass(frozen=True)
class LaunchSettings:
    """What every environment of this service shares."""

    # The local cloud's own Python: what a function runs on when its runtime's Python is not installed
    # and ``runtime_fallback`` allows the substitution (see ``runtimes.RuntimeResolver``).
    python_executable: str
    endpoint_url: str
    region: str
    log_dir: Path
    account_id: str = "123456789012"
    runtime_fallback: bool = False
    # Where built runtime environments are cached; None for ~/.cache/sam-local-cloud/runtimes (and layers'
    # /opt folders beside it, in .../layers).
    runtime_cache_dir: Path | None = None


class Environment:
    """One execution environment: a runtime (behind its stub process) and the Runtime API it polls."""

    def __init__(
        self,
        env_id: str,
        spec: FunctionSpec,
        command: list[str],
        variables: dict[str, str],
        log_path: Path,
        function_arn: str,
        prepared: PreparedRuntime | None = None,
        init_seconds: float | None = None,
    ) -> None:
        self.env_id = env_id
        self.spec = spec
        self.log_path = log_path
        self.function_arn = function_arn
        self.runtime_api = RuntimeApi()
        self._command = command
        self._variables = {**variables, "AWS_LAMBDA_RUNTIME_API": self.runtime_api.address}
        self.process: subprocess.Popen[bytes] | None = None
        # The runtime whose init already ran, until its stub adopts it in the first invocation.
        self.prepared = prepared
        # Reported with the first invocation, as Lambda's REPORT line does after a cold start.
        self._init_seconds = init_seconds
        self.last_used = time.monotonic()
        self.invocations = 0
        self._log_fd: int | None = None

    def invoke(self, payload: bytes, request_id: str) -> RuntimeAnswer:
        """Run one event; raises ``TimeoutError`` past the function's timeout (the runtime still runs)."""
        self.invocations += 1
        started = time.monotonic()
        deadline = started + self.spec.timeout_seconds
        invocation = Invocation(
            request_id, payload, int((time.time() + self.spec.timeout_seconds) * 1000), self.function_arn
        )
        self._log(f"START RequestId: {request_id} Version: {LATEST}\n")
        # The REPORT line's Status: a stub that cannot start (OSError) ends the invocation in error too.
        outcome = "error"
        try:
            if self.process is None:
                self.process = self._start_runtime()
            answer = self.runtime_api.invoke(invocation, deadline)
            outcome = ""
            return answer
        except TimeoutError:
            outcome = "timeout"
            seconds = self.spec.timeout_seconds
            self._log(f"{_timestamp()} {request_id} Task timed out after {seconds:.2f} seconds\n")
            raise
        except RuntimeExitedError as exited:
            document = _exit_document(request_id, exited.returncode)
            return RuntimeAnswer(document, function_error=True, init_failed=True)
        finally:
            self._release_prepared()
            self._log_end(request_id, time.monotonic() - started, outcome)

    def _start_runtime(self) -> subprocess.Popen[bytes]:
        variables = dict(self._variables)
        if self.prepared is None:
            variables.pop(TOKEN_VARIABLE, None)
        with self.log_path.open("ab") as log_file:
            process = start_session(
                self._command,
                cwd=self.spec.code_dir,
                env=variables,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
        self.runtime_api.watch(process)
        return process

    def _log(self, text: str) -> None:
        if self._log_fd is None:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
            self._log_fd = os.open(self.log_path, flags, 0o644)
        with contextlib.suppress(OSError):
            os.write(self._log_fd, text.encode())

    def _log_end(self, request_id: str, seconds: float, outcome: str) -> None:
        """Lambda's END and REPORT lines (the "Lambda function logs" format)."""
        milliseconds = seconds * 1000
        report = (
            f"REPORT RequestId: {request_id}\tDuration: {milliseconds:.2f} ms\t"
            f"Billed Duration: {math.ceil(milliseconds)} ms\tMemory Size: {self.spec.memory_mb} MB\t"
            f"Max Memory Used: {self.spec.memory_mb} MB\t"
        )
        if self._init_seconds is not None:
            report += f"Init Duration: {self._init_seconds * 1000:.2f} ms\t"
            self._init_seconds = None
        if outcome:
            report += f"Status: {outcome}\t"
        if outcome == "error":
            report += f"Error Type: {RUNTIME_EXIT_ERROR}\t"
        self._log(f"END RequestId: {request_id}\n{report}\n")

    def _release_prepared(self) -> None:
        if self.prepared is not None:
            self.prepared.close()
            self.prepared = None

    def kill(self) -> None:
        self._release_prepared()
        if self.process is not None:
            if self.process.poll() is None:
                # The stub leads a session of its own; its end makes the runtime server kill the runtime.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.runtime_api.close()
        if self._log_fd is not None:
            os.close(self._log_fd)
            self._log_fd = None


def _timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _exit_document(request_id: str, returncode: int | None) -> bytes:
    """Lambda's answer for a runtime that ended without answering, its end in Go's words."""
    if returncode is None:
        ended = "signal: killed"
    elif returncode < 0:
        ended = process_state_text(returncode)
    else:
        ended = runtime_exit_text(returncode)
    message = f"RequestId: {request_id} Error: Runtime exited with error: {ended}"
    return json.dumps({"errorType": RUNTIME_EXIT_ERROR, "errorMessage": message}).encode()


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
        "_HANDLER": spec.handler,
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
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
            socket_path = self.fork_server.socket_path()
            started = time.monotonic()
            prepared = self.fork_server.prepare(
                token, variables, self.spec.code_dir, self.spec.handler, log_path
            )
        except ForkServerError as error:
            raise EnvironmentStartError(str(error)) from error
        variables.update({SOCKET_VARIABLE: socket_path, TOKEN_VARIABLE: token})
        settings = self.settings
        function_arn = f"arn:aws:lambda:{settings.region}:{settings.account_id}:function:{self.spec.name}"
        command = self.fork_server.command(self.spec.handler)
        if not prepared.wait_ready(started + INIT_PHASE_SECONDS):
            # Failed or too slow: the first invocation starts a runtime whose init runs inside it.
            prepared.close()
            return Environment(env_id, self.spec, command, variables, log_path, function_arn)
        init_seconds = time.monotonic() - started
        return Environment(
            env_id, self.spec, command, variables, log_path, function_arn, prepared, init_seconds
        )
