"""Powertools idempotency for the task functions' bodies and the batch summary, in one place.

One persistence layer per step body, key, table and client, built on first use (never at import) and
kept for the life of the execution environment, as Powertools means it to be: each construction
registers one more User-Agent hook on the client, so a layer per call made every request of a warm
environment slower, invocation after invocation (lint rule W9541 finds that pattern).
POWERTOOLS_IDEMPOTENCY_DISABLED=1 (Powertools' own switch) still works: the decorated function checks it
on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

from handlers import clients

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_dynamodb.client import DynamoDBClient

    from handlers.environment import IdempotencyEnvironment

# What a body returns is stored as its idempotency record, so it is a JSON object.
ResultT = TypeVar("ResultT", bound=Mapping[str, object])


@dataclass(frozen=True)
class IdempotencyKey:
    """Where the key and the validated payload sit in the data handed to the body as `data_argument`."""

    key_path: str
    payload_validation_path: str
    data_argument: str
    raise_on_missing_key: bool


# An order step runs at most once per order ID; the same ID with other `order` content is a conflict.
ORDER_STEP = IdempotencyKey(
    key_path="order_id",
    payload_validation_path="order",
    data_argument="order_state",
    raise_on_missing_key=True,
)
# The same batch ID summarized from different outcomes is a defect, not a replay.
BATCH_SUMMARY = IdempotencyKey(
    key_path="batch_id",
    payload_validation_path="[results, second_pass, source, map_result, second_pass_result]",
    data_argument="request",
    raise_on_missing_key=False,
)
# An S3 batch's deferred orders are set aside once per batch, from one first-pass Map result.
DEFERRED_ORDERS = IdempotencyKey(
    key_path="batch_id",
    payload_validation_path="map_result",
    data_argument="request",
    raise_on_missing_key=True,
)


def run_once(
    body: Callable[..., ResultT],
    key: IdempotencyKey,
    data: Mapping[str, object],
    *,
    idempotency: IdempotencyEnvironment,
    context: LambdaContext,
    **other_arguments: object,
) -> ResultT:
    """Run `body` at most once per key while the record lives.

    The same key with a different payload raises IdempotencyValidationError, a concurrent duplicate raises
    IdempotencyAlreadyInProgressError, and an exception in the body deletes the record so a retry runs
    again. All three propagate to the caller.
    """
    config = IdempotencyConfig(
        event_key_jmespath=key.key_path,
        payload_validation_jmespath=key.payload_validation_path,
        raise_on_no_idempotency_key=key.raise_on_missing_key,
        expires_after_seconds=idempotency.idempotency_expiry_seconds,
    )
    # An INPROGRESS record then expires when this invocation's time runs out, not after the full expiry.
    config.register_lambda_context(context)
    persistence = _persistence_layer(
        f"{body.__module__}.{body.__qualname__}",
        key,
        idempotency.idempotency_table_name,
        idempotency.idempotency_expiry_seconds,
        clients.dynamodb(),
    )
    run = idempotent_function(
        body, data_keyword_argument=key.data_argument, persistence_store=persistence, config=config
    )
    result: ResultT = run(**{key.data_argument: data}, **other_arguments)
    return result


# One layer per decorated body (by name: a step's body may be a new closure each call), as Powertools means
# a layer to be used: it keeps the settings of the first config it sees (configured once) and names its
# records after the body it last ran, so the key, expiry, table and client select it with the body. An
# environment has one or two bodies and one client; only tests, running every step in one process and
# forgetting clients, make more.
@lru_cache(maxsize=32)
def _persistence_layer(
    body_name: str,
    key: IdempotencyKey,
    table_name: str,
    expiry_seconds: int,
    client: DynamoDBClient,
) -> DynamoDBPersistenceLayer:
    return DynamoDBPersistenceLayer(table_name=table_name, boto3_client=client)
