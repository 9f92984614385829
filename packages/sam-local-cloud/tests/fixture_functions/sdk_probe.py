"""A test handler: makes two DynamoDB clients in two boto3 Sessions, as a handler and Powertools do."""

from __future__ import annotations

from typing import Any

import boto3


def handler(event: Any, context: Any) -> dict[str, Any]:
    first, second = (boto3.session.Session().client("dynamodb", region_name="us-east-1") for _ in range(2))
    model = first.meta.service_model
    return {
        "same_parsed_model": first._service_model._service_description
        is second._service_model._service_description,
        "operations": len(model.operation_names),
        "endpoint": first.meta.endpoint_url,
    }
