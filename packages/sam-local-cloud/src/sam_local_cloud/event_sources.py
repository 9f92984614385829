"""Lambda's SQS event source mappings: queues polled, batches handed to functions, deleted on success.

A function with an ``SQS`` event (SAM) or an ``AWS::Lambda::EventSourceMapping`` on a queue is invoked as
Lambda's pollers invoke it: with up to ``BatchSize`` messages in the ``{"Records": [...]}`` shape Lambda
documents, synchronously, under the account's concurrency quota (a throttled batch waits and is polled
again). A batch whose invocation succeeds is deleted; one that fails stays in the queue and comes back when
its visibility timeout ends, so ``maxReceiveCount`` and the queue's dead-letter queue apply as on AWS. With
``ReportBatchItemFailures`` only the messages the function names in ``batchItemFailures`` stay.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_lambda.type_defs import InvocationResponseTypeDef
    from mypy_boto3_sqs.client import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

_LOGGER = logging.getLogger(__name__)
POLL_WAIT_SECONDS = 1
IDLE_PAUSE_SECONDS = 0.2


@dataclass(frozen=True)
class QueueMapping:
    """One function's subscription to one queue."""

    function_name: str
    queue_arn: str
    batch_size: int = 10
    report_item_failures: bool = False
    enabled: bool = True
    filters: list[dict[str, Any]] = field(default_factory=list)

    @property
    def queue_url_path(self) -> str:
        """The queue's URL path (``/account/name``), which the local SQS resolves on any host."""
        _, _, _, _, account, name = self.queue_arn.split(":", 5)
        return f"/{account}/{name}"


def mappings_from_template(function_name: str, events: Mapping[str, Any]) -> list[QueueMapping]:
    """The mappings SAM creates from a function's ``Type: SQS`` events."""
    found = []
    for event in events.values():
        if event.get("Type") != "SQS":
            continue
        props = event.get("Properties") or {}
        found.append(
            QueueMapping(
                function_name=function_name,
                queue_arn=str(props["Queue"]),
                batch_size=int(props.get("BatchSize", 10)),
                report_item_failures="ReportBatchItemFailures" in (props.get("FunctionResponseTypes") or []),
                enabled=props.get("Enabled", True) not in (False, "false", "False"),
                filters=list(((props.get("FilterCriteria") or {}).get("Filters")) or []),
            )
        )
    return found


def mapping_from_resource(props: Mapping[str, Any]) -> QueueMapping | None:
    """An ``AWS::Lambda::EventSourceMapping`` on an SQS queue; None for other sources (streams, Kafka)."""
    source = str(props.get("EventSourceArn", ""))
    if not source.startswith("arn:aws:sqs:"):
        return None
    return QueueMapping(
        function_name=str(props["FunctionName"]).rsplit(":", 1)[-1]
        if str(props["FunctionName"]).startswith("arn:")
        else str(props["FunctionName"]),
        queue_arn=source,
        batch_size=int(props.get("BatchSize", 10)),
        report_item_failures="ReportBatchItemFailures" in (props.get("FunctionResponseTypes") or []),
        enabled=props.get("Enabled", True) not in (False, "false", "False"),
        filters=list(((props.get("FilterCriteria") or {}).get("Filters")) or []),
    )


