"""Every AWS client the functions use: created on first use, never at import, and kept for the life of
the execution environment so warm invocations reuse its connections.

Handlers call these at invocation time (``clients.s3()``), so a test can replace one with monkeypatch
or make the next call build a new one with ``forget_clients()``.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_lambda.client import LambdaClient
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_stepfunctions.client import SFNClient

# Standard mode retries DynamoDB throttles and 5xx with backoff; the state machine retries what is left.
_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3})


@cache
def dynamodb() -> DynamoDBClient:
    return boto3.client("dynamodb", config=_CLIENT_CONFIG)


@cache
def stepfunctions() -> SFNClient:
    return boto3.client("stepfunctions")


@cache
def s3() -> S3Client:
    return boto3.client("s3")


@cache
def lambda_() -> LambdaClient:
    return boto3.client("lambda")


def forget_clients() -> None:
    """The next call of each builds a new client, as a new execution environment would."""
    for client in (dynamodb, stepfunctions, s3, lambda_):
        client.cache_clear()
