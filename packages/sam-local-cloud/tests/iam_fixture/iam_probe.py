"""Makes the same AWS calls whatever its role allows, and reports what each one answered."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import boto3
from botocore.exceptions import ClientError


def _outcome(call: Callable[[], Any]) -> dict[str, Any]:
    try:
        call()
    except ClientError as error:
        return {
            "code": error.response["Error"]["Code"],
            "message": error.response["Error"].get("Message", ""),
            "status": error.response["ResponseMetadata"]["HTTPStatusCode"],
        }
    return {"code": None}


def handler(event: Any, context: Any) -> dict[str, Any]:
    table, bucket = os.environ["TABLE_NAME"], os.environ["BUCKET_NAME"]
    dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
    return {
        "dynamodb:GetItem": _outcome(lambda: dynamodb.get_item(TableName=table, Key={"id": {"S": "a"}})),
        "dynamodb:PutItem": _outcome(lambda: dynamodb.put_item(TableName=table, Item={"id": {"S": "a"}})),
        "s3:ListBucket": _outcome(lambda: s3.list_objects_v2(Bucket=bucket)),
        "s3:PutObject": _outcome(lambda: s3.put_object(Bucket=bucket, Key="probe.txt", Body=b"x")),
    }