class QueuePollers:
    """One polling thread per enabled mapping, until ``stop``."""

    def __init__(
        self,
        mappings: list[QueueMapping],
        sqs: SQSClient | None,
        invoke: Callable[..., InvocationResponseTypeDef],
        region: str,
    ) -> None:
        self._mappings = [mapping for mapping in mappings if mapping.enabled]
        self._sqs = sqs
        self._invoke = invoke
        self._region = region
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for mapping in self._mappings:
            thread = threading.Thread(
                target=self._poll, args=(mapping,), name=f"sqs-poller-{mapping.function_name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stopped.set()
        for thread in self._threads:
            thread.join(timeout=POLL_WAIT_SECONDS + 5)

    def _poll(self, mapping: QueueMapping) -> None:
        # No client is given when no mapping is, and then no poller runs.
        sqs = self._sqs
        assert sqs is not None
        queue_url = sqs.meta.endpoint_url.rstrip("/") + mapping.queue_url_path
        while not self._stopped.is_set():
            try:
                received = sqs.receive_message(
                    QueueUrl=queue_url,
                    MaxNumberOfMessages=min(mapping.batch_size, 10),
                    WaitTimeSeconds=POLL_WAIT_SECONDS,
                    AttributeNames=["All"],
                    MessageAttributeNames=["All"],
                )
                messages = received.get("Messages") or []
                if messages:
                    self._deliver(sqs, mapping, queue_url, messages)
                else:
                    self._stopped.wait(IDLE_PAUSE_SECONDS)
            except Exception:  # a poller keeps polling, as Lambda's do; the failure is logged
                if self._stopped.is_set():
                    return
                _LOGGER.exception("polling %s for %s failed", mapping.queue_arn, mapping.function_name)
                self._stopped.wait(1.0)

    def _deliver(
        self, sqs: SQSClient, mapping: QueueMapping, queue_url: str, messages: Sequence[MessageTypeDef]
    ) -> None:
        matching = [m for m in messages if _matches(mapping.filters, m)]
        # Lambda deletes messages its filters drop, without invoking the function.
        unmatched = [m for m in messages if m not in matching]
        if matching:
            event = {"Records": [_record(message, mapping.queue_arn, self._region) for message in matching]}
            try:
                answer = self._invoke(FunctionName=mapping.function_name, Payload=json.dumps(event).encode())
            except ClientError as refused:
                if refused.response["Error"]["Code"] != "TooManyRequestsException":
                    raise
                return  # throttled: the batch comes back after its visibility timeout, as on AWS
            if answer.get("FunctionError"):
                return  # the batch comes back after its visibility timeout
            failed = _item_failures(answer) if mapping.report_item_failures else set()
            if failed is None:
                return  # an unreadable batchItemFailures answer fails the whole batch, as on AWS
            unmatched += [m for m in matching if m["MessageId"] not in failed]
        if unmatched:
            sqs.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[
                    {"Id": str(index), "ReceiptHandle": m["ReceiptHandle"]}
                    for index, m in enumerate(unmatched)
                ],
            )


def _item_failures(answer: InvocationResponseTypeDef) -> set[str] | None:
    try:
        body = json.loads(answer["Payload"].read() or b"null")
    except (ValueError, KeyError):
        return None
    if not isinstance(body, dict) or not body.get("batchItemFailures"):
        return set()
    failures = body["batchItemFailures"]
    if not isinstance(failures, list) or not all(
        isinstance(f, dict) and f.get("itemIdentifier") for f in failures
    ):
        return None
    return {str(f["itemIdentifier"]) for f in failures}


def _record(message: MessageTypeDef, queue_arn: str, region: str) -> dict[str, object]:
    """An SQS message as Lambda's SQS event record shows it."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes") or {}),
        "messageAttributes": {
            name: {
                "stringValue": value.get("StringValue"),
                "binaryValue": value.get("BinaryValue"),
                "stringListValues": value.get("StringListValues", []),
                "binaryListValues": value.get("BinaryListValues", []),
                "dataType": value.get("DataType"),
            }
            for name, value in (message.get("MessageAttributes") or {}).items()
        },
        "md5OfBody": message.get("MD5OfBody"),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def _matches(filters: list[dict[str, Any]], message: MessageTypeDef) -> bool:
    """Lambda's filter criteria: a message passes if any filter's pattern matches its record."""
    if not filters:
        return True
    from sam_local_cloud.moto_seam.services import EventPattern

    record: dict[str, object] = {"body": message["Body"], "attributes": message.get("Attributes") or {}}
    with contextlib.suppress(ValueError):
        record["body"] = json.loads(message["Body"])
    patterns = [EventPattern.load(f.get("Pattern")) for f in filters]
    return any(pattern.matches_event(record) for pattern in patterns)  # type: ignore[arg-type]
