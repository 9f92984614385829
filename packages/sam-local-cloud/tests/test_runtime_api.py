"""The Runtime API the Lambda service serves each environment, driven by a runtime as awslambdaric drives it.

Each test runs a small runtime in a process of its own: it asks for its next event over HTTP, as the
runtime interface client does, and answers as the test tells it.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sam_local_cloud.lambda_service.runtime_api import (
    RESPONSE_LIMIT_BYTES,
    Invocation,
    RuntimeApi,
    RuntimeExitedError,
)

# A runtime: for each event, does what the event's "do" says and writes what it saw to its output.
_RUNTIME = textwrap.dedent(
    """
    import http.client, json, os, sys, time
    host, port = os.environ["AWS_LAMBDA_RUNTIME_API"].split(":")
    connection = http.client.HTTPConnection(host, int(port))
    base = "/2018-06-01/runtime"
    if os.environ.get("FAIL_INIT"):
        connection.request("POST", base + "/init/error", json.dumps({"errorType": "Runtime.ImportModuleError",
            "errorMessage": "Unable to import module 'app'", "requestId": "", "stackTrace": []}))
        print("init error answered", connection.getresponse().status, flush=True)
        sys.exit(1)
    while True:
        connection.request("GET", base + "/invocation/next")
        response = connection.getresponse()
        event = json.loads(response.read())
        request_id = response.getheader("Lambda-Runtime-Aws-Request-Id")
        print(json.dumps({"request_id": request_id, "headers": dict(response.getheaders())}), flush=True)
        do = event["do"]
        if do == "exit":
            os._exit(event["code"])
        if do == "sleep":
            time.sleep(event["seconds"])
        if do == "wrong-id":
            connection.request("POST", base + "/invocation/not-this-one/response", b"{}")
            print("wrong id answered", connection.getresponse().status, flush=True)
        if do == "error":
            body = json.dumps({"errorMessage": "boom", "errorType": "ValueError", "requestId": request_id})
            connection.request("POST", f"{base}/invocation/{request_id}/error", body,
                               {"Lambda-Runtime-Function-Error-Type": "ValueError"})
        elif do == "big":
            connection.request("POST", f"{base}/invocation/{request_id}/response", b"x" * event["size"])
        else:
            body = json.dumps({"echo": event}).encode()
            connection.request("POST", f"{base}/invocation/{request_id}/response", body,
                               {"Expect": "100-continue"} if do == "expect" else {})
        answer = connection.getresponse()
        print("answered", answer.status, answer.read().decode(), flush=True)
    """
)


class _Runtimes:
    """The endpoint under test and the runtimes started against it, stopped when the test ends."""

    def __init__(self, folder: Path) -> None:
        self.api = RuntimeApi()
        self.log = folder / "runtime.log"
        self._script = folder / "runtime.py"
        self._script.write_text(_RUNTIME)
        self._started: list[subprocess.Popen[bytes]] = []

    def start(self, **variables: str) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as output:
            process = subprocess.Popen(
                [sys.executable, str(self._script)],
                env={"AWS_LAMBDA_RUNTIME_API": self.api.address, **variables},
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        self._started.append(process)
        self.api.watch(process)
        return process

    def stop(self) -> None:
        for process in self._started:
            process.kill()
            process.wait()
        self.api.close()


@pytest.fixture
def runtimes(tmp_path: Path) -> Iterator[_Runtimes]:
    started = _Runtimes(tmp_path)
    yield started
    started.stop()


def _invocation(request_id: str, event: dict[str, object]) -> Invocation:
    return Invocation(
        request_id, json.dumps(event).encode(), 1_700_000_000_000, "arn:aws:lambda:r:1:function:f"
    )


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines()


def test_the_runtime_gets_the_event_with_lambdas_headers_and_its_answer_comes_back(
    runtimes: _Runtimes,
) -> None:
    api, log = runtimes.api, runtimes.log
    runtimes.start()
    first = api.invoke(_invocation("r-1", {"do": "echo", "n": 1}), time.monotonic() + 20)
    second = api.invoke(_invocation("r-2", {"do": "expect", "n": 2}), time.monotonic() + 20)

    assert (json.loads(first.body), first.function_error, first.init_failed) == (
        {"echo": {"do": "echo", "n": 1}},
        False,
        False,
    )
    assert json.loads(second.body) == {"echo": {"do": "expect", "n": 2}}
    seen = json.loads(_lines(log)[0])
    assert seen["request_id"] == "r-1"
    assert seen["headers"]["Lambda-Runtime-Deadline-Ms"] == "1700000000000"
    assert seen["headers"]["Lambda-Runtime-Invoked-Function-Arn"] == "arn:aws:lambda:r:1:function:f"
    assert seen["headers"]["Content-Type"] == "application/json"
    assert 'answered 202 {"status": "OK"}' in _lines(log)


def test_an_error_posted_by_the_runtime_is_a_function_error_and_the_runtime_goes_on(
    runtimes: _Runtimes,
) -> None:
    api = runtimes.api
    runtimes.start()
    failed = api.invoke(_invocation("r-1", {"do": "error"}), time.monotonic() + 20)
    after = api.invoke(_invocation("r-2", {"do": "echo"}), time.monotonic() + 20)

    assert failed.function_error
    assert not failed.init_failed
    assert json.loads(failed.body) == {"errorMessage": "boom", "errorType": "ValueError", "requestId": "r-1"}
    assert not after.function_error


def test_a_failed_init_answers_the_invocation_with_the_runtimes_error(
    runtimes: _Runtimes,
) -> None:
    api, log = runtimes.api, runtimes.log
    process = runtimes.start(FAIL_INIT="1")
    answer = api.invoke(_invocation("r-1", {"do": "echo"}), time.monotonic() + 20)

    assert answer.function_error
    assert answer.init_failed
    assert json.loads(answer.body)["errorType"] == "Runtime.ImportModuleError"
    assert process.wait(timeout=10) == 1
    assert "init error answered 202" in _lines(log)


@pytest.mark.parametrize(("code", "expected"), [(3, 3), (0, 0)])
def test_a_runtime_that_exits_mid_invocation_is_reported_with_its_exit_status(
    runtimes: _Runtimes, code: int, expected: int
) -> None:
    api = runtimes.api
    runtimes.start()
    started = time.monotonic()
    with pytest.raises(RuntimeExitedError) as exited:
        api.invoke(_invocation("r-1", {"do": "exit", "code": code}), time.monotonic() + 20)

    assert exited.value.returncode == expected
    assert time.monotonic() - started < 5  # told by the process's end, not by the deadline


def test_past_the_deadline_the_invocation_times_out(runtimes: _Runtimes) -> None:
    api = runtimes.api
    runtimes.start()
    api.invoke(_invocation("r-0", {"do": "echo"}), time.monotonic() + 20)  # the runtime is up
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        api.invoke(_invocation("r-1", {"do": "sleep", "seconds": 30}), time.monotonic() + 0.5)
    assert 0.5 <= time.monotonic() - started < 3


def test_a_response_over_lambdas_limit_is_refused_and_the_invocation_fails(
    runtimes: _Runtimes,
) -> None:
    api, log = runtimes.api, runtimes.log
    runtimes.start()
    at_limit = api.invoke(
        _invocation("r-1", {"do": "big", "size": RESPONSE_LIMIT_BYTES}), time.monotonic() + 30
    )
    over = api.invoke(
        _invocation("r-2", {"do": "big", "size": RESPONSE_LIMIT_BYTES + 1}), time.monotonic() + 30
    )
    after = api.invoke(_invocation("r-3", {"do": "echo"}), time.monotonic() + 20)

    assert (len(at_limit.body), at_limit.function_error) == (RESPONSE_LIMIT_BYTES, False)
    assert over.function_error
    assert json.loads(over.body) == {
        "errorMessage": "Response payload size exceeded maximum allowed payload size (6291556 bytes).",
        "errorType": "Function.ResponseSizeTooLarge",
    }
    assert any(line.startswith("answered 413 ") for line in _lines(log))
    assert not after.function_error


def test_an_answer_for_another_request_id_is_refused(runtimes: _Runtimes) -> None:
    api, log = runtimes.api, runtimes.log
    runtimes.start()
    answer = api.invoke(_invocation("r-1", {"do": "wrong-id"}), time.monotonic() + 20)

    assert "wrong id answered 400" in _lines(log)
    assert json.loads(answer.body) == {"echo": {"do": "wrong-id"}}


def test_a_request_outside_the_runtime_api_gets_a_404(runtimes: _Runtimes) -> None:
    api = runtimes.api
    host, port = api.address.split(":")
    with socket.create_connection((host, int(port))):
        pass  # a connection that closes at once is let go
    runtimes.start()
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("GET", "/2020-01-01/extension/event/next")
    # Served while an invocation runs: the API answers whatever comes in meanwhile.
    answer = api.invoke(_invocation("r-1", {"do": "echo"}), time.monotonic() + 20)
    response = connection.getresponse()

    assert not answer.function_error
    assert response.status == 404
