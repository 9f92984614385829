"""A Docker-free local AWS cloud for SAM apps.

It deploys a SAM template on one machine and runs it: Step Functions on moto's interpreter, each
function's real handler code in Lambda runtime processes under Lambda's concurrency quota (the 429s
included), DynamoDB, S3, SQS, EventBridge, IAM and the HTTP API. Nothing needs Docker or an AWS account.

    from sam_local_cloud import LocalCloud

    with LocalCloud(port=0, account_concurrency=10) as cloud:
        stack = cloud.deploy("template.yaml", parameters={"Stage": "test"})
        stepfunctions = cloud.client("stepfunctions")
        started = stepfunctions.start_execution(stateMachineArn=stack.outputs["StateMachineArn"])

The names below are the public API, with the modules ``faults``, ``stack``, ``aws_limits``, ``executions``,
``state_names``, ``json_types``, ``cli`` and ``docker_api``; everything else in the package may change
between releases.
Importing the package is cheap: the cloud's own modules (moto among them) load when first named.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "DUMMY_CREDENTIALS",
    "DeployedStack",
    "ExecutionResult",
    "ExecutionStillRunningError",
    "FaultPlan",
    "LocalCloud",
    "LocalCloudConfig",
    "StaticCredentials",
    "finished_execution",
    "wait_for_execution",
]

# Public name -> the module that defines it, imported on first use.
_HOMES = {
    "DUMMY_CREDENTIALS": "sam_local_cloud.credentials",
    "StaticCredentials": "sam_local_cloud.credentials",
    "LocalCloud": "sam_local_cloud.cloud",
    "LocalCloudConfig": "sam_local_cloud.cloud_config",
    "DeployedStack": "sam_local_cloud.deployed_stack",
    "FaultPlan": "sam_local_cloud.lambda_service.faults",
    "ExecutionResult": "sam_local_cloud.executions",
    "ExecutionStillRunningError": "sam_local_cloud.executions",
    "finished_execution": "sam_local_cloud.executions",
    "wait_for_execution": "sam_local_cloud.executions",
}

if TYPE_CHECKING:
    from sam_local_cloud.cloud import LocalCloud
    from sam_local_cloud.cloud_config import LocalCloudConfig
    from sam_local_cloud.credentials import DUMMY_CREDENTIALS, StaticCredentials
    from sam_local_cloud.deployed_stack import DeployedStack
    from sam_local_cloud.executions import (
        ExecutionResult,
        ExecutionStillRunningError,
        finished_execution,
        wait_for_execution,
    )
    from sam_local_cloud.lambda_service.faults import FaultPlan


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sam_local_cloud' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
