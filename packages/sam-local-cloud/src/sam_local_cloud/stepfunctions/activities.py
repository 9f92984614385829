"""Activities: a Task whose Resource is an activity ARN, run by workers that poll GetActivityTask.

moto's interpreter has LocalStack's activity Task state (ActivityScheduled, ActivityStarted,
ActivitySucceeded/ActivityFailed/ActivityTimedOut, TimeoutSeconds as States.Timeout, HeartbeatSeconds as
States.HeartbeatTimeout), but its backend hands every execution an empty activity store and answers
GetActivityTask with "not implemented": an activity Task failed at once with "The activity activity_arn
does not exist." and no worker could take its task. Here each backend keeps the activities CreateActivity
made, every execution schedules its activity tasks there, and GetActivityTask serves them as AWS does:
a long poll of up to 60 seconds answering ``taskToken`` and ``input``, an empty ``taskToken`` when
nothing was scheduled. The worker answers with SendTaskSuccess, SendTaskFailure or SendTaskHeartbeat,
which moto already routes to the waiting Task.

Two races in the interpreter are closed here. It queued the task for workers before it registered the
task's callback endpoint, so a worker that polled in between took a task whose ActivityStarted never
reached the execution; and its start endpoint had no outcome until a worker came, so a Task whose
TimeoutSeconds ended while it waited for one failed with States.Runtime ("no attribute '_outcome'")
instead of States.Timeout whenever that wait woke before the state's own timer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam.interpreter_objects import (
    ExecutionRecord,
    StepFunctionsRequest,
)
from sam_local_cloud.moto_seam.records import EngineRecords

if TYPE_CHECKING:
    from collections.abc import Callable

_CONCERN: Final = "activities"
# AWS's long poll: GetActivityTask waits up to 60 seconds for a task.
LONG_POLL_SECONDS: Final = 60.0
_POLL_INTERVAL_SECONDS: Final = 0.05

# Per backend: activity ARN -> the interpreter's activity (its queue of scheduled tasks).
_stores: EngineRecords[dict[str, Any]] = EngineRecords(dict)


def activity_store(backend: object) -> dict[str, Any]:
    return _stores.of(backend)


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        ActivityTaskStartEndpoint,
        CallbackPoolManager,
        Execution,
        StepFunctionResponse,
        StepFunctionsParserBackend,
        stepfunctions_parser_backends,
    )

    @hooks.around(StepFunctionsParserBackend, "create_activity", concern=_CONCERN)
    def create_activity(proceed: Callable[..., Any], self: object, *args: object, **kwargs: object) -> Any:
        from sam_local_cloud.moto_seam.stepfunctions import activity

        created = proceed(self, *args, **kwargs)
        store = activity_store(self)
        if created.arn not in store:
            store[created.arn] = activity.Activity(arn=created.arn, name=created.name)
        return created

    @hooks.around(StepFunctionsParserBackend, "delete_activity", concern=_CONCERN)
    def delete_activity(proceed: Callable[[object, str], object], self: object, activity_arn: str) -> object:
        result = proceed(self, activity_arn)
        activity_store(self).pop(activity_arn, None)
        return result

    @hooks.around(Execution, "__init__", concern=_CONCERN)
    def execution_init(proceed: Callable[..., None], self: object, *args: object, **kwargs: Any) -> None:
        account, region = kwargs.get("account_id"), kwargs.get("region_name")
        if account and region:
            kwargs["activity_store"] = activity_store(stepfunctions_parser_backends[account][region])
        proceed(self, *args, **kwargs)

    @hooks.around(ActivityTaskStartEndpoint, "__init__", concern=_CONCERN)
    def start_endpoint_init(proceed: Callable[[object], None], self: object) -> None:
        proceed(self)
        internals.answer_no_outcome(self)  # a wait that ends with no worker: the Task times out

    def add_activity_task(self: object, callback_id: str, activity_arn: str, activity_input: str) -> object:
        """moto's order swapped: a worker must find the endpoint as soon as it can take the task."""
        from sam_local_cloud.moto_seam.stepfunctions import (
            ActivityCallbackEndpoint,
            ActivityDoesNotExist,
            activity,
        )

        endpoints = internals.callback_endpoints(self)
        if callback_id in endpoints:
            raise ValueError("Duplicate callback token id value.")
        queue = internals.activity_store_of(self).get(activity_arn)
        if queue is None:
            raise ActivityDoesNotExist(f"Activity Does Not Exist: '{activity_arn}'")
        endpoint: Any = ActivityCallbackEndpoint(callback_id=callback_id, activity_input=activity_input)
        endpoint.activity_arn = activity_arn  # what IAM authorises the worker's SendTask* calls on
        endpoints[callback_id] = endpoint
        queue.add_task(activity.ActivityTask(task_token=callback_id, task_input=activity_input))
        return endpoint

    hooks.replace(CallbackPoolManager, "add_activity_task", add_activity_task, concern=_CONCERN)

    def get_activity_task(self: StepFunctionsRequest) -> object:
        from sam_local_cloud.moto_seam.stepfunctions import ActionResult

        activity_arn = internals.required_text(self, "activityArn")
        backend = self.stepfunction_backend
        backend.describe_activity(activity_arn)  # ActivityDoesNotExist / InvalidArn, as AWS answers
        activity = activity_store(backend).get(activity_arn)
        task = _next_task(activity) if activity is not None else None
        if task is None:
            return ActionResult({})
        _notify_started(backend, task.task_token, internals.request_text(self, "workerName"))
        return ActionResult({"taskToken": task.task_token, "input": task.task_input})

    hooks.add(StepFunctionResponse, "get_activity_task", get_activity_task, concern=_CONCERN)


def _next_task(activity: Any) -> Any:
    deadline = time.monotonic() + LONG_POLL_SECONDS
    while True:
        try:
            return activity.get_task()
        except IndexError:
            if time.monotonic() >= deadline:
                return None
            time.sleep(_POLL_INTERVAL_SECONDS)


def _notify_started(backend: object, task_token: str, worker_name: str | None) -> None:
    """ActivityStarted for the Task waiting on this token, in whichever execution it runs."""
    from sam_local_cloud.moto_seam.stepfunctions import ActivityCallbackEndpoint

    _, endpoint = _waiting_on(backend, task_token)
    if isinstance(endpoint, ActivityCallbackEndpoint):
        endpoint.notify_activity_task_start(worker_name=worker_name)


def task_token_resource(account_id: str, region: str, task_token: str) -> str | None:
    """The resource IAM authorises SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat on: the activity
    of an activity task, else the state machine whose execution waits on the token; None when no running
    execution waits on it (the call then answers TaskDoesNotExist)."""
    from sam_local_cloud.moto_seam.stepfunctions import stepfunctions_parser_backends

    execution, endpoint = _waiting_on(stepfunctions_parser_backends[account_id][region], task_token)
    if endpoint is None or execution is None:  # found together
        return None
    return getattr(endpoint, "activity_arn", None) or str(execution.state_machine_arn)


def _waiting_on(backend: object, task_token: str) -> tuple[ExecutionRecord | None, object]:
    """The running execution whose callback pool holds this token, and the token's endpoint there."""
    from sam_local_cloud.moto_seam.stepfunctions import ExecutionStatus

    for execution in internals.executions_with_status(backend, ExecutionStatus.RUNNING):
        env = execution.exec_worker.env if execution.exec_worker is not None else None
        endpoint = env.callback_pool_manager.get(callback_id=task_token) if env is not None else None
        if endpoint is not None:
            return execution, endpoint
    return None, None
