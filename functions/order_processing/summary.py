"""The batch summary: per-order outcomes counted, sorted and, for S3 batches, stored in S3.

The state machine hands over the outcomes in one of two shapes:

- inline Map: ``{"batch_id", "results": [order state, ...]}``;
- Distributed Map with a ResultWriter: ``{"batch_id", "source", "map_result": {"ResultWriterDetails":
  {"Bucket", "Key"}}}`` where Key is the manifest.json Step Functions wrote. The manifest lists result
  files under ``ResultFiles.SUCCEEDED/FAILED/PENDING``; each file is a JSON array (or JSON Lines) of
  child executions ``{"ExecutionArn", "Input", "Output", "Status", "Error"?, "Cause"?, ...}`` whose
  Input and Output are JSON strings. With ``WriterConfig.Transformation`` COMPACT or FLATTEN the
  entries are the children's outputs themselves; both are read.

Orders throttled until their retrier ran out end the batch's first pass DEFERRED, holding the step to run
again and its input (``resume_at``, ``resume_input``); the second pass runs them again. Its outcomes come
as ``second_pass`` (a list, inline) or ``second_pass_result`` (its Map's ResultWriter details, S3) and
replace the deferred outcomes of the same items. For an S3 batch, ``set_aside_deferred_orders`` first
writes the deferred orders to S3 as the JSON array the second pass's ItemReader reads.

A child execution that did not succeed has no order state: it counts as FAILED with code
TASK_FAILED, identified from its Input (the per-order Map item). The result files must account for
every item of the map run (DescribeMapRun's itemCounts.total), or the summary is refused.

The summary is a pure function of its input, so computing or storing it twice is harmless.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, TypedDict

import boto3

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_stepfunctions.client import SFNClient

SUCCEEDED, FAILED, REJECTED, DUPLICATE = "SUCCEEDED", "FAILED", "REJECTED", "DUPLICATE"
# Not final: the order waits for the second pass (the state machine's throttled states).
DEFERRED = "DEFERRED"
FINAL_OUTCOMES = (SUCCEEDED, FAILED, REJECTED, DUPLICATE)
TASK_FAILED = "TASK_FAILED"
CONFLICTING_ORDER = "CONFLICTING_ORDER"
RESULT_FILE_CATEGORIES = ("SUCCEEDED", "FAILED", "PENDING")
MAX_CAUSE_CHARS = 500


# One order's outcome: order_id, item_index, outcome, code and reason, as read from the Map's results.
OrderOutcome = dict[str, object]


class BatchCounts(TypedDict):
    batch_id: str
    total: int
    succeeded: int
    failed: int
    rejected: int
    duplicate: int
    conflicting: int
    second_pass: int


class BatchSummary(BatchCounts):
    orders: list[OrderOutcome]


class StoredBatchSummary(BatchCounts):
    """An S3 batch's summary: its orders are in S3, at ``orders_location``."""

    orders_location: str


class SetAsideOrders(TypedDict):
    Bucket: str
    Key: str
    count: int


def batch_totals(summary: BatchCounts) -> dict[str, int]:
    """The orders a summary counts, by outcome: what the functions log and publish as metrics."""
    return {
        "total": summary["total"],
        "succeeded": summary["succeeded"],
        "failed": summary["failed"],
        "rejected": summary["rejected"],
        "duplicate": summary["duplicate"],
    }


class IncompleteMapResultsError(RuntimeError):
    """The result files account for fewer (or more) orders than the map run processed."""


