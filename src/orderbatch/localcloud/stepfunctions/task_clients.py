"""The clients moto's interpreter uses for service Tasks: built once, and Lambda called in-process.

moto builds a new boto3 client for every Task (a third of its time in a profile), whatever the Task's
role; locally every role has the same dummy credentials, so one client per region, service and endpoint
serves them all (boto3 clients are thread-safe once built). Lambda Tasks go to the local Lambda service
in-process when one is routed here (``route_lambda_tasks_to``), with the answers boto3 would give.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from typing import Any

_INTERPRETER_PACKAGE = "moto.stepfunctions.parser"

_lambda_client: Any | None = None


def route_lambda_tasks_to(client: Any | None) -> None:
    """Send the interpreter's Lambda calls to ``client`` (in-process), or back over HTTP with None."""
    global _lambda_client
    _lambda_client = client


def patch() -> None:
    from moto.stepfunctions.parser.asl.utils import boto_client

    original = boto_client.boto_client_for
    lock = threading.Lock()

    @functools.cache
    def cached(region: str, service: str, port: str | None) -> Any:
        with lock:  # boto3's default session is not safe to build clients from concurrently
            return original(region=region, service=service)

    def task_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        if service == "lambda" and _lambda_client is not None:
            return _lambda_client
        # Keyed by port too: each local cloud started in this process has its own endpoint.
        return cached(region, service, os.environ.get("MOTO_PORT"))

    # Interpreter modules import the function by name: those imported later get the replacement from
    # here, those already imported are given it.
    boto_client.boto_client_for = task_client_for
    for name, module in list(sys.modules.items()):
        if name.startswith(_INTERPRETER_PACKAGE) and getattr(module, "boto_client_for", None) is original:
            setattr(module, "boto_client_for", task_client_for)  # noqa: B010 - a module, not a known type
