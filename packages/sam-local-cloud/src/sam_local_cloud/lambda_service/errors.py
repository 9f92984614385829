"""Lambda API errors, each carrying its AWS error code, HTTP status and body fields.

The body fields follow botocore's ``lambda`` service model, so a boto3 client parses them exactly as it
parses AWS's own answers (``ClientError.response["Error"]["Code"]``, ``response["Reason"]`` ...).
"""

from __future__ import annotations

CONCURRENT_INVOCATION_LIMIT_EXCEEDED = "ConcurrentInvocationLimitExceeded"
RESERVED_FUNCTION_CONCURRENT_INVOCATION_LIMIT_EXCEEDED = "ReservedFunctionConcurrentInvocationLimitExceeded"


class LambdaApiError(Exception):
    """An error answer of the Lambda API (never a function error, which is an HTTP 200)."""

    code = "ServiceException"
    status = 500
    message_field = "message"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def body(self) -> dict[str, str]:
        return {"Type": "User" if self.status < 500 else "Service", self.message_field: self.message}

    def headers(self) -> dict[str, str]:
        return {"x-amzn-ErrorType": self.code}


class TooManyRequestsError(LambdaApiError):
    code = "TooManyRequestsException"
    status = 429
    retry_after_seconds = "1"

    def __init__(self, reason: str) -> None:
        super().__init__("Rate Exceeded.")
        self.reason = reason

    def body(self) -> dict[str, str]:
        return {**super().body(), "Reason": self.reason}

    def headers(self) -> dict[str, str]:
        return {**super().headers(), "Retry-After": self.retry_after_seconds}


class ResourceNotFoundError(LambdaApiError):
    code = "ResourceNotFoundException"
    status = 404
    message_field = "Message"


class InvalidParameterValueError(LambdaApiError):
    code = "InvalidParameterValueException"
    status = 400


class InvalidRequestContentError(LambdaApiError):
    code = "InvalidRequestContentException"
    status = 400


class RequestTooLargeError(LambdaApiError):
    code = "RequestTooLargeException"
    status = 413


class UnsupportedOperationError(LambdaApiError):
    """An operation the local Lambda service does not implement (AWS has no such code; ours is explicit)."""

    code = "UnsupportedOperationException"
    status = 400


class ServiceError(LambdaApiError):
    code = "ServiceException"
    status = 500