def summarize_batch(
    *,
    request: Mapping[str, object],
    results_bucket: str,
    s3_client: S3Client | None = None,
    sfn_client: SFNClient | None = None,
) -> BatchSummary | StoredBatchSummary:
    """Summarize one batch from the state machine's request (see the module docstring)."""
    batch_id = request.get("batch_id")
    if not isinstance(batch_id, str) or not batch_id:
        raise ValueError("summary request has no batch_id")

    if "results" in request:
        outcomes = [outcome_of_result(entry) for entry in _list(request["results"], "results")]
        second_pass = [outcome_of_result(entry) for entry in _list(request.get("second_pass"), "second_pass")]
    elif "map_result" in request:
        s3_client = s3_client or boto3.client("s3")
        map_result = _mapping(request["map_result"], "map_result")
        outcomes = _outcomes_of_map_run(batch_id, map_result, s3_client, sfn_client)
        second_result = _mapping(request.get("second_pass_result"), "second_pass_result")
        second_pass = (
            _outcomes_of_map_run(batch_id, second_result, s3_client, sfn_client) if second_result else []
        )
    else:
        raise ValueError(f"summary request of batch {batch_id} has neither results nor map_result")

    summary = summarize_outcomes(batch_id, with_second_pass(outcomes, second_pass), len(second_pass))
    if "source" not in request and "map_result" not in request:
        return summary
    # An S3 batch can be far larger than the 256 KiB a state's output may carry.
    location = write_summary(summary, results_bucket, s3_client or boto3.client("s3"))
    counts: BatchCounts = {
        "batch_id": summary["batch_id"],
        "total": summary["total"],
        "succeeded": summary["succeeded"],
        "failed": summary["failed"],
        "rejected": summary["rejected"],
        "duplicate": summary["duplicate"],
        "conflicting": summary["conflicting"],
        "second_pass": summary["second_pass"],
    }
    return {**counts, "orders_location": location}


def set_aside_deferred_orders(
    *,
    request: Mapping[str, object],
    results_bucket: str,
    s3_client: S3Client | None = None,
) -> SetAsideOrders:
    """Write the orders an S3 batch's first pass deferred to ``results_bucket``, as a JSON array of their
    order states (``resume_at``, ``resume_input``, ...): the second pass's ItemReader reads it."""
    batch_id = request.get("batch_id")
    if not isinstance(batch_id, str) or not batch_id:
        raise ValueError("set-aside request has no batch_id")
    if not results_bucket:
        raise ValueError(f"no results bucket to write the deferred orders of batch {batch_id} to")
    s3 = s3_client or boto3.client("s3")
    map_result = _mapping(request.get("map_result"), "map_result")
    bucket, manifest_key = _manifest_location(batch_id, map_result, "set-aside")
    deferred = [
        state
        for state in read_order_states(load_manifest(bucket, manifest_key, s3), bucket, s3)
        if state.get("outcome") == DEFERRED
    ]
    key = f"batches/{batch_id}/deferred-orders.json"
    _put_json(deferred, results_bucket, key, s3)
    return {"Bucket": results_bucket, "Key": key, "count": len(deferred)}


def with_second_pass(
    first_pass: Iterable[Mapping[str, object]], second_pass: Iterable[Mapping[str, object]]
) -> list[OrderOutcome]:
    """The batch's outcomes: each deferred order's second-pass outcome in place of its deferral.

    A deferral the second pass did not account for stays a failure: total always counts every order.
    """
    second = [dict(outcome) for outcome in second_pass]
    rerun = {outcome.get("item_index") for outcome in second}
    outcomes = [
        dict(outcome)
        for outcome in first_pass
        if not (outcome["outcome"] == DEFERRED and outcome.get("item_index") in rerun)
    ]
    return [
        _task_failed(outcome, "its workflow ended in the non-final outcome DEFERRED")
        if outcome["outcome"] == DEFERRED
        else outcome
        for outcome in [*outcomes, *second]
    ]


def _outcomes_of_map_run(
    batch_id: str, map_result: Mapping[str, object], s3: S3Client, sfn_client: SFNClient | None
) -> list[OrderOutcome]:
    bucket, manifest_key = _manifest_location(batch_id, map_result, "summary")
    manifest = load_manifest(bucket, manifest_key, s3)
    outcomes = list(read_result_files(manifest, bucket, s3))
    map_run_arn = map_result.get("MapRunArn") or manifest.get("MapRunArn")
    if map_run_arn:
        require_every_item(str(map_run_arn), len(outcomes), f"s3://{bucket}/{manifest_key}", sfn_client)
    return outcomes


def summarize_outcomes(
    batch_id: str, outcomes: Iterable[Mapping[str, object]], second_pass: int = 0
) -> BatchSummary:
    """The counts and the sorted outcomes; ``second_pass`` is how many orders the second pass ran again."""
    orders = [dict(outcome) for outcome in sorted(outcomes, key=_item_order)]
    count = {outcome: sum(1 for order in orders if order["outcome"] == outcome) for outcome in FINAL_OUTCOMES}
    return {
        "batch_id": batch_id,
        "total": len(orders),
        "succeeded": count[SUCCEEDED],
        "failed": count[FAILED],
        "rejected": count[REJECTED],
        "duplicate": count[DUPLICATE],
        "conflicting": sum(
            1 for order in orders if order["outcome"] == REJECTED and order["code"] == CONFLICTING_ORDER
        ),
        "second_pass": second_pass,
        "orders": orders,
    }


