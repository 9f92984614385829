"""The HTTP status AWS answers an error code with: the service model's, or, for S3, its documented list.

moto raises some errors with a status AWS does not use for their code (S3's ``InvalidBucketState`` with 400,
where S3 answers 409). An SDK decides what to retry and what to raise by the status, so the local cloud's
answers carry AWS's: one rule for every code a model or S3's list documents, not a fix per exception.
"""

from __future__ import annotations

from functools import cache

import botocore.session
from botocore.model import ServiceModel

# S3's documented error codes and their statuses (docs: S3 API reference, "Error responses": the list of
# error codes). Any S3 operation may answer them; its model lists only a few.
S3_DOCUMENTED_STATUSES = {
    "AccessDenied": 403,
    "BadDigest": 400,
    "EntityTooLarge": 400,
    "EntityTooSmall": 400,
    "IncompleteBody": 400,
    "InvalidArgument": 400,
    "InvalidBucketName": 400,
    "InvalidDigest": 400,
    "InvalidRange": 416,
    "InvalidRequest": 400,
    "InvalidStorageClass": 400,
    "InvalidTag": 400,
    "InvalidPart": 400,
    "InvalidPartOrder": 400,
    "InvalidURI": 400,
    "KeyTooLongError": 400,
    "MalformedXML": 400,
    "MalformedPolicy": 400,
    "MalformedACLError": 400,
    "MetadataTooLarge": 400,
    "MethodNotAllowed": 405,
    "MissingContentLength": 411,
    "MissingRequestBodyError": 400,
    "NoSuchBucket": 404,
    "NoSuchKey": 404,
    "NoSuchUpload": 404,
    "NoSuchVersion": 404,
    "NoSuchBucketPolicy": 404,
    "NoSuchTagSet": 404,
    "NoSuchLifecycleConfiguration": 404,
    "NoSuchCORSConfiguration": 404,
    "NoSuchWebsiteConfiguration": 404,
    "ServerSideEncryptionConfigurationNotFoundError": 404,
    "ObjectLockConfigurationNotFoundError": 404,
    "OwnershipControlsNotFoundError": 404,
    "NoSuchPublicAccessBlockConfiguration": 404,
    "ReplicationConfigurationNotFoundError": 404,
    "PreconditionFailed": 412,
    "RequestTimeTooSkewed": 403,
    "BucketAlreadyExists": 409,
    "BucketAlreadyOwnedByYou": 409,
    "BucketNotEmpty": 409,
    "InvalidBucketState": 409,
    "OperationAborted": 409,
    "IllegalLocationConstraintException": 400,
    "InvalidLocationConstraint": 400,
    "NotImplemented": 501,
    "SignatureDoesNotMatch": 403,
    "InvalidAccessKeyId": 403,
    "RequestHeaderSectionTooLarge": 400,
    "UnexpectedContent": 400,
    "InvalidObjectState": 403,
    "NoSuchObjectLockConfiguration": 404,
    "InvalidEncryptionAlgorithmError": 400,
    "NoSuchConfiguration": 404,
    "CrossLocationLoggingProhibited": 403,
    "InvalidTargetBucketForLogging": 400,
    "InvalidToken": 400,
    "ExpiredToken": 400,
    "AccessForbidden": 403,
    "BadRequest": 400,
    "InvalidSecurity": 403,
    "InvalidPolicyDocument": 400,
    "InvalidPayer": 403,
    "TooManyBuckets": 400,
    "AuthorizationHeaderMalformed": 400,
    "MaxMessageLengthExceeded": 400,
    "RequestTimeout": 400,
    "SlowDown": 503,
    "NoSuchAccessPoint": 404,
    "InvalidBucketAclWithObjectOwnership": 400,
    "UnresolvableGrantByEmailAddress": 400,
    # Account-regional bucket namespaces (2025): a name without the suffix its namespace header asks for.
    "InvalidNamespaceHeader": 400,
}


def documented_status(service_name: str, code: str) -> int | None:
    """AWS's HTTP status for ``code`` answered by ``service_name``, or None where nothing documents one."""
    return _documented_statuses(service_name).get(code)


@cache
def _documented_statuses(service_name: str) -> dict[str, int]:
    session = botocore.session.get_session()
    model = ServiceModel(session.get_service_data(service_name), service_name=service_name)
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
