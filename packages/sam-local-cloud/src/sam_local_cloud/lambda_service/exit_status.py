"""How Lambda words a runtime's end: Go's ``os.ProcessState.String``, as in "Runtime exited with error: ...".

Lambda's runtime manager is written in Go, so a runtime process killed by SIGKILL (a timeout, running out of
memory, our ``crash`` fault) is reported as ``signal: killed`` and one that called ``exit(1)`` as
``exit status 1``. Our runtimes run behind a stub that mirrors the runtime's end as a shell does, exit status
128 + N for a runtime killed by signal N, so the emulator sees and reports ``exit status 137``; this module
puts back the words Lambda uses.
"""

from __future__ import annotations

import json
import re

# Go's names of the Linux signals (syscall.Signal.String on linux/amd64): what "signal: ..." says.
GO_SIGNAL_NAMES = {
    1: "hangup",
    2: "interrupt",
    3: "quit",
    4: "illegal instruction",
    5: "trace/breakpoint trap",
    6: "aborted",
    7: "bus error",
    8: "floating point exception",
    9: "killed",
    10: "user defined signal 1",
    11: "segmentation fault",
    12: "user defined signal 2",
    13: "broken pipe",
    14: "alarm clock",
    15: "terminated",
}
# A shell, and our runtime stub, exits with 128 + N when its child died of signal N.
SIGNALLED_EXIT_BASE = 128
RUNTIME_EXITED = re.compile(r"(Runtime exited with error: )exit status (\d+)")
RUNTIME_EXIT_ERROR = "Runtime.ExitError"


def signal_text(signal_number: int) -> str:
    """``signal: killed``; Go names a signal it has no name for by its number."""
    return "signal: " + GO_SIGNAL_NAMES.get(signal_number, f"signal {signal_number}")


def process_state_text(returncode: int) -> str:
    """A ``subprocess`` return code (negative: killed by that signal) in Go's words."""
    return signal_text(-returncode) if returncode < 0 else f"exit status {returncode}"


def runtime_exit_text(exit_status: int) -> str:
    """An exit status reported through a stub or shell: above 128 is the signal the runtime died of."""
    signal_number = exit_status - SIGNALLED_EXIT_BASE
    if signal_number in GO_SIGNAL_NAMES:
        return signal_text(signal_number)
    return f"exit status {exit_status}"


def with_lambda_exit_wording(body: bytes) -> bytes:
    """The emulator's ``Runtime.ExitError`` document with the runtime's end worded as Lambda words it; any
    other body unchanged."""
    if RUNTIME_EXIT_ERROR.encode() not in body:
        return body
    try:
        document = json.loads(body)
    except ValueError:
        return body
    if not isinstance(document, dict) or document.get("errorType") != RUNTIME_EXIT_ERROR:
        return body
    message = document.get("errorMessage")
    if not isinstance(message, str):
        return body
    reworded = RUNTIME_EXITED.sub(
        lambda match: match.group(1) + runtime_exit_text(int(match.group(2))), message
    )
    if reworded == message:
        return body
    return json.dumps({**document, "errorMessage": reworded}).encode()
