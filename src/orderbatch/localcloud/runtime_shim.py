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

- faults the local Lambda service injects arrive as an instruction under ``FAULT_EVENT_KEY`` in the
  event; the key is always removed before the real handler runs;
- an unhandled error's ``stackTrace`` shows the function's files under /var/task, where AWS has them,
  and no frame of this module.

Standard library only: it runs on whatever Python the function's runtime is.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

FAULT_EVENT_KEY = "__orderbatch_fault__"
ERROR_AFTER_BODY = "error_after_body"
TIMEOUT_BEFORE_BODY = "timeout_before_body"
TIMEOUT_AFTER_BODY = "timeout_after_body"

PREPARED_FLAG = "--prepared"
READY = b"ready\n"
TASK_ROOT_ON_AWS = "/var/task"
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


def with_faults(real_handler: Handler) -> Handler:
    """The real handler behind the fault instructions of the local Lambda service."""

    def handler(event: Any, context: Any) -> Any:
        fault = event.pop(FAULT_EVENT_KEY, None) if isinstance(event, dict) else None
        if not fault:
            return real_handler(event, context)
        kind = fault.get("kind")
        if kind == TIMEOUT_BEFORE_BODY:
            _sleep_past_deadline(context)
        result = real_handler(event, context)
        if kind == TIMEOUT_AFTER_BODY:
            _sleep_past_deadline(context)
        if kind == ERROR_AFTER_BODY:
            raise _injected_error(
                fault.get("error_type", "InjectedFaultError"), fault.get("error_message", "")
            )
        return result

    return handler


def _task_dirs() -> list[str]:
    """The folders AWS would have in /var/task: the code (LAMBDA_TASK_ROOT) and its packages (PYTHONPATH)."""
    entries = [os.environ.get("LAMBDA_TASK_ROOT", ""), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return sorted({os.path.realpath(entry) for entry in entries if entry}, key=len, reverse=True)


def as_on_aws(filename: str, task_dirs: list[str]) -> str:
    """A file under one of the task folders, named as it is on AWS: /var/task/<relative path>."""
    real = os.path.realpath(filename)
    for folder in task_dirs:
        if real.startswith(folder + os.sep):
            return TASK_ROOT_ON_AWS + "/" + os.path.relpath(real, folder)
    return filename


def _report_frames_as_on_aws(bootstrap: Any) -> None:
    """awslambdaric builds ``stackTrace`` from ``extract_traceback``: drop our frames, rename the task's."""
    extract = getattr(bootstrap, "extract_traceback", None)
    if extract is None:
        return
    own_file = os.path.realpath(__file__)
    task_dirs = _task_dirs()

    def extract_traceback(tb: Any) -> list[tuple[Any, ...]]:
        frames = [frame for frame in extract(tb) if os.path.realpath(frame[0]) != own_file]
        return [(as_on_aws(frame[0], task_dirs), *frame[1:]) for frame in frames]

    bootstrap.extract_traceback = extract_traceback


def run(handler_name: str) -> None:
    """Run awslambdaric on the real handler, with the fault instructions and AWS's frame names added."""
    from awslambdaric import __main__ as awslambdaric_main
    from awslambdaric import bootstrap

    get_handler = bootstrap._get_handler
    bootstrap._get_handler = lambda name: with_faults(get_handler(name))
    _report_frames_as_on_aws(bootstrap)
    awslambdaric_main.main(["awslambdaric", handler_name])


def initialize(handler_name: str, report_fd: int) -> None:
    """The init phase ahead of the emulator: import the handler's module, then say ``ready``.

    A failed import only ends this process: the invocation then starts a fresh runtime whose init, inside
    the invocation, fails the same way and is reported by awslambdaric, as AWS retries a failed init.
    """
    module_name = handler_name.rpartition(".")[0].replace("/", ".")
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
