"""A handler with Powertools imported, to measure what a realistic environment costs."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, idempotent_function
from aws_lambda_powertools.utilities.parser import BaseModel

logger = Logger()

__all__ = ["BaseModel", "DynamoDBPersistenceLayer", "idempotent_function"]


@logger.inject_lambda_context
def handler(event: Any, context: Any) -> dict[str, Any]:
    logger.info("task body ran")
    return {"ok": True}
