"""The errors moto's Step Functions interpreter raises, answered with their AWS error codes.

moto's parser (ported from LocalStack) declares each of its errors with a ``code`` (InvalidExecutionInput,
InvalidName, InvalidToken, TaskDoesNotExist, TaskTimedOut, ResourceNotFound, ...), but moto's response
layer reads ``TYPE``, which those classes leave unset: boto3 saw an empty error code, for example for
StartExecution of a Standard machine with input that is not JSON. Each class gets its code as its type.
"""

from __future__ import annotations

import inspect

from sam_local_cloud.moto_seam import hooks


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import AWSError, api

    for _, error_class in inspect.getmembers(api, inspect.isclass):
        code = error_class.__dict__.get("code")
        if issubclass(error_class, AWSError) and error_class.TYPE is None and isinstance(code, str):
            hooks.replace(error_class, "TYPE", code, concern="errors")
