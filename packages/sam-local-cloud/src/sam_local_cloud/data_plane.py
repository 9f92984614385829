"""The data plane: DynamoDB served from a process of its own, beside the local cloud's main process.

One Python process under one GIL carried everything: the Step Functions interpreter, the Lambda service's
accounting, IAM and every DynamoDB call every handler makes (four to six per task). The data plane moves
DynamoDB to a second process, so the two share the machine's cores instead of one of them.

- **One owner for every table.** The worker holds all of moto's DynamoDB state. Conditional writes and
  transactions stay atomic exactly as before: the same per-table locks (``dynamodb.TableLocks``) around
  the same moto backend, only in another process.
- **One endpoint for the user.** Every DynamoDB request that reaches the local cloud's endpoint (the
  AWS CLI, boto3, the Step Functions interpreter's DynamoDB Tasks, the deployer) is forwarded to the worker
  over a kept-alive connection, IAM having been checked on the way in. Functions take the short way:
  their environments get ``AWS_ENDPOINT_URL_DYNAMODB`` (the SDKs' service-specific endpoint variable),
  and the worker checks their signatures against the template's roles itself.
- **Write counts** for the benchmark are kept where the writes are, and read with ``writes()``; the CPU
  each operation's requests took in the worker, with ``request_cpu()``.

The worker is ``python -m sam_local_cloud.data_plane``; it reports its port on its standard output
and exits when its standard input closes, so it never outlives the local cloud.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

from sam_local_cloud.accounts import MOTO_ACCOUNT_ENVIRON_KEY
from sam_local_cloud.dynamodb import RequestCpu, TableLocks, WriteCounter
from sam_local_cloud.served_paths import HEALTH_PATH

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from sam_local_cloud.iam import IamEnforcer, StackRoles
    from sam_local_cloud.iam.signatures import SignatureVerifier
    from sam_local_cloud.moto_seam.backends import AccountSnapshot

# Requests the main process forwards carry this header with the worker's secret: IAM was checked there.
CHECKED_HEADER = "X-Sam-Local-Cloud-Checked"
_CHECKED_ENVIRON_KEY = "HTTP_" + CHECKED_HEADER.upper().replace("-", "_")
WRITES_PATH = "/_sam_local_cloud/dynamodb-writes"
# The tables as deployed and seeded are kept (POST) and put back (PUT) here: the local cloud's reset().
DEPLOYED_STATE_PATH = "/_sam_local_cloud/dynamodb-deployed-state"
TARGET_PREFIXES = ("DynamoDB_", "DynamoDBStreams_")
_START_TIMEOUT_SECONDS = 60.0
_BACKLOG = 128
# Headers that belong to one hop, or that the main process's own server sets again.
_NOT_FORWARDED = frozenset({"connection", "keep-alive", "transfer-encoding", "date", "server"})


def handles(target: str) -> bool:
    """Whether a request with this ``X-Amz-Target`` belongs to the data plane."""
    return target.startswith(TARGET_PREFIXES)


class DataPlaneError(RuntimeError):
    pass


class _WorkerArguments(TypedDict):
    """What the main process hands the worker, as JSON in its environment."""

    roles: str | None  # the file of the roles document; None: IAM is off
    region: str
    account_id: str
    iam_report: str | None
    host: str
    secret: str
    known_credentials: dict[str, str] | None
    unknown_key_hint: str
    listener_fd: NotRequired[int]


class DataPlane:
    """The main process's side: starts the worker, forwards requests to it, stops it."""

    def __init__(
        self,
        *,
        roles: StackRoles | None,
        region: str,
        account_id: str,
        work_dir: Path,
        iam_report: Path | None = None,
        host: str = "127.0.0.1",
        known_credentials: Mapping[str, str] | None = None,
        unknown_key_hint: str = "",
    ) -> None:
        """``roles``: what the worker checks direct callers' calls against (None: IAM is off). They are
        handed down as the main process built them, in a file of ``work_dir``: translating the template
        again took the worker half a second of CPU at every start. ``known_credentials``: the keys besides
        the issued ones whose signatures the worker accepts from direct callers; None: signatures are not
        checked."""
        self._secret = secrets.token_hex(16)
        roles_path = None
        if roles is not None:
            # Imported here: the worker, which imports this module too, needs IAM only when it is on.
            from sam_local_cloud.iam import roles_document

            work_dir.mkdir(parents=True, exist_ok=True)
            roles_path = work_dir / "data-plane-roles.json"
            roles_path.write_text(json.dumps(roles_document(roles)))
        arguments: _WorkerArguments = {
            "roles": str(roles_path) if roles_path is not None else None,
            "region": region,
            "account_id": account_id,
            "iam_report": str(iam_report) if iam_report is not None else None,
            "host": host,
            "secret": self._secret,
            "known_credentials": dict(known_credentials) if known_credentials is not None else None,
            "unknown_key_hint": unknown_key_hint,
        }
        self.host = host
        # The listening socket is made here and handed down: the endpoint is known at once (the functions'
        # environments need it), and a request sent before the worker is serving waits in the backlog.
        listener = socket.create_server((host, 0), backlog=_BACKLOG)
        self._port: int = listener.getsockname()[1]
        arguments["listener_fd"] = listener.fileno()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "sam_local_cloud.data_plane"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**os.environ, "SAM_LOCAL_CLOUD_DATA_PLANE": json.dumps(arguments)},
                pass_fds=(listener.fileno(),),
            )
        finally:
            # The worker holds its own copy: once it is gone, a caller is refused instead of left waiting.
            listener.close()
        self._started = False
        self._local = threading.local()

    @property
    def pid(self) -> int:
        return self._process.pid

    def wait_started(self, timeout_seconds: float = _START_TIMEOUT_SECONDS) -> None:
        """Wait until the worker serves (it loads the template and moto: a second or two); its failure to
        start is raised here with the worker's own words."""
        if self._started:
            return
        assert self._process.stdout is not None
        found: list[str] = []
        reader = threading.Thread(target=lambda: found.append(self._process.stdout.readline().decode()))  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout_seconds)
        line = found[0] if found else ""
        try:
            reported = int(json.loads(line)["port"])
        except (ValueError, KeyError, TypeError) as error:
            self.stop()
            raise DataPlaneError(
                f"the DynamoDB data plane did not start (exit code {self._process.poll()}): {line!r}"
            ) from error
        if reported != self._port:
            self.stop()
            raise DataPlaneError(f"the DynamoDB data plane serves port {reported}, not {self._port}")
        self._started = True

    @property
    def endpoint(self) -> str:
        """Known from the start: requests sent before the worker serves are answered once it does."""
        return f"http://{self.host}:{self._port}"

    def forward(self, environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        """Answer a request that reached the main endpoint with the worker's answer, byte for byte."""
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        headers = {
            name[5:].replace("_", "-").title(): value
            for name, value in environ.items()
            if name.startswith("HTTP_") and name not in ("HTTP_CONNECTION", "HTTP_HOST")
        }
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        headers[CHECKED_HEADER] = self._secret
        path = environ.get("PATH_INFO") or "/"
        if environ.get("QUERY_STRING"):
            path += "?" + environ["QUERY_STRING"]
        status, reason, response_headers, answer = self._request(
            environ.get("REQUEST_METHOD", "POST"), path, body, headers
        )
        start_response(
            f"{status} {reason}",
            [(name, value) for name, value in response_headers if name.lower() not in _NOT_FORWARDED],
        )
        return [answer]

    def writes(self) -> tuple[Counter[str], Counter[str]]:
        """Write requests and write request units by operation, since the worker started."""
        status, _, _, body = self._request("GET", WRITES_PATH, b"", {CHECKED_HEADER: self._secret})
        if status != 200:
            raise DataPlaneError(f"the data plane answered {status} for its write counts")
        document = json.loads(body)
        return Counter(document["requests"]), Counter(document["units"])

    def keep_deployed_state(self) -> None:
        """Keep the tables, their items and settings as they are now, for ``restore_deployed_state``."""
        self._admin("POST", DEPLOYED_STATE_PATH)

    def restore_deployed_state(self) -> None:
        """Tables back as kept (tables made since are gone), and the write counts back to zero."""
        self._admin("PUT", DEPLOYED_STATE_PATH)

    def _admin(self, method: str, path: str) -> None:
        status, _, _, body = self._request(method, path, b"", {CHECKED_HEADER: self._secret})
        if status != 200:
            raise DataPlaneError(f"the data plane answered {status} to {method} {path}: {body[:200]!r}")

    def request_cpu(self) -> dict[str, tuple[float, int]]:
        """CPU seconds and requests by kind of request (``RequestCpu``), since the worker started."""
        status, _, _, body = self._request("GET", WRITES_PATH, b"", {CHECKED_HEADER: self._secret})
        if status != 200:
            raise DataPlaneError(f"the data plane answered {status} for its request counts")
        return {kind: (seconds, count) for kind, (seconds, count) in json.loads(body)["cpu"].items()}

    def _request(
        self, method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        # Never sent twice: the worker may have applied a write whose answer was lost. A failure reaches the
        # caller as a 500, which the SDKs retry as they retry DynamoDB's own.
        connection = self._connection()
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.reason, response.getheaders(), response.read()
        except (ConnectionError, http.client.HTTPException):
            connection.close()
            self._local.connection = None
            raise

    def _connection(self) -> http.client.HTTPConnection:
        """One kept-alive connection per forwarding thread."""
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(self.host, self._port, timeout=120)
            self._local.connection = connection
        return connection

    def stop(self) -> None:
        if self._process.poll() is None:
            if self._process.stdin is not None:
                self._process.stdin.close()  # the worker exits when its standard input closes
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


# ---------------------------------------------------------------------------------------------- worker
class DataPlaneApp:
    """The worker's WSGI application: IAM for direct callers, table locks, moto's DynamoDB."""

    def __init__(
        self,
        dynamodb_app: WSGIApplication,
        *,
        iam: IamEnforcer | None,
        secret: str,
        signatures: SignatureVerifier | None = None,
        account_id: str | None = None,
    ) -> None:
        self._dynamodb_app = dynamodb_app
        self._account_id = account_id
        self._deployed_state: AccountSnapshot | None = None
        self._iam = iam
        self._signatures = signatures
        self._secret = secret
        self._locks = TableLocks()
        self._writes = WriteCounter()
        self._cpu = RequestCpu()

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        started = time.thread_time()
        answer = self._answer(environ, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target:
            body = environ["wsgi.input"].getvalue() if isinstance(environ["wsgi.input"], io.BytesIO) else b""
            self._cpu.record(RequestCpu.kind(target.rpartition(".")[2], body), time.thread_time() - started)
        return answer

    def _answer(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        forwarded = environ.get("HTTP_" + CHECKED_HEADER.upper().replace("-", "_")) == self._secret
        if path == HEALTH_PATH:
            return _answer(start_response, "200 OK", b'{"status": "serving"}')
        if path == DEPLOYED_STATE_PATH and forwarded and self._account_id is not None:
            return self._deployed_state_answer(environ.get("REQUEST_METHOD", ""), start_response)
        if path == WRITES_PATH and forwarded:
            requests, units = self._writes.snapshot()
            counts = {"requests": requests, "units": units, "cpu": self._cpu.snapshot()}
            document = json.dumps(counts).encode()
            return _answer(start_response, "200 OK", document)
        if not forwarded and self._signatures is not None:
            signature_refusal = self._signatures.refuse(environ, start_response)
            if signature_refusal is not None:
                return signature_refusal
        if not forwarded and self._iam is not None:
            refusal = self._iam.refuse(environ, start_response)
            if refusal is not None:
                return refusal
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        operation = target.rpartition(".")[2]
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        if self._account_id is not None:
            # The tables are the cloud's account's, whatever key a function signs with.
            environ[MOTO_ACCOUNT_ENVIRON_KEY] = self._account_id
        self._writes.record(operation, body)
        with self._locks.holding(operation, body):
            # Consumed here, under the locks: moto's answer is computed while the iterable is built.
            return list(self._dynamodb_app(environ, start_response))

    def _deployed_state_answer(self, method: str, start_response: StartResponse) -> list[bytes]:
        from sam_local_cloud.moto_seam.backends import restore_account, snapshot_account

        assert self._account_id is not None
        if method == "POST":
            self._deployed_state = snapshot_account(self._account_id)
        elif method == "PUT" and self._deployed_state is not None:
            restore_account(self._deployed_state)
            self._writes.clear()
        else:
            return _answer(start_response, "409 Conflict", b'{"message": "no deployed state is kept"}')
        return _answer(start_response, "200 OK", b"{}")


def _answer(start_response: StartResponse, status: str, body: bytes) -> list[bytes]:
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _moto_dynamodb_app() -> WSGIApplication:
    """moto's own DynamoDB application, found once (moto infers it per request under a global lock)."""
    from sam_local_cloud.moto_seam.services import DomainDispatcherApplication, create_backend_app

    dispatcher = DomainDispatcherApplication(create_backend_app)
    apps: dict[str, WSGIApplication] = {}
    lock = threading.Lock()

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        service = environ.get("HTTP_X_AMZ_TARGET", "").partition(".")[0]
        found = apps.get(service)
        if found is None:
            with lock:
                found = apps.setdefault(service, dispatcher.get_application(environ))
        return found(environ, start_response)

    return app


def _serve(arguments: _WorkerArguments) -> None:
    from sam_local_cloud.dynamodb_service import DynamoDBApp
    from sam_local_cloud.iam import IamEnforcer, roles_from_document
    from sam_local_cloud.iam.signatures import SignatureVerifier, secrets_of
    from sam_local_cloud.lean_wsgi import LeanWsgiServer
    from sam_local_cloud.moto_seam.installers import (
        install_dynamodb,
        install_model_registry,
        install_request_caches,
        install_shared_sdk_session,
    )
    from sam_local_cloud.protocol_guard import ProtocolGuard

    logging.getLogger("moto").setLevel(logging.CRITICAL)
    # This process serves DynamoDB only: Step Functions' and EventBridge's hooks are the local cloud's.
    install_dynamodb()
    install_request_caches()
    install_model_registry()
    install_shared_sdk_session()
    iam = None
    if arguments["roles"] is not None:
        roles = roles_from_document(json.loads(Path(arguments["roles"]).read_text()))
        iam_report = arguments.get("iam_report")
        report = Path(iam_report) if iam_report else None
        iam = IamEnforcer(
            roles, region=arguments["region"], account_id=arguments["account_id"], report_to=report
        )
    signatures = None
    known_credentials = arguments.get("known_credentials")
    if iam is not None and known_credentials is not None:
        signatures = SignatureVerifier(
            secrets_of(known_credentials, iam.identity),
            unknown_key_hint=arguments.get("unknown_key_hint", ""),
        )
    secret = arguments["secret"]
    guarded = ProtocolGuard(
        DynamoDBApp(_moto_dynamodb_app()),
        checked_before=lambda environ: environ.get(_CHECKED_ENVIRON_KEY) == secret,
    )
    app = DataPlaneApp(
        guarded, iam=iam, secret=secret, signatures=signatures, account_id=arguments["account_id"]
    )
    # Every request is a short JSON call on a kept-alive loopback connection (lean_wsgi says why).
    listener = socket.socket(fileno=arguments["listener_fd"])
    server = LeanWsgiServer(arguments["host"], 0, app, listener=listener)
    threading.Thread(target=server.serve_forever, name="data-plane", daemon=True).start()
    if not _report({"port": server.server_port}):
        return  # the local cloud stopped before we served (its own start failed): nothing to say
    # The local cloud holds our standard input: when it closes (a stop, or the local cloud's death), go.
    sys.stdin.buffer.read()
    server.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description="the local cloud's DynamoDB data plane (started by it)")
    parser.parse_args()
    arguments = json.loads(os.environ.pop("SAM_LOCAL_CLOUD_DATA_PLANE"))
    try:
        _serve(arguments)
    except Exception as error:  # reported on the line the local cloud reads, instead of a port
        _report({"error": f"{type(error).__name__}: {error}"})
        return 1
    return 0


def _report(line: Mapping[str, str | int]) -> bool:
    """Writes the line the local cloud reads; False if it no longer listens (it stopped during our start)."""
    try:
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):  # ValueError: the stream is closed
        # What is still buffered would fail again, loudly, when the interpreter flushes it at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