def outcome_of_result(entry: object) -> OrderOutcome:
    """One Map result (an order state, a child execution record or an error output) as an outcome."""
    if isinstance(entry, Mapping) and "ExecutionArn" in entry and "Status" in entry:
        return outcome_of_child_execution(entry)
    if isinstance(entry, Mapping) and "outcome" in entry:
        return outcome_of_order_state(entry)
    if isinstance(entry, Mapping) and "Error" in entry:
        return _task_failed(None, f"{entry['Error']}: {entry.get('Cause')}")
    return _task_failed(None, f"it returned no order state ({_shorten(json.dumps(entry, default=str))})")


def outcome_of_order_state(state: Mapping[str, object]) -> OrderOutcome:
    outcome = state.get("outcome")
    if outcome not in (*FINAL_OUTCOMES, DEFERRED):
        # A per-order workflow must end in a final outcome; anything else is a defect, counted as a failure
        # so that total always equals succeeded + failed + rejected + duplicate.
        return _task_failed(state, f"its workflow ended in the non-final outcome {outcome}")
    return {
        "order_id": state.get("order_id"),
        "item_index": state.get("item_index"),
        "outcome": outcome,
        "code": state.get("code"),
        "reason": state.get("reason"),
    }


def outcome_of_child_execution(record: Mapping[str, object], status: object = None) -> OrderOutcome:
    """A Distributed Map child execution record (Transformation NONE) as an outcome."""
    status = record.get("Status") or status
    if status == "SUCCEEDED":
        output = _parse_json_field(record.get("Output"))
        if isinstance(output, Mapping):
            return outcome_of_result(output)
        return _task_failed(
            _parse_json_field(record.get("Input")), "its child execution returned no order state"
        )
    item = _parse_json_field(record.get("Input"))
    error, cause = record.get("Error"), record.get("Cause")
    detail = f"{error}: {cause}" if error or cause else f"its child execution ended {status}"
    return _task_failed(item, detail)


def load_manifest(bucket: str, key: str, s3: S3Client) -> dict[str, object]:
    manifest = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    if not isinstance(manifest, dict):
        raise ValueError(f"s3://{bucket}/{key} is not a ResultWriter manifest")
    return manifest


def read_result_files(manifest: Mapping[str, object], bucket: str, s3: S3Client) -> Iterator[OrderOutcome]:
    """Every child execution listed by a ResultWriter manifest, as outcomes."""
    for category, entry in _result_entries(manifest, bucket, s3):
        if isinstance(entry, Mapping) and "ExecutionArn" in entry:
            yield outcome_of_child_execution(entry, status=category)
        else:
            yield outcome_of_result(entry)


def read_order_states(
    manifest: Mapping[str, object], bucket: str, s3: S3Client
) -> Iterator[dict[str, object]]:
    """The order state each succeeded child execution returned, every field kept."""
    for category, entry in _result_entries(manifest, bucket, s3):
        if isinstance(entry, Mapping) and "ExecutionArn" in entry:
            if (entry.get("Status") or category) != "SUCCEEDED":
                continue
            entry = _parse_json_field(entry.get("Output"))
        if isinstance(entry, Mapping) and "outcome" in entry:
            yield dict(entry)


def _result_entries(
    manifest: Mapping[str, object], bucket: str, s3: S3Client
) -> Iterator[tuple[str, object]]:
    results_bucket = str(manifest.get("DestinationBucket") or bucket)
    result_files = _mapping(manifest.get("ResultFiles"), "ResultFiles")
    for category in RESULT_FILE_CATEGORIES:
        for result_file in _list(result_files.get(category), f"ResultFiles.{category}"):
            key = _mapping(result_file, f"a ResultFiles.{category} entry")["Key"]
            body = s3.get_object(Bucket=results_bucket, Key=str(key))["Body"].read()
            for entry in _json_array_or_lines(body.decode("utf-8")):
                yield category, entry


