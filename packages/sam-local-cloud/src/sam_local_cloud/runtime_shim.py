"""The program every local Lambda runtime runs: awslambdaric on the function's real handler, as on AWS.

Run by path with the function's handler, in one of two ways:

    python runtime_shim.py module.handler
        a runtime that starts inside an invocation (its init counts against the function timeout);
    python runtime_shim.py --prepared CHANNEL_FD REPORT_FD module.handler
        a runtime prepared before its emulator asks for it: it imports the handler's module (the init
        phase, on its own clock as on AWS), writes ``ready`` to REPORT_FD, then waits on the CHANNEL_FD
        socket for the emulator's environment and standard streams (see ``runtime_forkserver.py``).

awslambdaric itself imports the handler's module and reports a failed import exactly as AWS does
(``Runtime.ImportModuleError``). Two things are added inside it:

- faults the local Lambda service injects arrive as a directive under ``FAULT_EVENT_KEY`` in the
  event, named by its fault kind (``DIRECTIVES`` has the kinds the runtime acts on, by the names of the
  service's ``FAULT_KINDS``); the key is always removed before the real handler runs. A ``crash``
  kills this process (SIGKILL, as a Lambda timeout or an out-of-memory kills the runtime) at a point
  of the invocation:
  before the body, before or after its N-th AWS call, before or after the first durable-execution
  checkpoint that carries a given operation update (a checkpoint boundary, whichever call number it
  gets in that replay), as the handler returns, or as the finished response is sent. ``record_calls``
  logs every AWS call the invocation makes, one JSON line each (``CALL_LOG_KEY``), so the crash
  points of a function can be enumerated from a real run;
- an unhandled error's ``stackTrace`` shows the function's files under /var/task and its layers' under
  /opt, where AWS has them, and no frame of this module.

Standard library only: it runs on whatever Python the function's runtime is.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

FAULT_EVENT_KEY = "__sam_local_cloud_fault__"
# Keys of the directive besides ``kind`` (the kind's name, as in ``DIRECTIVES``).
RECORD_CALLS_FLAG = "record_calls"  # also log the AWS calls, whatever the kind
ONCE_MARKER = "once_marker"
TAG = "tag"
BATCH = "batch"
# Where a timeout strikes (``phase``); before_body is also a crash point.
AFTER_BODY = "after_body"

# Crash points: where in the invocation the runtime is killed.
BEFORE_BODY = "before_body"
AFTER_CALL = "after_call"  # after_call:N, once the N-th AWS call of the invocation has answered
BEFORE_CALL = "before_call"  # before_call:N, before the N-th AWS call is sent
BEFORE_RESPONSE = "before_response"  # the handler returned; its response was not serialised yet
RESPONSE_LOST = "response_lost"  # the response was serialised and is being sent to the Runtime API
# A durable function's checkpoint boundaries: before the CheckpointDurableExecution call that first
# carries the crash rule's operation update is sent, and once it has answered. The rule's ``call`` names
# the update (``lambda.CheckpointDurableExecution@<operation Id>:<Action>``): replays number their calls
# differently, but the SDK's operation IDs are the same in every replay.
BEFORE_CHECKPOINT = "before_checkpoint"
AFTER_CHECKPOINT = "after_checkpoint"
NUMBERED_POINTS = frozenset({AFTER_CALL, BEFORE_CALL})
CHECKPOINT_POINTS = frozenset({BEFORE_CHECKPOINT, AFTER_CHECKPOINT})
PLAIN_POINTS = frozenset({BEFORE_BODY, BEFORE_RESPONSE, RESPONSE_LOST, *CHECKPOINT_POINTS})
CHECKPOINT_OPERATION = "CheckpointDurableExecution"
CHECKPOINT_UPDATES = "checkpoint"  # a recorded call's key: the "<Id>:<Action>" of each update it carries
# Keys of the JSON lines written to the environment's log.
CALL_LOG_KEY = "sam_local_cloud_aws_call"
CRASH_LOG_KEY = "sam_local_cloud_crash"
# Powertools idempotency's DynamoDB record: its INPROGRESS status and in-progress expiry attribute.
POWERTOOLS_IN_PROGRESS = "INPROGRESS"
POWERTOOLS_IN_PROGRESS_EXPIRY = "in_progress_expiration"
# Next to a ``once`` marker: the first invocation of the key has taken the no-time-left turn.
NO_TIME_LEFT_SUFFIX = ".no-time-left"

PREPARED_FLAG = "--prepared"
READY = b"ready\n"
TASK_ROOT_ON_AWS = "/var/task"
OPT_ON_AWS = "/opt"
# A function's /opt folder is ``.../opt`` (lambda_service.layers), its Python layers under ``python``.
OPT_FOLDER = "opt"
OPT_PYTHON_FOLDER = "python"
STREAMS = 3
# Sleeping this long past the remaining time guarantees the emulator's timeout kills us first.
_PAST_DEADLINE_SECONDS = 5.0
_ADOPTION_MESSAGE_BYTES = 1 << 20

Handler = Callable[[Any, Any], Any]


def _injected_error(error_type: str, message: str) -> Exception:
    # awslambdaric reports type(error).__name__ as errorType, so the class is named after the wanted type.
    error_class = type(error_type, (Exception,), {"__module__": __name__})
    return error_class(message)


def _sleep_past_deadline(context: Any) -> None:
    time.sleep(context.get_remaining_time_in_millis() / 1000 + _PAST_DEADLINE_SECONDS)


def parse_crash_point(point: str) -> tuple[str, int]:
    """``after_call:3`` -> (``after_call``, 3); ``before_body`` -> (``before_body``, 0)."""
    where, separator, number = point.partition(":")
    if where in NUMBERED_POINTS and number.isdigit() and int(number) >= 1:
        return where, int(number)
    if where in PLAIN_POINTS and not separator:
        return where, 0
    raise ValueError(
        f"unknown crash point {point!r}; expected {BEFORE_BODY}, {AFTER_CALL}:N, {BEFORE_CALL}:N, "
        f"{BEFORE_CHECKPOINT}, {AFTER_CHECKPOINT}, {BEFORE_RESPONSE} or {RESPONSE_LOST} (N counts the "
        "invocation's AWS calls from 1)"
    )


def _log_line(document: Mapping[str, object]) -> None:
    # Unbuffered: the line must be in the log before a SIGKILL that may follow at once.
    os.write(2, (json.dumps(document, default=str) + "\n").encode())


class Invocation:
    """One invocation's instruction: where to crash and whether to log its AWS calls."""

    def __init__(self, fault: dict[str, Any], event: dict[str, Any]) -> None:
        self.crash_at = parse_crash_point(str(fault["point"])) if "point" in fault else None
        self.expected_call = str(fault.get("call") or "")
        self.once_marker = fault.get(ONCE_MARKER)
        self.record = bool(fault.get(RECORD_CALLS_FLAG))
        self.no_time_left = bool(fault.get("no_time_left")) and self._first_to_run_late()
        self.drop_in_progress_expiry = self.no_time_left and bool(fault.get("drop_in_progress_expiry"))
        self.overrun_seconds = float(fault.get("overrun_seconds") or 0) if self.no_time_left else 0.0
        # Whose invocation this is, in every log line: the order key its attempts count by, and the batch.
        self.labels = {
            "function": _function_name(),
            "tag": fault.get(TAG),
            # The service names the batch when the event does not carry it (a durable replay's).
            "batch_id": fault.get(BATCH) or event.get("batch_id"),
        }
        self.calls = 0

    def _first_to_run_late(self) -> bool:
        """Only the first invocation of a ``once`` rule's key runs out of time: its retries and a racing
        duplicate get their full time, as fresh invocations on Lambda do."""
        if not self.once_marker:
            return True
        try:
            marker = f"{self.once_marker}{NO_TIME_LEFT_SUFFIX}"
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            return False
        return True

    def crash(self, where: str, number: int = 0, call: dict[str, Any] | None = None) -> None:
        if self.crash_at != (where, number):
            return
        if self.expected_call and (call is None or not call_matches(call, self.expected_call)):
            return  # this invocation took another path: its N-th call is not the point's
        if self.once_marker:
            try:
                os.close(os.open(self.once_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except FileExistsError:
                return  # another runtime crashed here first for this order
        point = f"{where}:{number}" if number else where
        _log_line({CRASH_LOG_KEY: point, "call": call, **self.labels})
        os.kill(os.getpid(), signal.SIGKILL)

    def calling(self, call: dict[str, Any]) -> None:
        self.crash(BEFORE_CALL, call["number"], call)
        if CHECKPOINT_UPDATES in call:
            self.crash(BEFORE_CHECKPOINT, 0, call)

    def called(self, call: dict[str, Any]) -> None:
        if self.record:
            _log_line({CALL_LOG_KEY: call, **self.labels})
        self.crash(AFTER_CALL, call["number"], call)
        if CHECKPOINT_UPDATES in call and not call.get("error"):
            self.crash(AFTER_CHECKPOINT, 0, call)


# One invocation at a time per runtime, as on Lambda.
_current: Invocation | None = None


def call_matches(call: dict[str, Any], expected: str) -> bool:
    """Whether a call is ``service.Operation[:table+table][!ErrorCode][@OperationId:Action]`` (an error
    code only if given; with ``@``, a durable checkpoint carrying that operation update)."""
    expected, _, update = expected.partition("@")
    if update and update not in (call.get(CHECKPOINT_UPDATES) or ()):
        return False
    head, _, error = expected.partition("!")
    name, _, tables = head.partition(":")
    if f"{call.get('service')}.{call.get('operation')}" != name or (call.get("error") or "") != error:
        return False
    return not tables or sorted(tables.split("+")) == sorted(call.get("tables") or ())


def _function_name() -> str:
    return os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")


def _status_written(operation: str, params: dict[str, Any]) -> str | None:
    """The ``status`` attribute a DynamoDB write sets, if any: what tells the writes of a table apart."""
    if operation == "PutItem" or "Item" in params:
        value = (params.get("Item") or {}).get("status") or {}
        return value.get("S") if isinstance(value, dict) else None
    names = params.get("ExpressionAttributeNames") or {}
    expression = params.get("UpdateExpression") or ""
    for placeholder, name in names.items():
        if name != "status":
            continue
        assigned = re.search(re.escape(placeholder) + r"\s*=\s*(:\w+)", expression)
        if assigned:
            value = (params.get("ExpressionAttributeValues") or {}).get(assigned.group(1)) or {}
            return value.get("S") if isinstance(value, dict) else None
    return None


def describe_call(service: str, operation: str, params: dict[str, Any], number: int) -> dict[str, Any]:
    """What the recording keeps of one AWS call: no item contents, only where it went and what it set."""
    call: dict[str, Any] = {"number": number, "service": service, "operation": operation}
    writes = []
    for action in params.get("TransactItems") or ():
        for verb, request in action.items():
            writes.append(
                {"action": verb, "table": request.get("TableName"), "status": _status_written(verb, request)}
            )
    if writes:
        call["writes"] = writes
        call["tables"] = sorted({write["table"] for write in writes if write["table"]})
    elif params.get("TableName"):
        call["tables"] = [params["TableName"]]
        call["status"] = _status_written(operation, params)
    elif params.get("Bucket"):
        call["bucket"] = params["Bucket"]
    if operation == CHECKPOINT_OPERATION:
        updates = [update for update in params.get("Updates") or () if isinstance(update, dict)]
        call[CHECKPOINT_UPDATES] = [checkpoint_update_key(update) for update in updates]
        # What names each update in a report: its type, name and parent (IDs are hashes).
        named = ("Id", "ParentId", "Type", "SubType", "Name", "Action")
        call["operations"] = [{key: update[key] for key in named if key in update} for update in updates]
    return call


def checkpoint_update_key(update: Mapping[str, object]) -> str:
    """``<operation Id>:<Action>``: one operation update of a durable checkpoint, the same in every replay."""
    return f"{update.get('Id')}:{update.get('Action')}"


def _observe_aws_calls() -> None:
    """Route every botocore call of this runtime through the current invocation's instruction (once)."""
    from botocore.client import BaseClient

    original = BaseClient._make_api_call  # type: ignore[attr-defined]
    if getattr(original, "_sam_local_cloud_observed", False):
        return

    def make_api_call(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
        invocation = _current
        if invocation is None:
            return original(client, operation_name, api_params)
        invocation.calls += 1
        service = client.meta.service_model.service_name
        if invocation.drop_in_progress_expiry:
            api_params = _without_in_progress_expiry(operation_name, api_params)
        call = describe_call(service, operation_name, api_params, invocation.calls)
        invocation.calling(call)
        try:
            result = original(client, operation_name, api_params)
        except Exception as error:
            response = getattr(error, "response", None) or {}
            call["error"] = (response.get("Error") or {}).get("Code") or type(error).__name__
            invocation.called(call)
            raise
        invocation.called(call)
        if invocation.overrun_seconds and call.get("status") == POWERTOOLS_IN_PROGRESS:
            time.sleep(invocation.overrun_seconds)
        return result

    make_api_call._sam_local_cloud_observed = True  # type: ignore[attr-defined]
    BaseClient._make_api_call = make_api_call  # type: ignore[attr-defined]


def _without_in_progress_expiry(operation_name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Powertools' INPROGRESS write without its in-progress expiry: what Powertools before the
    powertools-lambda-python #4759 fix wrote when the context reported 0 ms left (it tested the remaining
    time for truth, not for None), so the record blocks its key until the full idempotency expiry."""
    item = params.get("Item")
    if operation_name != "PutItem" or _status_written(operation_name, params) != POWERTOOLS_IN_PROGRESS:
        return params
    if not isinstance(item, dict) or POWERTOOLS_IN_PROGRESS_EXPIRY not in item:
        return params
    stripped = {name: value for name, value in item.items() if name != POWERTOOLS_IN_PROGRESS_EXPIRY}
    return {**params, "Item": stripped}


def _crash_as_the_response_is_sent() -> None:
    """awslambdaric posts the serialised result to the Runtime API: a RESPONSE_LOST crash dies there."""
    from awslambdaric.lambda_runtime_client import LambdaRuntimeClient

    post = LambdaRuntimeClient.post_invocation_result

    def post_invocation_result(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _current is not None:
            _current.crash(RESPONSE_LOST)
        return post(self, *args, **kwargs)

    LambdaRuntimeClient.post_invocation_result = post_invocation_result


class Directive:
    """What the runtime does for one fault kind, around the real handler; the service names the kind."""

    # Whether the invocation's AWS calls are observed (for crash points and recording).
    observes_calls = False

    def before_body(self, fault: dict[str, Any], context: Any) -> None:
        """Before the real handler runs."""

    def after_body(self, fault: dict[str, Any], context: Any) -> None:
        """After the real handler returned, before its result goes back."""


class _Crash(Directive):
    observes_calls = True  # the crash itself fires from the Invocation's points


class _RecordCalls(Directive):
    observes_calls = True


class _Timeout(Directive):
    def before_body(self, fault: dict[str, Any], context: Any) -> None:
        if fault.get("phase") == BEFORE_BODY:
            _sleep_past_deadline(context)

    def after_body(self, fault: dict[str, Any], context: Any) -> None:
        if fault.get("phase", AFTER_BODY) == AFTER_BODY:
            _sleep_past_deadline(context)


class _ErrorAfterBody(Directive):
    def after_body(self, fault: dict[str, Any], context: Any) -> None:
        raise _injected_error(fault.get("error_type", "InjectedFaultError"), fault.get("error_message", ""))


# The fault kinds the runtime has a part in, by the names of the service's FAULT_KINDS registry.
DIRECTIVES: dict[str, Directive] = {
    "crash": _Crash(),
    "record_calls": _RecordCalls(),
    "timeout": _Timeout(),
    "error_after_body": _ErrorAfterBody(),
}


# Set by the local cloud when asked to measure (the benchmark): a folder where each runtime keeps the CPU
# time its handler's thread spent, boto3's client side included, and its invocations.
HANDLER_CPU_VARIABLE = "SAM_LOCAL_CLOUD_HANDLER_CPU_DIR"


def measuring_cpu(real_handler: Handler) -> Handler:
    """The handler, with its own CPU time written down after each call when the local cloud asks for it:
    the part of a task AWS would run too, against which the local cloud's own cost is measured."""
    totals = [0.0, 0]
    # Named on first use, in the runtime's own process: unique even when a process ID is used again.
    record: list[str] = []

    def handler(event: Any, context: Any) -> Any:
        folder = os.environ.get(HANDLER_CPU_VARIABLE)
        if not folder:
            return real_handler(event, context)
        started = time.thread_time()
        try:
            return real_handler(event, context)
        finally:
            totals[0] += time.thread_time() - started
            totals[1] += 1
            if not record:
                record.append(os.path.join(folder, f"{os.getpid()}-{time.time_ns()}"))
            with open(record[0], "w") as file:
                file.write(f"{totals[0]:.6f} {totals[1]}\n")

    return handler


def with_faults(real_handler: Handler) -> Handler:
    """The real handler behind the fault directives of the local Lambda service."""
    real_handler = measuring_cpu(real_handler)

    def handler(event: Any, context: Any) -> Any:
        global _current
        fault = event.pop(FAULT_EVENT_KEY, None) if isinstance(event, dict) else None
        _current = None
        if not fault:
            return real_handler(event, context)
        directive = DIRECTIVES[fault["kind"]]
        if directive.observes_calls or fault.get(RECORD_CALLS_FLAG):
            _observe_aws_calls()
            _current = Invocation(fault, event)
            if _current.no_time_left:
                # What a Lambda context reports between its deadline and the kill (never negative).
                context.get_remaining_time_in_millis = lambda: 0
            _current.crash(BEFORE_BODY)
        directive.before_body(fault, context)
        result = real_handler(event, context)
        if _current is not None:
            _current.crash(BEFORE_RESPONSE)
        directive.after_body(fault, context)
        return result

    return handler


def _aws_folders() -> list[tuple[str, str]]:
    """(local folder, where AWS has it), longest first: the code and its packages (LAMBDA_TASK_ROOT and
    PYTHONPATH) are /var/task; a layer folder on PYTHONPATH (``<...>/opt/python``, ``<...>/opt/python/lib/
    pythonX.Y/site-packages``, laid out by the local Lambda service) is under /opt."""
    entries = [os.environ.get("LAMBDA_TASK_ROOT", ""), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    folders: dict[str, str] = {}
    for entry in filter(None, entries):
        real = os.path.realpath(entry)
        parts = real.split(os.sep)
        opt_at = [at for at in range(len(parts) - 1) if parts[at : at + 2] == [OPT_FOLDER, OPT_PYTHON_FOLDER]]
        if opt_at:
            folders.setdefault(os.sep.join(parts[: opt_at[-1] + 1]), OPT_ON_AWS)
        else:
            folders.setdefault(real, TASK_ROOT_ON_AWS)
    return sorted(folders.items(), key=lambda folder: len(folder[0]), reverse=True)


def as_on_aws(filename: str, folders: list[tuple[str, str]]) -> str:
    """A file under one of the task or layer folders, named as it is on AWS: /var/task/... or /opt/..."""
    real = os.path.realpath(filename)
    for folder, on_aws in folders:
        if real.startswith(folder + os.sep):
            return on_aws + "/" + os.path.relpath(real, folder)
    return filename


def _report_frames_as_on_aws(bootstrap: Any) -> None:
    """awslambdaric builds ``stackTrace`` from ``extract_traceback``: drop our frames, rename the task's."""
    extract = getattr(bootstrap, "extract_traceback", None)
    if extract is None:
        return
    own_file = os.path.realpath(__file__)
    folders = _aws_folders()

    def extract_traceback(tb: Any) -> list[tuple[Any, ...]]:
        frames = [frame for frame in extract(tb) if os.path.realpath(frame[0]) != own_file]
        return [(as_on_aws(frame[0], folders), *frame[1:]) for frame in frames]

    bootstrap.extract_traceback = extract_traceback


def run(handler_name: str) -> None:
    """Run awslambdaric on the real handler, with the fault instructions and AWS's frame names added."""
    from awslambdaric import __main__ as awslambdaric_main
    from awslambdaric import bootstrap

    get_handler = bootstrap._get_handler
    bootstrap._get_handler = lambda name: with_faults(get_handler(name))
    _crash_as_the_response_is_sent()
    _report_frames_as_on_aws(bootstrap)
    awslambdaric_main.main(["awslambdaric", handler_name])


def initialize(handler_name: str, report_fd: int) -> None:
    """The init phase ahead of the emulator: import the handler's module, then say ``ready``.

    A failed import only ends this process: the invocation then starts a fresh runtime whose init, inside
    the invocation, fails the same way and is reported by awslambdaric, as AWS retries a failed init.
    """
    module_name = handler_name.rpartition(".")[0].replace("/", ".")
    if not module_name:
        os._exit(1)  # no module to import: awslambdaric's Runtime.MalformedHandlerName, at each invoke
    try:
        importlib.import_module(module_name)
    except BaseException:
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    with contextlib.suppress(OSError):
        os.write(report_fd, READY)
    os.close(report_fd)


def adopt(channel_fd: int) -> None:
    """Wait for the emulator's runtime process to hand over its environment, directory and streams."""
    channel = socket.socket(fileno=channel_fd)
    message, fds, _flags, _address = socket.recv_fds(channel, _ADOPTION_MESSAGE_BYTES, STREAMS)
    if not message:
        os._exit(0)  # the local cloud let this runtime go unused
    request = json.loads(message)
    for number, fd in enumerate(fds[:STREAMS]):
        os.dup2(fd, number)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    channel.close()


def _forget_own_folder() -> None:
    """Run by path, Python put this file's folder (the local cloud's own modules) first on sys.path."""
    own_folder = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.realpath(entry or ".") != own_folder]


def main(argv: list[str]) -> None:
    _forget_own_folder()
    if len(argv) == 5 and argv[1] == PREPARED_FLAG:
        channel_fd, report_fd, handler_name = int(argv[2]), int(argv[3]), argv[4]
        initialize(handler_name, report_fd)
        adopt(channel_fd)
    elif len(argv) == 2:
        handler_name = argv[1]
    else:
        raise SystemExit(f"usage: {argv[0]} [{PREPARED_FLAG} CHANNEL_FD REPORT_FD] module.handler")
    run(handler_name)


if __name__ == "__main__":
    main(sys.argv)
