"""`orderbatch submit` and `orderbatch status`: the app's HTTP API, local or deployed."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orderbatch.audit import DURABLE, DURABLE_FUNCTION_OUTPUT, STEP_FUNCTIONS
from orderbatch.project import default_template, local_cloud_endpoint
from sam_local_cloud import DUMMY_CREDENTIALS
from sam_local_cloud.aws_limits import MAX_STATE_PAYLOAD_BYTES
from sam_local_cloud.executions import FINISHED_STATUSES

if TYPE_CHECKING:
    from mypy_boto3_lambda.client import LambdaClient

    from orderbatch.api_client import BatchesApiClient


def register(subparsers: argparse._SubParsersAction) -> None:
    submit = subparsers.add_parser("submit", help="submit a batch (a JSON file, or --generate N orders)")
    source = submit.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "file", nargs="?", type=Path, help='batch JSON: {"batch_id", "orders"} or {"batch_id", "source"}'
    )
    source.add_argument("--generate", type=int, metavar="N", help="generate a batch of N valid orders")
    submit.add_argument("--batch-id", default=None, help="batch ID for --generate (default: a timestamp)")
    submit.add_argument(
        "--bucket",
        default=None,
        help="where a batch too large to send inline is uploaded (default: the local stack's "
        "BatchBucketName; required with --api)",
    )
    submit.add_argument("--wait", action="store_true", help="wait until the batch finishes")
    submit.add_argument("--timeout", type=float, default=900.0, help="seconds to wait with --wait")
    _add_target_arguments(submit)
    submit.set_defaults(func=run_submit)

    status = subparsers.add_parser("status", help="a batch's status and summary")
    status.add_argument("batch_id")
    _add_target_arguments(status)
    status.set_defaults(func=run_status)


def _add_orchestrator_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--orchestrator",
        choices=(STEP_FUNCTIONS, DURABLE),
        default=STEP_FUNCTIONS,
        help="run the batch on the state machine (through the HTTP API) or on the durable function "
        "(Invoke with the batch ID as the durable execution name, read with GetDurableExecution)",
    )
    parser.add_argument(
        "--function-arn",
        default=None,
        help=f"the durable function's alias ARN for --orchestrator {DURABLE} (default: the local stack's "
        f"{DURABLE_FUNCTION_OUTPUT}; required with --api)",
    )


def _add_target_arguments(parser: argparse.ArgumentParser) -> None:
    _add_orchestrator_arguments(parser)
    parser.add_argument(
        "--endpoint", default=None, help="local cloud endpoint (default: AWS_ENDPOINT_URL or :4566)"
    )
    parser.add_argument("--api", default=None, help="a deployed API's URL (the stack's BatchesApiUrl output)")
    parser.add_argument("--region", default=None)
    parser.add_argument("--json", action="store_true", help="print JSON")


def _client(args: argparse.Namespace) -> BatchesApiClient:
    from orderbatch.api_client import BatchesApiClient, local_api_url

    return BatchesApiClient(
        args.api or local_api_url(args.endpoint or local_cloud_endpoint()), region=args.region
    )


def _report(args: argparse.Namespace, status: int, body: Mapping[str, object]) -> int:
    found = body.get("summary")
    summary: Mapping[str, object] = found if isinstance(found, Mapping) else {}
    document = {
        "http_status": status,
        "batch_id": body.get("batch_id"),
        "status": body.get("status"),
        **{key: summary.get(key) for key in ("total", "succeeded", "failed", "rejected", "duplicate")},
        "response": body,
    }
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        counts = ", ".join(
            f"{k} {document[k]}"
            for k in ("total", "succeeded", "failed", "rejected", "duplicate")
            if document[k] is not None
        )
        print(f"HTTP {status}: batch {document['batch_id']} {document['status'] or ''} {counts}".rstrip())
        if body.get("message"):
            print(f"  {body['message']}")
    return 0 if status < 400 else 1


def run_submit(args: argparse.Namespace) -> int:
    from orderbatch.app_batches import fixture_skus, generate_orders

    if args.generate is not None:
        batch_id = args.batch_id or f"batch-{time.strftime('%Y%m%dT%H%M%S')}"
        batch: dict[str, Any] = {
            "batch_id": batch_id,
            "orders": generate_orders(args.generate, fixture_skus(default_template()), prefix=batch_id),
        }
    else:
        batch = json.loads(args.file.read_text())
    if args.orchestrator == DURABLE:
        return _submit_durable(args, batch)
    client = _client(args)
    response = None if _too_large_for_inline(batch) else client.submit(batch)
    if response is None or (response.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE and "orders" in batch):
        # Past what a batch may carry inline, the orders go through S3 and the Distributed Map.
        try:
            source = _upload_orders(args, batch)
        except ValueError as error:
            print(f"orderbatch: {error}", file=sys.stderr)
            return 2
        print(f"uploaded {len(batch['orders'])} orders to s3://{source['bucket']}/{source['key']}")
        response = client.submit({"batch_id": batch["batch_id"], "source": source})
    if response.status >= 400 or not args.wait:
        return _report(args, response.status, response.body)
    batch_id = response.body.get("batch_id") or batch.get("batch_id")
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        current = client.status(str(batch_id))
        if current.body.get("status") in FINISHED_STATUSES or current.status >= 400:
            return _report(args, current.status, current.body)
        time.sleep(2.0)
    print(f"orderbatch: batch {batch_id} still running after {args.timeout:.0f} s")
    return 2


def _too_large_for_inline(batch: Mapping[str, object]) -> bool:
    """Step Functions refuses execution input over 256 KiB: such a batch can only go through S3."""
    return "orders" in batch and len(json.dumps(batch).encode()) > MAX_STATE_PAYLOAD_BYTES


def _upload_orders(args: argparse.Namespace, batch: dict[str, Any]) -> dict[str, str]:
    import boto3

    local = args.api is None
    bucket = args.bucket
    if bucket is None:
        if not local:
            raise ValueError(
                "a batch this large goes through S3: give --bucket (the stack's BatchBucketName)"
            )
        from sam_local_cloud.stack import load_stack

        bucket = load_stack(default_template()).outputs["BatchBucketName"]
    session = boto3.Session(region_name=args.region)
    if local and session.get_credentials() is None:
        session = boto3.Session(**DUMMY_CREDENTIALS, region_name=args.region or "us-east-1")
    s3 = session.client("s3", endpoint_url=(args.endpoint or local_cloud_endpoint()) if local else None)
    key = f"incoming/{batch['batch_id']}.json"
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(batch["orders"]).encode())
    return {"bucket": bucket, "key": key}


def run_status(args: argparse.Namespace) -> int:
    if args.orchestrator == DURABLE:
        return _durable_status(args, args.batch_id)
    response = _client(args).status(args.batch_id)
    return _report(args, response.status, response.body)


def _lambda_client(args: argparse.Namespace) -> LambdaClient:
    import boto3

    local = args.api is None
    session = boto3.Session(region_name=args.region)
    if local and session.get_credentials() is None:
        session = boto3.Session(**DUMMY_CREDENTIALS, region_name=args.region or "us-east-1")
    endpoint = (args.endpoint or local_cloud_endpoint()) if local else None
    return session.client("lambda", endpoint_url=endpoint, region_name=args.region or session.region_name)


def _durable_function_arn(args: argparse.Namespace) -> str:
    if args.function_arn:
        return str(args.function_arn)
    if args.api is not None:
        raise ValueError(
            f"--orchestrator {DURABLE} with --api needs --function-arn "
            f"(the stack's {DURABLE_FUNCTION_OUTPUT})"
        )
    from sam_local_cloud.stack import load_stack

    arn = load_stack(default_template()).outputs.get(DURABLE_FUNCTION_OUTPUT)
    if not arn:
        raise ValueError(f"the template has no {DURABLE_FUNCTION_OUTPUT} output: give --function-arn")
    return str(arn)


def _submit_durable(args: argparse.Namespace, batch: dict[str, Any]) -> int:
    from orderbatch.durable_batches import (
        DurableBatchStillRunningError,
        batch_document,
        start_durable_batch,
        wait_for_durable_batch,
    )

    if "orders" not in batch:
        print(
            f"orderbatch: the {DURABLE} orchestrator takes inline orders only (no S3 source)", file=sys.stderr
        )
        return 2
    try:
        function_arn = _durable_function_arn(args)
    except ValueError as error:
        print(f"orderbatch: {error}", file=sys.stderr)
        return 2
    lambda_client = _lambda_client(args)
    batch_id = str(batch["batch_id"])
    try:
        started = start_durable_batch(lambda_client, function_arn, batch)
    except lambda_client.exceptions.ClientError as error:
        response = error.response
        body = {
            "batch_id": batch_id,
            "orchestrator": DURABLE,
            "error": response.get("Error", {}).get("Code"),
            "message": response.get("Error", {}).get("Message"),
        }
        return _report(args, int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)), body)
    if not args.wait:
        body = {
            "batch_id": batch_id,
            "orchestrator": DURABLE,
            "execution_arn": started.execution_arn,
            "status": "RUNNING",
        }
        return _report(args, started.status_code, body)
    try:
        execution = wait_for_durable_batch(
            lambda_client, started.execution_arn, timeout=args.timeout, poll_seconds=2.0
        )
    except DurableBatchStillRunningError:
        print(f"orderbatch: batch {batch_id} still running after {args.timeout:.0f} s")
        return 2
    return _report(args, HTTPStatus.OK, batch_document(batch_id, execution))


def _durable_status(args: argparse.Namespace, batch_id: str) -> int:
    from order_processing.durable_batches import durable_execution
    from orderbatch.durable_batches import batch_document

    try:
        function_arn = _durable_function_arn(args)
    except ValueError as error:
        print(f"orderbatch: {error}", file=sys.stderr)
        return 2
    execution = durable_execution(batch_id, function_arn, _lambda_client(args))
    if execution is None:
        body = {"batch_id": batch_id, "orchestrator": DURABLE, "message": f"batch {batch_id} not found"}
        return _report(args, HTTPStatus.NOT_FOUND, body)
    return _report(args, HTTPStatus.OK, batch_document(batch_id, execution))
