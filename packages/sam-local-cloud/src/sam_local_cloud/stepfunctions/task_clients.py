"""The clients moto's interpreter uses for service Tasks: built once, and Lambda called in-process.

moto builds a new boto3 client for every Task (a third of its time in a profile) with the same dummy
credentials whatever the Task's role. Here one client per region, service, endpoint and role credentials
serves them all (boto3 clients are thread-safe once built), and a Task calls with the credentials of its
state machine's role when its cloud gives some (``CloudParts.role_credentials``), so the local IAM checks
it as that role. Lambda Tasks go to the cloud's Lambda service in-process (``CloudParts.lambda_client``),
with the answers boto3 would give; the caller's key goes along. The cloud is the one whose account the
role is in (sam_local_cloud.accounts).
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

from botocore.config import Config

from sam_local_cloud import sdk_models
from sam_local_cloud.accounts import CloudParts, parts_for_arn
from sam_local_cloud.credentials import DUMMY_CREDENTIALS
from sam_local_cloud.moto_seam import hooks

_CONCERN = "task_clients"
# A service call of a Task gets an answer within these or fails with botocore's timeout error: moto's
# clients wait for ever (99999999 s), so one request that never came back kept an execution RUNNING.
# Lambda's Invoke, which may run for 15 minutes, is made in-process and not bounded by them.
CONNECT_TIMEOUT_SECONDS = 10
READ_TIMEOUT_SECONDS = 90
# The keys moto's interpreter signs with when the Task's role has none locally: the operator's (the local
# cloud checks signatures, and knows these).
_MOTO_TASK_KEYS = (DUMMY_CREDENTIALS["aws_access_key_id"], DUMMY_CREDENTIALS["aws_secret_access_key"])


def credentials_for_role(role_arn: str | None, parts: CloudParts | None = None) -> tuple[str, str] | None:
    """The keys a Task of the state machine with this role signs with (None: moto's own)."""
    parts = parts or parts_for_arn(role_arn)
    if parts is None or parts.role_credentials is None or not role_arn:
        return None
    return parts.role_credentials(role_arn)


def endpoint_port(parts: CloudParts | None) -> str | None:
    """The port of the cloud a Task belongs to; with no cloud, moto's own setting."""
    if parts is not None and parts.port is not None:
        return str(parts.port)
    return os.environ.get("MOTO_PORT")


class _TaskLambdaClient:
    """Lambda as a Task sees it: Invoke in-process on the routed client (told which key the Task signs
    with, if any), every other operation (``aws-sdk:lambda:listFunctions``, ``getFunction``, ...) over
    the endpoint with the Task's own client, so it reaches the whole Lambda API and its IAM check."""

    def __init__(self, in_process: Any, endpoint_client: Any, access_key_id: str | None) -> None:
        self._in_process = in_process
        self._endpoint_client = endpoint_client
        self._access_key_id = access_key_id

    def invoke(self, **parameters: Any) -> Any:
        if self._access_key_id is None:
            return self._in_process.invoke(**parameters)
        return self._in_process.invoke(caller_access_key_id=self._access_key_id, **parameters)

    def __getattr__(self, operation: str) -> Any:
        return getattr(self._endpoint_client, operation)


# moto's modules (by the names the seam hands them on under) that import ``boto_client_for`` by name, each
# holding its own reference, and the one that defines it. A module a later moto adds fails the test that
# no interpreter module keeps moto's own.
_MODULES_CALLING_BOTO_CLIENT_FOR = (
    "boto_client",
    "item_reader_resource_eval_s3",
    "result_writer_resource_eval_s3",
    "lambda_eval_utils",
    "state_task_service_aws_sdk",
    "state_task_service_batch",
    "state_task_service_dynamodb",
    "state_task_service_ecs",
    "state_task_service_events",
    "state_task_service_glue",
    "state_task_service_sfn",
    "state_task_service_sns",
    "state_task_service_sqs",
    "state_task_service_unsupported",
)


def register_hooks() -> None:
    from sam_local_cloud.moto_seam import stepfunctions as moto_sfn

    moto_client_for = moto_sfn.boto_client_for
    lock = threading.Lock()

    @functools.cache
    def motos_own(region: str, service: str) -> Any:
        with lock:  # boto3's default session is not safe to build clients from concurrently
            return moto_client_for(region=region, service=service)

    def make(region: str, service: str, port: str | None, credentials: tuple[str, str] | None) -> Any:
        credentials = credentials or _MOTO_TASK_KEYS
        with lock:
            # moto's client, as its boto_client_for builds it, with the role's keys instead of its own.
            return sdk_models.client(
                service,
                region_name=region,
                endpoint_url=f"http://localhost:{port}",
                aws_access_key_id=credentials[0],
                aws_secret_access_key=credentials[1],
                config=Config(
                    parameter_validation=False,
                    retries={"max_attempts": 0, "total_max_attempts": 1},
                    connect_timeout=CONNECT_TIMEOUT_SECONDS,
                    read_timeout=READ_TIMEOUT_SECONDS,
                ),
            )

    def cloud_client(parts: CloudParts | None, region: str, service: str, credentials: Any) -> Any:
        port = endpoint_port(parts)
        if credentials is None and port is None:
            return motos_own(region, service)
        if parts is None:
            return make(region, service, port, credentials)
        # Kept by the cloud, not by this module: a process that starts many clouds (a test session)
        # keeps no client of a cloud that has stopped.
        key = (region, service, credentials)
        client = parts.task_clients.get(key)
        if client is None:
            client = parts.task_clients.setdefault(key, make(region, service, port, credentials))
        return client

    def task_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        role_arn = getattr(state_credentials, "role_arn", None)
        parts = parts_for_arn(role_arn)
        credentials = credentials_for_role(role_arn, parts)
        client = cloud_client(parts, region, service, credentials)
        if service == "lambda" and parts is not None and parts.lambda_client is not None:
            return _TaskLambdaClient(parts.lambda_client, client, credentials[0] if credentials else None)
        return client

    for module_name in _MODULES_CALLING_BOTO_CLIENT_FOR:
        module = getattr(moto_sfn, module_name)
        hooks.replace(module, "boto_client_for", task_client_for, concern=_CONCERN)
    _name_unmodelled_lambda_errors_as_aws_does()


def _name_unmodelled_lambda_errors_as_aws_does() -> None:
    """A ``lambda:invoke`` Task fails with ``Lambda.<ErrorCode>`` only for errors Lambda's API models
    (``TooManyRequestsException``, ``ResourceNotFoundException``, ...); any other, such as the
    ``AccessDeniedException`` of a role that may not invoke the function, arrives as
    ``Lambda.AWSLambdaException``, the cause still naming the real code. moto names them all by code."""
    from sam_local_cloud import sdk_models
    from sam_local_cloud.moto_seam.stepfunctions import StateTaskServiceLambda

    modelled = {shape.name for shape in sdk_models.service_model("lambda").error_shapes}

    # A static method: the listener gets no instance.
    @hooks.around(StateTaskServiceLambda, "_error_cause_from_client_error", concern=_CONCERN)
    def error_cause(proceed: Any, client_error: Any) -> tuple[str, str]:
        error, cause = proceed(client_error)
        if client_error.response["Error"]["Code"] not in modelled:
            error = "Lambda.AWSLambdaException"
        return error, cause
