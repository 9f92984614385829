"""Lambda durable executions for the local cloud, on the testing SDK's executor and checkpoint processor.

The testing SDK (``aws_durable_execution_sdk_python_testing``) holds the whole execution model: the
checkpoint processor, the executions and their history, timers for waits and retries, callbacks and
chained-invoke children. What it leaves to its host is how a replay runs and how a chained target is
invoked; here both go through the Lambda service, so each replay is one invocation of the function in its
real runtime process, admitted under the account's concurrency quota (``ServiceInvoker``,
``ServiceChildDispatcher``). The durable API routes (``/2025-12-01/...``) are answered by the SDK's own
request handlers over this executor, not by its HTTP server.

Throttles: Lambda drives a durable execution itself (its replays and chained invokes are not a caller's
synchronous Invoke), and a 429 comes before anything runs, so a throttled replay or chained target is
retried with exponential backoff, full jitter and a cap for a bounded time (``ThrottleRetry``); every
throttle counts in the function's Throttles. A chained target still throttled when the budget runs out
fails its operation with ``TooManyRequestsException`` (docs/fidelity.md, "Durable executions").
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qs

from aws_durable_execution_sdk_python.execution import DurableExecutionInvocationInput, InvocationStatus
from aws_durable_execution_sdk_python.lambda_service import ErrorObject, OperationStatus
from aws_durable_execution_sdk_python_testing.checkpoint.processor import CheckpointProcessor
from aws_durable_execution_sdk_python_testing.child_dispatcher import (
    ChainedInvokeRequest,
    ChildOutcome,
    DispatchResult,
    FunctionTarget,
    RunInvocation,
    StartChild,
    failed_to_start,
    function_not_found,
    result_outcome,
)
from aws_durable_execution_sdk_python_testing.exceptions import (
    AwsApiException,
    DurableFunctionsTestError,
    InvalidParameterValueException,
    ResourceNotFoundException,
    UnknownRouteError,
)
from aws_durable_execution_sdk_python_testing.execution import Execution
from aws_durable_execution_sdk_python_testing.executor import Executor
from aws_durable_execution_sdk_python_testing.invoker import InvokeResponse, LambdaInvoker
from aws_durable_execution_sdk_python_testing.model import StartDurableExecutionInput
from aws_durable_execution_sdk_python_testing.scheduler import Scheduler
from aws_durable_execution_sdk_python_testing.stores.memory import InMemoryExecutionStore
from aws_durable_execution_sdk_python_testing.token import CallbackToken
from aws_durable_execution_sdk_python_testing.web import handlers
from aws_durable_execution_sdk_python_testing.web import routes as durable_routes
from aws_durable_execution_sdk_python_testing.web.models import HTTPRequest, HTTPResponse
from aws_durable_execution_sdk_python_testing.worker.registry import ExecutionRegistry

from sam_local_cloud.lambda_service.api import AnsweredInvoke
from sam_local_cloud.lambda_service.durable_executor import ExecutionView, LocalCloudExecutor
from sam_local_cloud.lambda_service.errors import LambdaApiError, ResourceNotFoundError, ServiceError
from sam_local_cloud.lambda_service.functions import (
    DEFAULT_EXECUTION_TIMEOUT_SECONDS,
    DEFAULT_RETENTION_PERIOD_DAYS,
    LATEST,
    FunctionSpec,
)

logger = logging.getLogger(__name__)

# A synchronous Invoke of a durable function waits for the execution at most as long as any Invoke may.
SYNC_INVOKE_MAX_SECONDS = 900

Response = tuple[int, dict[str, str], bytes]
_CALLBACK_ROUTES = (
    durable_routes.CallbackSuccessRoute,
    durable_routes.CallbackFailureRoute,
    durable_routes.CallbackHeartbeatRoute,
)


# (function name or name:qualifier, payload) -> the invocation's answer; throttles already retried.
RunInvocationFn = Callable[[str, bytes], AnsweredInvoke]
# name -> the function, or ResourceNotFoundError.
ResolveFn = Callable[[str], FunctionSpec]
# (calling function's name, target as the caller named it) -> why its role may not invoke it, or None.
ChainedInvokeAuthorizer = Callable[[str, str], str | None]


@dataclass(frozen=True)
class DurableStart:
    """An execution an Invoke started, or the one it found under the same name and payload."""

    arn: str
    started: bool


class ServiceInvoker(LambdaInvoker):
    """The executor's invoker: each replay is one invocation through the Lambda service.

    ``LambdaInvoker`` builds the invocation input (the execution's first page of operations and a fresh
    checkpoint token); only the call itself changes, from a boto3 client to the service in this process.
    """

    def __init__(self, run_invocation: RunInvocationFn) -> None:
        super().__init__(lambda_client=None)
        self._run_invocation = run_invocation

    def invoke(
        self,
        function_name: str,
        input: DurableExecutionInvocationInput,
        endpoint_url: str | None = None,
        tenant_id: str | None = None,
        account_id: str | None = None,
        region_name: str | None = None,
    ) -> InvokeResponse:
        payload = json.dumps(input.to_json_dict()).encode()
        try:
            answer = self._run_invocation(function_name, payload)
        except ResourceNotFoundError as error:
            raise ResourceNotFoundException(error.message) from error
        except LambdaApiError as error:
            raise DurableFunctionsTestError(
                f"Lambda invocation failed: {error.code}: {error.message}"
            ) from error
        if answer.function_error:
            # A crash, a timeout or an error outside the SDK's handler: the executor retries the replay.
            document = answer.payload.decode(errors="replace")
            raise DurableFunctionsTestError(f"Lambda invocation failed ({answer.function_error}): {document}")
        return InvokeResponse.from_payload(answer.payload, answer.request_id)


class ServiceChildDispatcher:
    """Chained ``context.invoke`` targets: a durable function starts a child execution, any other function
    runs once through the Lambda service (under the quota, throttles retried as for replays)."""

    def __init__(
        self,
        resolve: ResolveFn,
        run_invocation: RunInvocationFn,
        *,
        caller_of: Callable[[str], str] | None = None,
        authorizer: Callable[[], ChainedInvokeAuthorizer | None] = lambda: None,
    ) -> None:
        self._resolve = resolve
        self._run_invocation = run_invocation
        self._caller_of = caller_of
        self._authorizer = authorizer
        # (parent execution ARN, operation ID) -> time.monotonic() when its target invocation began.
        self._in_flight: dict[tuple[str, str], float] = {}
        self._in_flight_lock = threading.Lock()

    def targets_in_flight(self, parent_execution_arn: str) -> dict[str, float]:
        """The execution's chained invokes whose plain target is being invoked now: operation ID -> for how
        many seconds (a throttled target's wait for a slot included)."""
        now = time.monotonic()
        with self._in_flight_lock:
            return {
                operation_id: now - began
                for (parent, operation_id), began in self._in_flight.items()
                if parent == parent_execution_arn
            }

    def _target(self, name: str, qualifier: str | None) -> FunctionSpec | None:
        try:
            return self._resolve(f"{name}:{qualifier}" if qualifier else name)
        except ResourceNotFoundError:
            return None

    def preflight(self, target: FunctionTarget) -> ChildOutcome | None:
        if self._target(target.name, target.qualifier) is None:
            return function_not_found(target.name).outcome
        return None

    def dispatch(self, request: ChainedInvokeRequest) -> DispatchResult:
        spec = self._target(request.function_name, request.qualifier)
        if spec is None:
            return function_not_found(request.function_name)
        denial = self._denial(request)
        if denial is not None:
            return failed_to_start(denial, error_type="AccessDeniedException")
        if spec.durable_config is not None:
            return StartChild(
                child_start=_start_input(
                    spec,
                    account_id=request.account_id,
                    execution_name=str(uuid.uuid4()),
                    payload=request.payload,
                    qualifier=request.child_qualifier(),
                )
            )
        identifier = request.invoke_identifier()
        payload = (request.payload or "{}").encode()
        key = (request.parent_execution_arn, request.operation_id)
        return RunInvocation(invocation=lambda: self._invoke_tracked(key, identifier, payload))

    def _denial(self, request: ChainedInvokeRequest) -> str | None:
        """Lambda invokes the target as the calling function's role: it needs lambda:InvokeFunction."""
        authorizer = self._authorizer()
        if authorizer is None or self._caller_of is None:
            return None
        return authorizer(self._caller_of(request.parent_execution_arn), request.invoke_identifier())

    def _invoke_tracked(self, key: tuple[str, str], identifier: str, payload: bytes) -> ChildOutcome:
        with self._in_flight_lock:
            self._in_flight[key] = time.monotonic()
        try:
            return self._invoke_plain(identifier, payload)
        finally:
            with self._in_flight_lock:
                self._in_flight.pop(key, None)

    def _invoke_plain(self, identifier: str, payload: bytes) -> ChildOutcome:
        try:
            answer = self._run_invocation(identifier, payload)
        except LambdaApiError as error:
            # The operation fails with the Invoke's own error code, as the service reports it.
            return ChildOutcome(
                error=ErrorObject(message=error.message, type=error.code, data=None, stack_trace=None)
            )
        body = answer.payload.decode("utf-8", errors="replace")
        if answer.function_error:
            return ChildOutcome(error=_function_error(body))
        return result_outcome(body or None)


def _nested_too_deep(body: bytes) -> bool:
    """Whether the body is JSON nested past what a parser's stack takes (Lambda cannot parse it either)."""
    try:
        json.loads(body)
    except RecursionError:
        return True
    except ValueError:
        return False
    return False


def _function_error(body: str) -> ErrorObject:
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        return ErrorObject.from_message(body or "Chained invoke failed.")
    return ErrorObject(
        message=document.get("errorMessage"),
        type=document.get("errorType"),
        data=document.get("errorData"),
        stack_trace=document.get("stackTrace"),
    )


def _start_input(
    spec: FunctionSpec, *, account_id: str, execution_name: str, payload: str | None, qualifier: str = LATEST
) -> StartDurableExecutionInput:
    config = spec.durable_config or {}
    return StartDurableExecutionInput(
        account_id=account_id,
        function_name=spec.name,
        function_qualifier=qualifier,
        execution_name=execution_name,
        execution_timeout_seconds=int(config.get("ExecutionTimeout", DEFAULT_EXECUTION_TIMEOUT_SECONDS)),
        execution_retention_period_days=int(
            config.get("RetentionPeriodInDays", DEFAULT_RETENTION_PERIOD_DAYS)
        ),
        input=payload,
    )


class AwsArnExecutionStore(InMemoryExecutionStore):
    """The executor's store, which gives each new execution the ARN Lambda gives it.

    The testing SDK names an execution ``<uuid>/<uuid>`` (an opaque local key it never parses); Lambda's
    is ``arn:aws:lambda:<region>:<account>:function:<name>:<version>/durable-execution/<execution name>/<id>``
    (botocore's ``DurableExecutionArn`` pattern), which callers read the function and the name from. The
    executor stores an execution before anything else sees its ARN, so the first save is where it is set.
    """

    def __init__(self, region: str) -> None:
        super().__init__()
        self._region = region

    def save(self, execution: Execution) -> None:
        if not execution.durable_execution_arn.startswith("arn:"):
            execution.durable_execution_arn = self._aws_arn(execution)
        super().save(execution)

    def query(
        self,
        function_name: str | None = None,
        execution_name: str | None = None,
        status_filter: str | None = None,
        started_after: str | None = None,
        started_before: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        reverse_order: bool = False,
    ) -> tuple[list[Execution], str | None]:
        """The SDK's listing, filtered as Lambda filters ``ListDurableExecutionsByFunction``.

        The SDK matches one status and reads ``StartedAfter``/``StartedBefore`` as epoch seconds; Lambda
        takes a list of ``Statuses`` (``answer`` passes them comma-joined) and botocore sends the times as
        ISO 8601, which the SDK's ``float()`` refuses and so drops every execution.
        """
        statuses = set(status_filter.split(",")) if status_filter else None
        after, before = _instant(started_after), _instant(started_before)
        chosen = [
            execution
            for execution in self.list_all()
            if (statuses is None or execution.current_status().value in statuses)
            and _started_within(execution, after, before)
        ]
        return self.process_query(
            chosen,
            function_name=function_name,
            execution_name=execution_name,
            limit=limit,
            offset=offset,
            reverse_order=reverse_order,
        )

    def _aws_arn(self, execution: Execution) -> str:
        start = execution.start_input
        # The ARN names a version, never an alias: every local alias stands for $LATEST.
        version = start.function_qualifier if (start.function_qualifier or "").isdigit() else LATEST
        execution_id = start.invocation_id or str(uuid.uuid4())
        return (
            f"arn:aws:lambda:{self._region}:{start.account_id}:function:{start.function_name}:{version}"
            f"/durable-execution/{start.execution_name}/{execution_id}"
        )


def _instant(value: str | None) -> datetime | None:
    """A ``StartedAfter``/``StartedBefore`` query value: ISO 8601 as botocore sends it, or epoch seconds."""
    if not value:
        return None
    try:
        moment = datetime.fromtimestamp(float(value), tz=UTC)
    except ValueError:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _started_within(execution: Execution, after: datetime | None, before: datetime | None) -> bool:
    if after is None and before is None:
        return True
    started = execution.get_operation_execution_started().start_timestamp
    if started is None:
        return False
    started = started if started.tzinfo else started.replace(tzinfo=UTC)
    return (after is None or started >= after) and (before is None or started <= before)


class DurableExecutionAlreadyStartedError(LambdaApiError):
    code = "DurableExecutionAlreadyStartedException"
    status = 409
    message_field = "Message"


class CallbackTimeoutError(LambdaApiError):
    """An answer to a callback that is closed (answered, timed out, or its execution ended); botocore's
    model gives it HTTP 400."""

    code = "CallbackTimeoutException"
    status = 400
    message_field = "Message"


def _handler_table(executor: Executor) -> dict[type[durable_routes.Route], handlers.EndpointHandler]:
    """The SDK's request handlers for the operations botocore's ``lambda`` model defines."""
    return {
        durable_routes.GetDurableExecutionRoute: handlers.GetDurableExecutionHandler(executor),
        durable_routes.CheckpointDurableExecutionRoute: handlers.CheckpointDurableExecutionHandler(executor),
        durable_routes.StopDurableExecutionRoute: handlers.StopDurableExecutionHandler(executor),
        durable_routes.GetDurableExecutionStateRoute: handlers.GetDurableExecutionStateHandler(executor),
        durable_routes.GetDurableExecutionHistoryRoute: handlers.GetDurableExecutionHistoryHandler(executor),
        durable_routes.ListDurableExecutionsByFunctionRoute: handlers.ListDurableExecutionsByFunctionHandler(
            executor
        ),
        durable_routes.CallbackSuccessRoute: handlers.SendDurableExecutionCallbackSuccessHandler(executor),
        durable_routes.CallbackFailureRoute: handlers.SendDurableExecutionCallbackFailureHandler(executor),
        durable_routes.CallbackHeartbeatRoute: handlers.SendDurableExecutionCallbackHeartbeatHandler(
            executor
        ),
    }


class DurableExecutions:
    """The executions of the account's durable functions, their API and their replays."""

    def __init__(
        self,
        *,
        resolve: ResolveFn,
        run_invocation: RunInvocationFn,
        region: str,
        account_id: str,
        authorizer: Callable[[], ChainedInvokeAuthorizer | None] = lambda: None,
    ) -> None:
        self.account_id = account_id
        self._resolve = resolve
        store = AwsArnExecutionStore(region)
        self._scheduler = Scheduler()
        processor = CheckpointProcessor(store, self._scheduler)
        self._dispatcher = ServiceChildDispatcher(
            resolve,
            run_invocation,
            caller_of=lambda arn: self.executor.get_execution(arn).start_input.function_name,
            authorizer=authorizer,
        )
        self.executor = LocalCloudExecutor(
            store=store,
            scheduler=self._scheduler,
            invoker=ServiceInvoker(run_invocation),
            checkpoint_processor=processor,
            registry=ExecutionRegistry(store, self._scheduler),
            child_dispatcher=self._dispatcher,
            region=region,
        )
        processor.add_execution_observer(self.executor)
        processor.set_chained_invoke_preflight(self.executor.preflight_chained_invoke)
        self._router = durable_routes.Router(list(_handler_table(self.executor)))
        self._handlers = _handler_table(self.executor)
        # (function name, execution name) -> (ARN, payload): the execution name is the idempotency key.
        self._by_name: dict[tuple[str, str], tuple[str, bytes]] = {}
        # Two Invokes with one new name at once start one execution.
        self._start_lock = threading.Lock()
        self._scheduler.start()

    def start(self, spec: FunctionSpec, payload: bytes, execution_name: str | None) -> DurableStart:
        """Start an execution, or return the one already started under this name with this payload."""
        name = execution_name or str(uuid.uuid4())
        with self._start_lock:
            return self._start_once(spec, payload, name)

    def _start_once(self, spec: FunctionSpec, payload: bytes, name: str) -> DurableStart:
        key = (spec.name, name)
        existing = self._by_name.get(key)
        if existing is not None:
            arn, first_payload = existing
            if _same_json(first_payload, payload):
                return DurableStart(arn, started=False)
            raise DurableExecutionAlreadyStartedError(
                f"Durable execution with name {name} already exists for function {spec.name} with a "
                "different payload."
            )
        output = self.executor.start_execution(
            _start_input(spec, account_id=self.account_id, execution_name=name, payload=payload.decode())
        )
        started_arn = output.execution_arn
        if started_arn is None:
            raise ServiceError(f"The executor started no execution for {spec.name}.")
        self._by_name[key] = (started_arn, payload)
        return DurableStart(started_arn, started=True)

    def wait(self, arn: str, timeout_seconds: float) -> bool:
        """Whether the execution ended within ``timeout_seconds``."""
        if self.executor.get_execution(arn).is_complete:
            return True
        return self.executor.wait_until_complete(arn, timeout_seconds)

    def execution_view(self, arn: str) -> ExecutionView:
        """What the executor holds of the execution, its chained invokes' targets in flight included."""
        return self.executor.execution_view(arn, self._dispatcher.targets_in_flight(arn))

    def outcome(self, arn: str) -> tuple[bytes, str | None]:
        """A finished execution as a synchronous Invoke answers it: its result, or its error document."""
        execution = self.executor.get_execution(arn)
        result = execution.result
        if result is not None and result.status == InvocationStatus.SUCCEEDED:
            return (result.result or "null").encode(), None
        error = result.error if result is not None else None
        document = {
            "errorType": (error.type if error else None) or "DurableExecutionFailed",
            "errorMessage": (error.message if error else None)
            or f"Execution {execution.current_status().value}",
        }
        return json.dumps(document).encode(), "Unhandled"

    def answer(self, method: str, raw_path: str, query_string: str, body: bytes) -> Response:
        """One request to the durable API, answered by the SDK's handler for its route."""
        try:
            route = self._router.find_route(raw_path, method)
        except UnknownRouteError:
            return _error_response(
                ResourceNotFoundException(f"No durable execution operation {method} {raw_path}")
            )
        if isinstance(route, _CALLBACK_ROUTES):
            self._refuse_closed_callback(route.callback_id)
        query = parse_qs(query_string)
        if isinstance(route, durable_routes.ListDurableExecutionsByFunctionRoute):
            # The executor matches the bare name; Lambda takes any name form, an alias ARN included.
            qualifier = query["Qualifier"][0] if query.get("Qualifier") else None
            named = self._resolve_named(route.function_name, qualifier)
            route = dataclasses.replace(route, function_name=named)
            # botocore repeats ``Statuses`` once per status; the SDK's handler reads one ``StatusFilter``.
            if query.get("Statuses"):
                query["StatusFilter"] = [",".join(query.pop("Statuses"))]
        handler = self._handlers[type(route)]
        if body and not isinstance(route, durable_routes.CallbackSuccessRoute) and _nested_too_deep(body):
            # The SDK's handlers parse the body (all but a callback's raw result) and answer a RecursionError
            # with a 500.
            return _error_response(InvalidParameterValueException("Could not parse request body into json"))
        try:
            if isinstance(route, durable_routes.BytesPayloadRoute):
                request = HTTPRequest.from_raw_bytes(body, method=method, path=route, query_params=query)
            else:
                request = HTTPRequest.from_bytes(body, method=method, path=route, query_params=query)
        except AwsApiException as error:
            return _error_response(error)
        except RecursionError:  # nested past what a JSON parser takes: not JSON, as Lambda says
            return _error_response(InvalidParameterValueException("Could not parse request body into json"))
        return _as_response(handler.handle(route, request))

    def _resolve_named(self, function_name: str, qualifier: str | None) -> str:
        return self._resolve(f"{function_name}:{qualifier}" if qualifier else function_name).name

    def _refuse_closed_callback(self, callback_id: str) -> None:
        """The SDK's executor leaves a callback STARTED when its execution stops or ends, and would accept
        an answer to it; Lambda refuses any answer to a closed callback with CallbackTimeoutException."""
        try:
            token = CallbackToken.from_str(callback_id)
            execution = self.executor.get_execution(token.execution_arn)
            _, operation = execution.find_callback_operation(callback_id)
        except Exception:
            return
        if execution.is_complete or operation.status != OperationStatus.STARTED:
            raise CallbackTimeoutError(
                f"Callback {callback_id} is closed: its operation is {operation.status.value} and its "
                f"execution is {execution.current_status().value}."
            )

    def close(self) -> None:
        self.executor.shutdown()
        self._scheduler.stop()


def _same_json(first: bytes, second: bytes) -> bool:
    try:
        return bool(json.loads(first or b"{}") == json.loads(second or b"{}"))
    except ValueError:
        return first == second


def _error_response(error: AwsApiException) -> Response:
    return _as_response(HTTPResponse.create_error_from_exception(error))


def _as_response(response: HTTPResponse) -> Response:
    headers = {"Content-Type": "application/json", **response.headers}
    if response.status_code >= 400:
        # botocore's rest-json parser reads the error code from this header, as AWS sends it.
        code = response.body.get("Type") or response.body.get("__type") or "ServiceException"
        headers["x-amzn-ErrorType"] = str(code)
    return response.status_code, headers, response.body_to_bytes()
