"""The keys a local cloud's callers sign with when they have none of their own."""

from __future__ import annotations

from typing import TypedDict


class StaticCredentials(TypedDict):
    aws_access_key_id: str
    aws_secret_access_key: str


# A local cloud checks signatures against the keys it knows, and boto3 refuses to sign without some:
# these are the ones moto and the AWS SDKs' own tests use.
DUMMY_CREDENTIALS = StaticCredentials(aws_access_key_id="testing", aws_secret_access_key="testing")
