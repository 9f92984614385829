"""The HTTP status AWS answers an error code with: the service model's, or, for S3, its documented list.

moto raises some errors with a status AWS does not use for their code (S3's ``InvalidBucketState`` with 400,
where S3 answers 409). An SDK decides what to retry and what to raise by the status, so the local cloud's
answers carry AWS's: one rule for every code a model or S3's list documents, not a fix per exception.
"""

from __future__ import annotations

from functools import cache

from sam_local_cloud import sdk_models
from sam_local_cloud.aws_limits import S3_DOCUMENTED_STATUSES


def documented_status(service_name: str, code: str) -> int | None:
    """AWS's HTTP status for ``code`` answered by ``service_name``, or None where nothing documents one."""
    return _documented_statuses(service_name).get(code)


@cache
def _documented_statuses(service_name: str) -> dict[str, int]:
    model = sdk_models.service_model(service_name)
    statuses: dict[str, int] = dict(S3_DOCUMENTED_STATUSES) if service_name == "s3" else {}
    for name in model.shape_names:
        shape = model.shape_for(name)
        if not shape.metadata.get("exception"):
            continue
        error = shape.metadata.get("error") or {}
        if error.get("httpStatusCode") is not None:
            statuses.setdefault(shape.name, int(error["httpStatusCode"]))
            statuses.setdefault(str(error.get("code", shape.name)), int(error["httpStatusCode"]))
        # A JSON service compatible with its query protocol answers the query protocol's code.
        query_error = shape.metadata.get("awsQueryError") or {}
        if query_error.get("code") and query_error.get("httpStatusCode") is not None:
            statuses.setdefault(str(query_error["code"]), int(query_error["httpStatusCode"]))
    return statuses