def require_every_item(
    map_run_arn: str, results_read: int, manifest_location: str, sfn_client: SFNClient | None = None
) -> None:
    """Refuse a summary that silently misses orders.

    moto 5.2's ResultWriter writes a manifest listing no result files at all; a summary built from it
    would report an empty batch as if nothing had happened.
    """
    sfn = sfn_client or boto3.client("stepfunctions")
    items = sfn.describe_map_run(mapRunArn=map_run_arn)["itemCounts"]["total"]
    if items != results_read:
        raise IncompleteMapResultsError(
            f"the ResultWriter manifest {manifest_location} lists {results_read} child results but map run "
            f"{map_run_arn} processed {items} items; refusing to summarize a partial batch"
        )


def write_summary(summary: BatchSummary, bucket: str, s3: S3Client) -> str:
    if not bucket:
        raise ValueError(f"no results bucket to write the summary of batch {summary['batch_id']} to")
    key = f"batches/{summary['batch_id']}/summary.json"
    _put_json(summary, bucket, key, s3)
    return f"s3://{bucket}/{key}"


def _put_json(document: object, bucket: str, key: str, s3: S3Client) -> None:
    s3.put_object(
        Bucket=bucket,
        Key=key,
        Body=json.dumps(document, separators=(",", ":")).encode("utf-8"),
        ContentType="application/json",
    )


def _manifest_location(batch_id: str, map_result: Mapping[str, object], request: str) -> tuple[str, str]:
    """The bucket and key of the ResultWriter manifest a Map's result names."""
    details = _mapping(map_result.get("ResultWriterDetails"), "map_result.ResultWriterDetails")
    bucket, manifest_key = details.get("Bucket"), details.get("Key")
    if not bucket or not manifest_key:
        raise ValueError(f"{request} request of batch {batch_id} has no map_result.ResultWriterDetails")
    return str(bucket), str(manifest_key)


def outcome_of_failed_item(item: object, detail: str) -> OrderOutcome:
    """An order whose per-order workflow failed outside any step (a durable map branch that raised)."""
    return _task_failed(item, detail)


def _task_failed(item: object, detail: str) -> OrderOutcome:
    """An order whose workflow failed; `item` is its Map item or partial order state, when known."""
    known: Mapping[str, object] = item if isinstance(item, Mapping) else {}
    item_order = known.get("order")
    order: Mapping[str, object] = item_order if isinstance(item_order, Mapping) else {}
    order_id = known.get("order_id") or order.get("order_id")
    item_index = known.get("item_index")
    return {
        "order_id": order_id if isinstance(order_id, str | int) else None,
        "item_index": item_index if isinstance(item_index, int) else None,
        "outcome": FAILED,
        "code": TASK_FAILED,
        "reason": f"{_describe_order(known, order_id)} failed: {_shorten(detail)}",
    }


def _describe_order(item: Mapping[str, object], order_id: object) -> str:
    if isinstance(order_id, str | int) and order_id != "":
        return f"order {order_id}"
    item_index = item.get("item_index")
    if not isinstance(item_index, int):
        return "an order of unknown position"
    if item.get("source_format") == "csv":
        return f"the order on CSV line {item_index + 2}"
    return f"the order at item index {item_index}"


def _item_order(outcome: Mapping[str, object]) -> tuple[bool, int, str]:
    item_index = outcome.get("item_index")
    known = isinstance(item_index, int)
    return (not known, item_index if isinstance(item_index, int) else 0, str(outcome.get("order_id") or ""))


def _parse_json_field(value: object) -> object:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return value


def _json_array_or_lines(text: str) -> list[object]:
    stripped = text.strip()
    if not stripped:
        return []
    if stripped.startswith("["):
        entries: object = json.loads(stripped)
        return entries if isinstance(entries, list) else [entries]
    return [json.loads(line) for line in stripped.splitlines() if line.strip()]


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_CAUSE_CHARS else text[: MAX_CAUSE_CHARS - 3] + "..."


def _mapping(value: object, name: str) -> Mapping[str, object]:
    """A JSON object of the request, absent or null read as empty."""
    if not value:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} is not a JSON object")
    return value


def _list(value: object, name: str) -> list[object]:
    """A JSON array of the request, absent or null read as empty."""
    if not value:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{name} is not a JSON array")
    return value
