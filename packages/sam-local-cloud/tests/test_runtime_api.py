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


@pytest.fixture
def runtime_api(tmp_path: Path) -> Iterator[tuple[RuntimeApi, Path]]:
    api = RuntimeApi()
    yield api, tmp_path / "runtime.log"
    api.close()


def _start(api: RuntimeApi, log: Path, **variables: str) -> subprocess.Popen[bytes]:
    script = log.parent / "runtime.py"
    script.write_text(_RUNTIME)
    with log.open("ab") as output:
        process = subprocess.Popen(
            [sys.executable, str(script)],
            env={"AWS_LAMBDA_RUNTIME_API": api.address, **variables},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    api.watch(process)
    return process


def _invocation(request_id: str, event: dict[str, object]) -> Invocation:
    return Invocation(
        request_id, json.dumps(event).encode(), 1_700_000_000_000, "arn:aws:lambda:r:1:function:f"
    )


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines()


def test_the_runtime_gets_the_event_with_lambdas_headers_and_its_answer_comes_back(
    runtime_api: tuple[RuntimeApi, Path],
) -> None:
    api, log = runtime_api
    process = _start(api, log)
    try:
        first = api.invoke(_invocation("r-1", {"do": "echo", "n": 1}), time.monotonic() + 20)
        second = api.invoke(_invocation("r-2", {"do": "expect", "n": 2}), time.monotonic() + 20)
    finally:
        process.kill()
        process.wait()

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
    runtime_api: tuple[RuntimeApi, Path],
) -> None:
    api, log = runtime_api
    process = _start(api, log)
    try:
        failed = api.invoke(_invocation("r-1", {"do": "error"}), time.monotonic() + 20)
        after = api.invoke(_invocation("r-2", {"do": "echo"}), time.monotonic() + 20)
    finally:
        process.kill()
        process.wait()

    assert failed.function_error
    assert not failed.init_failed
    assert json.loads(failed.body) == {"errorMessage": "boom", "errorType": "ValueError", "requestId": "r-1"}
    assert not after.function_error


def test_a_failed_init_answers_the_invocation_with_the_runtimes_error(
    runtime_api: tuple[RuntimeApi, Path],
) -> None:
    api, log = runtime_api
    process = _start(api, log, FAIL_INIT="1")
    answer = api.invoke(_invocation("r-1", {"do": "echo"}), time.monotonic() + 20)

    assert answer.function_error
    assert answer.init_failed
    assert json.loads(answer.body)["errorType"] == "Runtime.ImportModuleError"
    assert process.wait(timeout=10) == 1
    assert "init error answered 202" in _lines(log)


@pytest.mark.parametrize(("code", "expected"), [(3, 3), (0, 0)])
def test_a_runtime_that_exits_mid_invocation_is_reported_with_its_exit_status(
    runtime_api: tuple[RuntimeApi, Path], code: int, expected: int
) -> None:
    api, log = runtime_api
    _start(api, log)
    started = time.monotonic()
    with pytest.raises(RuntimeExitedError) as exited:
        api.invoke(_invocation("r-1", {"do": "exit", "code": code}), time.monotonic() + 20)

    assert exited.value.returncode == expected
    assert time.monotonic() - started < 5  # told by the process's end, not by the deadline


def test_past_the_deadline_the_invocation_times_out(runtime_api: tuple[RuntimeApi, Path]) -> None:
    api, log = runtime_api
    process = _start(api, log)
    api.invoke(_invocation("r-0", {"do": "echo"}), time.monotonic() + 20)  # the runtime is up
    started = time.monotonic()
    try:
        with pytest.raises(TimeoutError):
            api.invoke(_invocation("r-1", {"do": "sleep", "seconds": 30}), time.monotonic() + 0.5)
    finally:
        process.kill()
        process.wait()
    assert 0.5 <= time.monotonic() - started < 3


def test_a_response_over_lambdas_limit_is_refused_and_the_invocation_fails(
    runtime_api: tuple[RuntimeApi, Path],
) -> None:
    api, log = runtime_api
    process = _start(api, log)
    try:
        at_limit = api.invoke(
            _invocation("r-1", {"do": "big", "size": RESPONSE_LIMIT_BYTES}), time.monotonic() + 30
        )
        over = api.invoke(
            _invocation("r-2", {"do": "big", "size": RESPONSE_LIMIT_BYTES + 1}), time.monotonic() + 30
        )
        after = api.invoke(_invocation("r-3", {"do": "echo"}), time.monotonic() + 20)
    finally:
        process.kill()
        process.wait()

    assert (len(at_limit.body), at_limit.function_error) == (RESPONSE_LIMIT_BYTES, False)
    assert over.function_error
    assert json.loads(over.body) == {
        "errorMessage": "Response payload size exceeded maximum allowed payload size (6291556 bytes).",
        "errorType": "Function.ResponseSizeTooLarge",
    }
    assert any(line.startswith("answered 413 ") for line in _lines(log))
    assert not after.function_error


def test_an_answer_for_another_request_id_is_refused(runtime_api: tuple[RuntimeApi, Path]) -> None:
    api, log = runtime_api
    process = _start(api, log)
    try:
        answer = api.invoke(_invocation("r-1", {"do": "wrong-id"}), time.monotonic() + 20)
    finally:
        process.kill()
        process.wait()

    assert "wrong id answered 400" in _lines(log)
    assert json.loads(answer.body) == {"echo": {"do": "wrong-id"}}


def test_a_request_outside_the_runtime_api_gets_a_404(runtime_api: tuple[RuntimeApi, Path]) -> None:
    api, log = runtime_api
    host, port = api.address.split(":")
    with socket.create_connection((host, int(port))):
        pass  # a connection that closes at once is let go
    process = _start(api, log)
    try:
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        connection.request("GET", "/2020-01-01/extension/event/next")
        # Served while an invocation runs: the API answers whatever comes in meanwhile.
        answer = api.invoke(_invocation("r-1", {"do": "echo"}), time.monotonic() + 20)
        response = connection.getresponse()
    finally:
        process.kill()
        process.wait()

    assert not answer.function_error
    assert response.status == 404
