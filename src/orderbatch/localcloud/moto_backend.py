"""moto in server mode, as the local Step Functions, DynamoDB, S3, CloudWatch, SNS and Logs.

Two behaviours of moto's Step Functions interpreter are adjusted here, without forking it:
- it builds a new boto3 client for every Lambda Task (a third of its time in a profile); the client is
  cached per region and service instead, which boto3 clients allow (they are thread-safe once built);
- an inline Map without MaxConcurrency starts one thread per item; AWS runs about 40 iterations of an
  inline Map at once, so the local cloud holds it to that;
- a Distributed Map's ResultWriter writes an empty manifest and drops the child results; here it
  writes the result files and the manifest in the format AWS documents.
"""

from __future__ import annotations

import functools
import json
import threading
from datetime import UTC, datetime
from typing import Any

INLINE_MAP_CONCURRENCY_LIMIT = 40
RESULTS_PER_FILE = 1000

_patch_lock = threading.Lock()
_patched = False


def create_moto_app() -> Any:
    """The WSGI application moto's own server runs (`moto_server`), with state machine execution on."""
    from moto.core.config import default_user_config
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    default_user_config["stepfunctions"] = {"execute_state_machine": True}
    apply_interpreter_patches()
    return DomainDispatcherApplication(create_backend_app)


def apply_interpreter_patches() -> None:
    global _patched
    with _patch_lock:
        if _patched:
            return
        _cache_task_clients()
        _cap_inline_map_concurrency()
        _write_distributed_map_results()
        _patched = True


def _cache_task_clients() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
    from moto.stepfunctions.parser.asl.utils import boto_client

    original = boto_client.boto_client_for
    lock = threading.Lock()

    @functools.cache
    def _cached(region: str, service: str) -> Any:
        with lock:  # boto3's default session is not safe to build clients from concurrently
            return original(region=region, service=service)

    def cached_boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        if state_credentials is not None:
            return original(region=region, service=service, state_credentials=state_credentials)
        return _cached(region, service)

    lambda_eval_utils.boto_client_for = cached_boto_client_for


def _cap_inline_map_concurrency() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import (
        inline_iteration_component,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.max_concurrency import (
        DEFAULT_MAX_CONCURRENCY_VALUE,
    )

    component = inline_iteration_component.InlineIterationComponent
    original_eval_body = component._eval_body

    def eval_body_within_aws_limit(self: Any, env: Any) -> None:
        eval_input = env.stack[-1]
        requested = eval_input.max_concurrency
        if requested == DEFAULT_MAX_CONCURRENCY_VALUE or requested > INLINE_MAP_CONCURRENCY_LIMIT:
            eval_input.max_concurrency = INLINE_MAP_CONCURRENCY_LIMIT
        original_eval_body(self, env)

    component._eval_body = eval_body_within_aws_limit  # type: ignore[method-assign]


def _write_distributed_map_results() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.resource_eval import (
        resource_eval_s3,
    )

    def handle_put_object(env: Any, resource_runtime_part: Any, state_credentials: Any) -> None:
        parameters = env.stack.pop()
        results = env.stack.pop()
        s3 = resource_eval_s3.ResourceEvalS3._get_s3_client(
            resource_runtime_part=resource_runtime_part, state_credentials=state_credentials
        )
        map_run_arn = env.map_run_record_pool_manager.get_all().pop().map_run_arn
        prefix = parameters.get("Prefix", "")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        folder = prefix + map_run_arn.split(":")[-1] + "/"
        now = datetime.now(UTC).isoformat()
        entries = [
            {
                "ExecutionArn": f"{map_run_arn}:{index}",
                "Name": str(index),
                "Input": None,
                "InputDetails": {"Included": False},
                "Output": json.dumps(result),
                "OutputDetails": {"Included": True},
                "Status": "SUCCEEDED",
                "StartDate": now,
                "StopDate": now,
            }
            for index, result in enumerate(results if isinstance(results, list) else [])
        ]
        files = []
        for number, start in enumerate(range(0, len(entries), RESULTS_PER_FILE)):
            body = json.dumps(entries[start : start + RESULTS_PER_FILE]).encode()
            key = f"{folder}SUCCEEDED_{number}.json"
            s3.put_object(Bucket=parameters["Bucket"], Key=key, Body=body)
            files.append({"Key": key, "Size": len(body)})
        manifest = {
            "DestinationBucket": parameters["Bucket"],
            "MapRunArn": map_run_arn,
            "ResultFiles": {"FAILED": [], "PENDING": [], "SUCCEEDED": files},
        }
        manifest_key = folder + "manifest.json"
        s3.put_object(Bucket=parameters["Bucket"], Key=manifest_key, Body=json.dumps(manifest).encode())
        env.stack.append(
            {
                "MapRunArn": map_run_arn,
                "ResultWriterDetails": {"Bucket": parameters["Bucket"], "Key": manifest_key},
            }
        )

    resource_eval_s3.ResourceEvalS3._handle_put_object = staticmethod(handle_put_object)  # type: ignore[method-assign]
