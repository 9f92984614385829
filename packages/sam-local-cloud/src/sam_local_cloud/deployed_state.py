"""What ``LocalCloud.reset()`` puts back: the cloud's account as it was just after the deploy.

Kept once, after the deploy (and the seeding): moto's services of the account as deep copies, and the
data plane's tables in its own process. Put back in milliseconds, with no deploy: nothing is created
again, the copies are copied once more and swapped in.
"""

from __future__ import annotations

import time
from typing import Any

from sam_local_cloud.data_plane import DataPlane
from sam_local_cloud.dynamodb import WriteCounter
from sam_local_cloud.lambda_service import LambdaService
from sam_local_cloud.moto_seam.backends import restore_account, snapshot_account
from sam_local_cloud.stepfunctions import HistoryStore

RESET_CAUSE = "the local cloud was reset"


class DeployedState:
    def __init__(self, account_id: str, data_plane: DataPlane | None) -> None:
        self._services = snapshot_account(account_id)
        self._data_plane = data_plane
        if data_plane is not None:
            data_plane.keep_deployed_state()

    def restore(
        self,
        *,
        stepfunctions: Any,
        lambda_service: LambdaService,
        account_concurrency: int,
        history_store: HistoryStore,
        in_process_writes: WriteCounter,
        drain_seconds: float,
    ) -> None:
        stop_running_executions(stepfunctions)
        deadline = time.monotonic() + drain_seconds
        while lambda_service.accounting.running() and time.monotonic() < deadline:
            time.sleep(0.01)
        restore_account(self._services)
        if self._data_plane is not None:
            self._data_plane.restore_deployed_state()
        else:
            in_process_writes.clear()
        history_store.clear()
        lambda_service.reset(account_concurrency)


def stop_running_executions(stepfunctions: Any) -> None:
    """StopExecution for every Standard execution still running (``stepfunctions``: a boto3 client)."""
    for page in stepfunctions.get_paginator("list_state_machines").paginate():
        for machine in page["stateMachines"]:
            if machine["type"] != "STANDARD":
                continue
            running = stepfunctions.get_paginator("list_executions").paginate(
                stateMachineArn=machine["stateMachineArn"], statusFilter="RUNNING"
            )
            for listed in running:
                for execution in listed["executions"]:
                    stepfunctions.stop_execution(executionArn=execution["executionArn"], cause=RESET_CAUSE)
