"""Batches run by the durable variant of the workflow, for the commands and tests: start, read, wait.

The durable function (template output ``DurableOrderBatchFunctionAliasArn``) takes the state machine's
inline input and returns its batch summary. A batch is started with Invoke (``InvocationType=Event``) on
the alias ARN with the batch ID as the durable execution name, which makes a second start of the same batch
the same execution; it is read with GetDurableExecution. ``batch_document`` reports it in the shape the
HTTP API's GET /batches/{id} gives a state machine's batch.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from orderbatch.audit import DURABLE
from sam_local_cloud.executions import poll_delays

if TYPE_CHECKING:
    from mypy_boto3_lambda.client import LambdaClient
    from mypy_boto3_lambda.type_defs import GetDurableExecutionResponseTypeDef

# A durable execution's statuses once it has ended (RUNNING is the only other).
DURABLE_FINISHED_STATUSES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "STOPPED"})


class DurableBatchStillRunningError(AssertionError):
    """The durable execution did not finish before the deadline."""


@dataclass(frozen=True)
class DurableStart:
    """What Invoke answered: 202 for a new or an already started execution of this name and payload."""

    status_code: int
    execution_arn: str


def start_durable_batch(
    lambda_client: LambdaClient, function_arn: str, batch: Mapping[str, object]
) -> DurableStart:
    """Invoke the durable function asynchronously, the batch ID as the execution's name."""
    response = lambda_client.invoke(
        FunctionName=function_arn,
        InvocationType="Event",
        DurableExecutionName=str(batch["batch_id"]),
        Payload=json.dumps(batch).encode(),
    )
    return DurableStart(int(response["StatusCode"]), str(response["DurableExecutionArn"]))


def batch_document(batch_id: str, execution: Mapping[str, object]) -> dict[str, object]:
    """A durable execution as GET /batches/{id} reports a state machine's: status, summary, error."""
    found = execution.get("Error")
    error: Mapping[str, object] = found if isinstance(found, Mapping) else {}
    result = execution.get("Result")
    return {
        "batch_id": batch_id,
        "orchestrator": DURABLE,
        "execution_arn": execution["DurableExecutionArn"],
        "status": execution["Status"],
        "started_at": _iso(execution.get("StartTimestamp")),
        "stopped_at": _iso(execution.get("EndTimestamp")),
        "summary": json.loads(result) if isinstance(result, str | bytes) and result else None,
        "error": error.get("ErrorType"),
        "cause": error.get("ErrorMessage"),
    }


def wait_for_durable_batch(
    lambda_client: LambdaClient,
    execution_arn: str,
    *,
    timeout: float,
    poll_seconds: float = 1.0,
    on_poll: Callable[[str, float], None] | None = None,
) -> GetDurableExecutionResponseTypeDef:
    """Poll GetDurableExecution until the execution has ended; return its last answer."""
    started = time.monotonic()
    status = "RUNNING"
    delays = poll_delays(poll_seconds)
    while (elapsed := time.monotonic() - started) < timeout:
        execution = lambda_client.get_durable_execution(DurableExecutionArn=execution_arn)
        status = str(execution["Status"])
        if on_poll is not None:
            on_poll(status, elapsed)
        if status in DURABLE_FINISHED_STATUSES:
            return execution
        time.sleep(next(delays))
    raise DurableBatchStillRunningError(
        f"durable execution {execution_arn} still {status} after {timeout:.0f} s"
    )


def _iso(value: object) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else (str(value) if value is not None else None)
