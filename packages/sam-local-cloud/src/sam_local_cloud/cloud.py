"""The local cloud: one loopback endpoint serving the template's AWS services and its HTTP API.

Requests are dispatched by path: Lambda API calls go to our Lambda service (real processes with
Lambda's concurrency quota), `/execute-api/...` to the template's HTTP API, everything else to moto.
moto's Step Functions interpreter invokes this cloud's Lambda service in-process, so a state machine's
Tasks meet the quota, the 429s and the real handler code. Each cloud owns an account ID (accounts.py), so
several clouds can run side by side in one process without sharing any state.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import logging
import shutil
import signal
import tempfile
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.test import Client as WerkzeugClient

from sam_local_cloud import data_plane, sdk_models
from sam_local_cloud.accounts import (
    MOTO_ACCOUNT_ENVIRON_KEY,
    CloudParts,
    bind_cloud,
    claim_account,
    free_account,
    release_account,
    unbind_cloud,
)
from sam_local_cloud.api_integrations import ActionOutcome
from sam_local_cloud.cloud_config import LocalCloudConfig
from sam_local_cloud.credentials import DUMMY_CREDENTIALS
from sam_local_cloud.data_plane import DataPlane
from sam_local_cloud.deployed_stack import DeployedStack
from sam_local_cloud.deployed_state import DeployedState
from sam_local_cloud.deployment import StackDeployer, parse_ahead
from sam_local_cloud.dynamodb import TableLocks, WriteCounter
from sam_local_cloud.dynamodb_service import DynamoDBApp
from sam_local_cloud.event_sources import QueuePollers
from sam_local_cloud.executions import ExecutionResult, finished_execution
from sam_local_cloud.http_api import HttpApiGateway, InvokeOutcome
from sam_local_cloud.iam import IamEnforcer, StackRoles, build_roles
from sam_local_cloud.iam.signatures import SignatureVerifier, secrets_of
from sam_local_cloud.lambda_service import (
    FaultPlan,
    LambdaService,
    MetricsPublisher,
    TooManyRequestsError,
)
from sam_local_cloud.process_groups import SignalHandler, exit_on_sigterm
from sam_local_cloud.protocol_guard import ProtocolGuard
from sam_local_cloud.readiness import (
    DEPLOYER_CREDENTIALS,
    from_deployer,
    health_answer,
    known_credentials,
    still_deploying_answer,
)
from sam_local_cloud.runtime_shim import HANDLER_CPU_VARIABLE
from sam_local_cloud.served_paths import HEALTH_PATH
from sam_local_cloud.stack import LocalStack, load_stack
from sam_local_cloud.stepfunctions import HistoryStore, create_moto_app, leave_interpreter_as_released
from sam_local_cloud.stepfunctions.activities import task_token_resource
from sam_local_cloud.stepfunctions.mock_config import MockConfig, MockConfigSource, mock_config_path

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from sam_local_cloud.json_types import JsonObject

# Added to AWS's answer to a key the local cloud did not issue: the keys LocalCloud.environment() exports.
UNKNOWN_KEY_HINT = (
    f"local cloud: sign with AWS_ACCESS_KEY_ID={DUMMY_CREDENTIALS['aws_access_key_id']} and "
    f"AWS_SECRET_ACCESS_KEY={DUMMY_CREDENTIALS['aws_secret_access_key']}, as `sam-local-cloud env` exports, "
    "or with the keys it gives a function"
)
# Lambda sends its CloudWatch metrics at one-minute resolution; publishing every second made moto's metric
# store grow by some 30 datums a second for as long as functions ran.
METRICS_INTERVAL_SECONDS = 60.0
# No X-Ray daemon runs locally; Powertools' Tracer would otherwise try to reach one.
LOCAL_FUNCTION_ENVIRONMENT = {"POWERTOOLS_TRACE_DISABLED": "true"}


__all__ = ["LocalCloud", "LocalCloudConfig"]


class LocalCloud:
    """``LocalCloud(LocalCloudConfig(...))`` or ``LocalCloud(port=0, account_concurrency=10)``, the
    config's fields as keywords. With a template in the config, ``start()`` (or ``with``) deploys it;
    without, the cloud starts with ``deploy(template)``. One stack per cloud: several clouds run side by
    side in one process, each in its own account."""

    def __init__(self, config: LocalCloudConfig | None = None, **settings: Any) -> None:
        if config is not None and settings:
            raise TypeError("LocalCloud takes a LocalCloudConfig or its fields as keywords, not both")
        if "lambda_concurrency" in settings:  # the name set_quota and the pytest plugin use
            if "account_concurrency" in settings:
                raise TypeError("lambda_concurrency and account_concurrency name one quota: give one")
            settings["account_concurrency"] = settings.pop("lambda_concurrency")
        self.config = config if config is not None else LocalCloudConfig(**settings)
        config = self.config
        # The account is the cloud's from its start to its stop; until then this is the one it expects.
        self.account_id = config.account_id or free_account()
        self._account_claimed = False
        self._stopped = False
        self.state_dir = config.state_dir or Path(tempfile.mkdtemp(prefix="sam-local-cloud-"))
        if config.state_dir is None:
            # Not at stop(): what a run logged is read after it (the audit reads the functions' logs).
            weakref.finalize(self, shutil.rmtree, str(self.state_dir), True)
        self.iam_mode = config.iam_mode or ("enforce" if config.enforce_iam else "off")
        if self.iam_mode not in ("enforce", "report", "off"):
            raise ValueError(f"iam_mode {self.iam_mode!r}: enforce, report or off")
        self.iam_report = self.state_dir / "logs" / "iam-report.jsonl" if self.iam_mode == "report" else None
        if self.iam_report is not None:
            self.iam_report.unlink(missing_ok=True)  # a state dir used again lists this run's calls only
        self._load_stack()
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self.lambda_service: LambdaService | None = None
        self.http_api: HttpApiGateway | None = None
        self._metrics: MetricsPublisher | None = None
        self._table_locks = TableLocks()
        self._writes = WriteCounter()
        self._dynamodb_app: DynamoDBApp | None = None
        self._apps_by_target: dict[str, WSGIApplication] = {}
        self.mock_config: MockConfig | None = None
        # Until the template is deployed every caller but the deployer gets a 503: a script that waits for
        # the port must not see a half-deployed stack (no functions or state machines yet).
        self._deployed = threading.Event()
        self._sigterm_before: SignalHandler = None
        self._event_clients: dict[str, Any] = {}
        self._queue_pollers: QueuePollers | None = None
        self._mock_configs = MockConfigSource()
        self._deployed_state: DeployedState | None = None
        self._event_client_lock = threading.Lock()
        self.data_plane: DataPlane | None = None
        # AWS's front-end checks before moto sees a request, and moto's crashes answered in AWS's shape.
        self._guarded_services = ProtocolGuard(self._aws_services)

    def _load_stack(self) -> None:
        """The template read for this cloud's account, and the roles and checks made of it."""
        self.iam: IamEnforcer | None = None
        self._roles: StackRoles | None = None
        self.signatures: SignatureVerifier | None = None
        self._stack: LocalStack | None = None
        if self.config.template is None:
            return
        self._stack = load_stack(
            self.config.template,
            parameter_overrides=self.config.parameter_overrides,
            account_id=self.account_id,
        )
        if self.iam_mode != "off":
            roles = self._roles = build_roles(self.stack)
            region, account_id = self.stack.region, self.stack.account_id
            self.iam = IamEnforcer(
                roles,
                region=region,
                account_id=account_id,
                report_to=self.iam_report,
                task_token_resource=task_token_resource,
            )
            self.stack.not_honoured.extend(roles.notes)
        else:
            self.stack.not_honoured.append("IAM: policies are not enforced (every call is allowed)")
        if self.iam is not None and self.config.verify_signatures:
            self.signatures = SignatureVerifier(
                secrets_of(known_credentials(), self.iam.identity), unknown_key_hint=UNKNOWN_KEY_HINT
            )

    @property
    def stack(self) -> LocalStack:
        """The template as this cloud deploys it (functions, tables, state machines, outputs)."""
        if self._stack is None:
            raise RuntimeError("no stack on this local cloud yet: call cloud.deploy(template) first")
        return self._stack

    def deployed_stack(self) -> DeployedStack:
        """The stack's name, outputs and physical IDs, as the pytest plugin's ``sam_stack`` gives them."""
        return DeployedStack.of(self.stack)

    # ------------------------------------------------------------------ lifecycle
    def deploy(self, template: Path | str, *, parameters: Mapping[str, str] | None = None) -> DeployedStack:
        """Deploys a SAM template on this cloud, started without one, as ``sam deploy`` would: the stack
        named by the template's samconfig.toml (else sam-app), ``parameters`` as its overrides.

        One stack per cloud: a second template, or a cloud whose config named one, is refused (another
        ``LocalCloud`` runs beside this one in the same process, in an account of its own).
        """
        if self._stack is not None or self.config.template is not None:
            raise RuntimeError(
                f"this local cloud holds the stack {self.stack.stack_name} already; one stack per cloud: "
                "start another LocalCloud for another template"
            )
        if self._stopped:
            raise RuntimeError("the local cloud is stopped")
        self.config = replace(
            self.config, template=Path(template), parameter_overrides=dict(parameters or {})
        )
        self._load_stack()
        self.start()
        return self.deployed_stack()

    def start(self) -> LocalCloud:
        if self.config.template is None:
            return self  # nothing to run yet: deploy(template) starts the cloud with its stack
        # Start-up allocates millions of objects that all live as long as the cloud: a collection in the
        # middle of it walks them for nothing (a tenth of the start's CPU). They are frozen at its end.
        with _collector_paused():
            try:
                return self._start()
            except BaseException:
                # What the start had taken (the account, ports, processes) is given back with the error.
                self.stop()
                raise

    def _start(self) -> LocalCloud:
        from sam_local_cloud.moto_seam.backends import forget_account
        from sam_local_cloud.moto_seam.installers import install_everything
        from sam_local_cloud.moto_seam.services import MotoRequestHandler

        class QuietRequestHandler(MotoRequestHandler):
            def log_request(self, *args: object, **kwargs: object) -> None:
                """Thousands of calls per batch; the access log would drown what the commands print."""

        claimed = claim_account(self.config.account_id, preferred=self.account_id)
        self._account_claimed = True
        if claimed != self.account_id:
            # Another cloud started with that account since this one was made: read for the next free one.
            self.account_id = claimed
            self._load_stack()
        # Before anything runs: an unusable mock configuration stops the start with its problems listed.
        self.mock_config = self._mock_configs.use(mock_config_path(self.config.mock_config))
        if self.config.dynamodb_process:
            # Started first: it loads moto and the template on the other core while this one loads its own.
            self.data_plane = DataPlane(
                roles=self._roles,
                region=self.stack.region,
                account_id=self.stack.account_id,
                work_dir=self.state_dir,
                iam_report=self.iam_report,
                host=self.config.host,
                known_credentials=known_credentials() if self.signatures is not None else None,
                unknown_key_hint=UNKNOWN_KEY_HINT,
            )
        # moto logs every unsupported field and every missing JSONPath it tries (IsPresent included).
        logging.getLogger("moto").setLevel(logging.CRITICAL)
        if self.config.moto_interpreter_as_released:
            leave_interpreter_as_released()
        moto_app = create_moto_app()
        # Step Functions' concerns, DynamoDB's transactions and request caches (moto lists a response
        # class's methods with inspect on every request of every service), untracked models, rule targets.
        install_everything()
        # moto keeps its state in the process, by account: cleared, the cloud's account starts empty (a
        # test's own mock_aws may have left state there).
        forget_account(self.account_id)
        self._server = make_server(
            self.config.host,
            self.config.port,
            self._dispatch,
            threaded=True,
            request_handler=QuietRequestHandler,
        )
        self._moto_app = moto_app
        dynamodb_endpoint: dict[str, str] = {}
        if self.data_plane is not None:
            # The SDKs' service-specific endpoint variable: functions reach DynamoDB without this process.
            dynamodb_endpoint = {"AWS_ENDPOINT_URL_DYNAMODB": self.data_plane.endpoint}
        functions = [
            spec.with_environment(
                {
                    **LOCAL_FUNCTION_ENVIRONMENT,
                    **dynamodb_endpoint,
                    **spec.environment,
                    **(self.iam.function_environment(spec.name) if self.iam else {}),
                    **self.config.function_environment,
                    **self._handler_cpu_environment(),
                }
            )
            for spec in self.stack.functions
        ]
        self.lambda_service = LambdaService(
            functions,
            account_concurrency=self.config.account_concurrency,
            endpoint_url=self.endpoint,
            region=self.stack.region,
            account_id=self.stack.account_id,
            log_dir=self.log_dir,
            idle_timeout_seconds=self.config.idle_timeout_seconds,
            lambda_endpoint=self.config.lambda_endpoint,
            fault_plan=self.config.fault_plan,
            latency=dict(self.config.latency),
            fork_runtimes=self.config.fork_runtimes,
            max_environments=self.max_environments(),
            runtime_fallback=self.config.runtime_fallback,
            event_keys=self.config.event_keys,
        )
        self.lambda_service.launch_runtime_servers()
        if self.iam is not None:
            self.lambda_service.chained_invoke_authorizer = self.iam.function_invoke_denial
        in_process = self.lambda_service.in_process_client()
        self.history_store = HistoryStore(self.state_dir / "histories", self.config.history_events_in_memory)
        # What moto's interpreter reaches, through its process-wide hooks, for this account's executions.
        bind_cloud(
            CloudParts(
                account_id=self.account_id,
                port=self.port,
                lambda_client=self.iam.lambda_tasks_client(in_process) if self.iam else in_process,
                role_credentials=self.iam.task_credentials if self.iam else None,
                tracked_by_events=self.iam.may_track_executions_by_events if self.iam else None,
                history_store=self.history_store,
                express_max_duration_seconds=self.config.express_max_duration_seconds,
                duplicate_decider=self._duplicate_child,
                event_target_clients=self._event_target_client,
                mock_config=self._mock_configs,
            )
        )
        self.http_api = HttpApiGateway(
            self.stack.routes,
            self._invoke_for_api,
            region=self.stack.region,
            account_id=self.stack.account_id,
            service_routes=self.stack.service_routes,
            call_states=self._call_states_for_api,
        )
        # shutdown() waits for the loop to see its flag: every 50 ms, not socketserver's 0.5 s.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="local-cloud", daemon=True
        )
        self._thread.start()
        # While the data plane still loads on the other core: the parse CreateStateMachine will need.
        parse_ahead(self.stack, self.config.definition_transform)
        if self.data_plane is not None:
            self.data_plane.wait_started()
        self._deploy()
        self._deployed_state = DeployedState(self.account_id, self.data_plane)
        # Lambda publishes its metrics per minute; flush_metrics() publishes at once for a reader in a hurry.
        cloudwatch = self._deployer_client("cloudwatch")
        self._metrics = MetricsPublisher(
            self.lambda_service, cloudwatch, interval_seconds=METRICS_INTERVAL_SECONDS
        )
        self._metrics.start()
        self._queue_pollers = QueuePollers(
            self.stack.queue_mappings,
            self._deployer_client("sqs") if self.stack.queue_mappings else None,
            in_process.invoke,
            self.stack.region,
        )
        self._queue_pollers.start()
        # What start-up built (moto's models, botocore's, the stack) lives as long as the cloud: out of the
        # collector's generations, a full collection no longer walks it on every batch's garbage. Frozen
        # without a collection first: start-up leaves 10,000-20,000 unreachable objects among 365,000, and
        # finding them took 0.26 s of CPU, a tenth of a start; they are freed at stop (gc.unfreeze).
        gc.freeze()
        self._deployed.set()
        return self

    @property
    def deployed(self) -> bool:
        return self._deployed.is_set()

    def max_environments(self) -> int | None:
        factor = self.config.environments_per_quota_slot
        if factor <= 0:
            return None
        return max(len(self.stack.functions), round(factor * self.config.account_concurrency))

    def _duplicate_child(self, state_machine_name: str, child_input: Callable[[], object]) -> bool | None:
        """A ``duplicate_execution`` rule of the state machine (by logical ID) decides whether an EXPRESS
        child runs twice: None for once, else whether the runs overlap."""
        machine = next((m for m in self.stack.state_machines if m.name == state_machine_name), None)
        faults = self.lambda_service.faults if self.lambda_service is not None else None
        if machine is None or faults is None or not faults.has_rules(machine.logical_id):
            return None
        decision = faults.decide(machine.logical_id, json.dumps(child_input(), sort_keys=True).encode())
        if decision is None or decision.duplicate is None:
            return None
        return decision.duplicate.runs_concurrently(decision.item_key)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._account_claimed:
            unbind_cloud(self.account_id)
        if self._queue_pollers is not None:
            self._queue_pollers.stop()
        if self._metrics is not None:
            self._metrics.close()
        if self.lambda_service is not None:
            self.lambda_service.close()
        if self._server is not None:
            if self._thread is not None:
                self._server.shutdown()  # waits for serve_forever to return: only once it has run
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self.data_plane is not None:
            self.data_plane.stop()
        if self._account_claimed:
            from sam_local_cloud.moto_seam.backends import forget_account

            # moto's state of the account goes with the cloud, not with the next cloud to take the account.
            forget_account(self.account_id)
            release_account(self.account_id)
            self._account_claimed = False
        # Back into the collector's reach, so a process that starts another cloud does not keep this one's.
        # Another cloud still running has its objects unfrozen too: its full collections walk them again.
        gc.unfreeze()

    def __enter__(self) -> LocalCloud:
        self._sigterm_before = exit_on_sigterm()
        try:
            return self.start()
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            if self._sigterm_before is not None:
                signal.signal(signal.SIGTERM, self._sigterm_before)
                self._sigterm_before = None

    # ------------------------------------------------------------------ addresses and clients
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the local cloud is not started")
        return int(self._server.server_port)

    @property
    def endpoint(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    @property
    def api_url(self) -> str:
        assert self.http_api is not None
        return self.http_api.url(self.endpoint)

    def client(self, service: str, **config: Any) -> Any:
        """A boto3 client of this cloud; ``config`` is botocore's ``Config``, where ``retries=False`` makes
        one attempt per call (a test sees each 429) and ``retries=True`` is the SDK's standard mode."""
        if isinstance(config.get("retries"), bool):
            config["retries"] = {"mode": "standard"} if config["retries"] else {"total_max_attempts": 1}
        return sdk_models.client(
            service,
            endpoint_url=self.endpoint,
            region_name=self.stack.region,
            config=Config(**config) if config else None,
            **DUMMY_CREDENTIALS,
        )

    def wait_for_execution(self, execution_arn: str, *, timeout: float = 60.0) -> ExecutionResult:
        """The execution once finished: status, parsed output, error and cause, its whole history."""
        return finished_execution(
            self.client("stepfunctions"), execution_arn, timeout=timeout, poll_seconds=0.2
        )

    def set_quota(self, *, lambda_concurrency: int) -> None:
        """The account's Lambda concurrency quota from now on (running invocations keep their slots)."""
        self._lambda().accounting.set_account_limit(lambda_concurrency)

    @contextlib.contextmanager
    def inject(self, faults: FaultPlan | Mapping[str, Any] | Path) -> Iterator[FaultPlan]:
        """A fault plan (docs/faults.md) for the ``with`` block; the plan before it comes back after."""
        service = self._lambda()
        before = service.fault_plan
        try:
            yield service.set_fault_plan(faults)
        finally:
            service.set_fault_plan(before)

    def reset(self, *, drain_seconds: float = 10.0) -> None:
        """Back to the state just after the deploy, without deploying again (milliseconds, not a start).

        Standard executions still running are stopped, and invocations in flight get ``drain_seconds`` to
        end. Then every service of the account is as deployed: resources made since are gone, tables hold
        their seeded items only, executions, histories, queues' messages, objects and metrics are gone.
        Lambda's quota, reserved concurrency and fault plan are the configured ones, and its counters and
        the DynamoDB write counts start from zero. Warm execution environments stay warm, with what their
        handlers keep in memory, as a function's do on AWS between two tests. Express executions, which no
        API lists, run to their end.
        """
        if self._deployed_state is None:
            raise RuntimeError("the local cloud is not started")
        self._deployed_state.restore(
            stepfunctions=self._deployer_client("stepfunctions"),
            lambda_service=self._lambda(),
            account_concurrency=self.config.account_concurrency,
            history_store=self.history_store,
            in_process_writes=self._writes,
            drain_seconds=drain_seconds,
        )

    def _lambda(self) -> LambdaService:
        if self.lambda_service is None:
            raise RuntimeError("the local cloud is not started")
        return self.lambda_service

    def _event_target_client(self, service: str) -> Any:
        """One deployer client per service for EventBridge's deliveries (boto3 builds clients unsafely
        from several threads at once)."""
        with self._event_client_lock:
            if service not in self._event_clients:
                self._event_clients[service] = self._deployer_client(service)
            return self._event_clients[service]

    def _deployer_client(self, service: str) -> Any:
        return sdk_models.client(
            service,
            endpoint_url=self.endpoint,
            region_name=self.stack.region,
            **DEPLOYER_CREDENTIALS,
        )

    def environment(self) -> dict[str, str]:
        """The exports that point the AWS CLI and boto3 at this local cloud."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": DUMMY_CREDENTIALS["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": DUMMY_CREDENTIALS["aws_secret_access_key"],
            "AWS_DEFAULT_REGION": self.stack.region,
            "AWS_REGION": self.stack.region,
            # TestState's endpoint carries the host prefix "sync-", which no loopback name resolves.
            "AWS_DISABLE_HOST_PREFIX_INJECTION": "true",
        }

    @property
    def log_dir(self) -> Path:
        """The functions' logs (one file per execution environment)."""
        return self.state_dir / "logs"

    @property
    def handler_cpu_dir(self) -> Path:
        """Where runtimes write their handlers' CPU time, with measure_handler_cpu (runtime_shim)."""
        return self.log_dir / "handler-cpu"

    def _handler_cpu_environment(self) -> dict[str, str]:
        if not self.config.measure_handler_cpu:
            return {}
        self.handler_cpu_dir.mkdir(parents=True, exist_ok=True)
        return {HANDLER_CPU_VARIABLE: str(self.handler_cpu_dir)}

    def dynamodb_writes(self) -> tuple[Counter[str], Counter[str]]:
        """DynamoDB write requests and write request units by operation since the start, answered or not."""
        if self.data_plane is not None:
            return self.data_plane.writes()
        return self._writes.snapshot()

    def data_plane_pids(self) -> list[int]:
        """The processes that serve the local cloud's data plane (its own work, outside this process)."""
        return [self.data_plane.pid] if self.data_plane is not None else []

    def flush_metrics(self) -> None:
        """Publish the Lambda metrics gathered so far now, instead of at the next tick."""
        if self._metrics is not None:
            self._metrics.publish_once()

    # ------------------------------------------------------------------ requests
    def _dispatch(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == HEALTH_PATH:
            return health_answer(self.deployed, start_response)
        # The HTTP API answers for its own routes' authorization (http_api.py), as API Gateway does.
        if self.signatures is not None and not (self.http_api is not None and self.http_api.handles(path)):
            signature_refusal = self.signatures.refuse(environ, start_response)
            if signature_refusal is not None:
                return signature_refusal
        if not self._deployed.is_set() and not from_deployer(environ):
            assert self.lambda_service is not None
            as_json = bool(environ.get("HTTP_X_AMZ_TARGET")) or self.lambda_service.handles(path)
            return still_deploying_answer(as_json, start_response)
        if self.iam is not None and (refusal := self.iam.refuse(environ, start_response)) is not None:
            return refusal
        assert self.lambda_service is not None
        assert self.http_api is not None
        if self.lambda_service.handles(path):
            return self.lambda_service(environ, start_response)
        if self.http_api.handles(path):
            return self.http_api(environ, start_response)
        # moto files the request's resources under this cloud's account, whatever key signed it.
        environ[MOTO_ACCOUNT_ENVIRON_KEY] = self.account_id
        return self._guarded_services(environ, start_response)

    def _aws_services(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        """moto's services and the data plane, behind the protocol guard (``_guarded_services``)."""
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target:
            return self._moto_app(environ, start_response)
        if self.data_plane is not None and data_plane.handles(target):
            return self.data_plane.forward(environ, start_response)
        app = self._service_app(target, environ)
        if data_plane.handles(target):
            operation = target.rpartition(".")[2]
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            self._writes.record(operation, body)
            with self._table_locks.holding(operation, body):
                return list(self._in_process_dynamodb(app)(environ, start_response))
        return app(environ, start_response)

    def _service_app(self, target: str, environ: WSGIEnvironment) -> WSGIApplication:
        """moto's app for an X-Amz-Target service, found once: moto infers it for every request, under
        one global lock, which serialised every DynamoDB call of every handler."""
        service = target.partition(".")[0]
        app = self._apps_by_target.get(service)
        if app is None:
            app = self._apps_by_target.setdefault(service, self._moto_app.get_application(environ))
        return app

    def _in_process_dynamodb(self, moto_app: WSGIApplication) -> DynamoDBApp:
        if self._dynamodb_app is None:
            self._dynamodb_app = DynamoDBApp(moto_app)
        return self._dynamodb_app

    def _invoke_for_api(self, function_name: str, payload: bytes) -> InvokeOutcome:
        assert self.lambda_service is not None
        try:
            result = self.lambda_service.invoke(function_name, payload)
        except TooManyRequestsError:
            return InvokeOutcome(payload=b"", throttled=True)
        return InvokeOutcome(payload=result.payload, function_error=result.function_error)

    def _call_states_for_api(self, action: str, request: JsonObject, role_arn: str | None) -> ActionOutcome:
        """A Step Functions action called by an API's integration: signed as its role, answered raw."""
        credentials = (self.iam.task_credentials(role_arn) if self.iam and role_arn else None) or (
            DUMMY_CREDENTIALS["aws_access_key_id"],
            DUMMY_CREDENTIALS["aws_secret_access_key"],
        )
        signed = AWSRequest(
            method="POST",
            url=f"{self.endpoint}/",
            data=json.dumps(request).encode(),
            headers={
                "X-Amz-Target": f"AWSStepFunctions.{action}",
                "Content-Type": "application/x-amz-json-1.0",
            },
        )
        SigV4Auth(Credentials(*credentials), "states", self.stack.region).add_auth(signed)
        # Served in-process, under the host it was signed for.
        response = WerkzeugClient(self._dispatch).post(
            "/", base_url=self.endpoint, data=signed.body, headers=dict(signed.headers.items())
        )
        return ActionOutcome(status=response.status_code, body=response.get_data())

    # ------------------------------------------------------------------ deployment
    def _deploy(self) -> None:
        role_of = self.iam.state_machine_role_arn if self.iam else None
        StackDeployer(self.stack, self._deployer_client, role_of, self.config.definition_transform).deploy()
        for logical_id, path in self.config.seed_files.items():
            if any(table.logical_id == logical_id for table in self.stack.tables):
                self.seed_table(logical_id, path)

    def seed_table(self, logical_id: str, path: Path) -> int:
        items = json.loads(path.read_text(), parse_float=Decimal)
        if isinstance(items, dict):
            items = items.get("items", [])
        table = sdk_models.resource(
            "dynamodb",
            endpoint_url=self.endpoint,
            region_name=self.stack.region,
            aws_access_key_id=DEPLOYER_CREDENTIALS["aws_access_key_id"],
            aws_secret_access_key=DEPLOYER_CREDENTIALS["aws_secret_access_key"],
        ).Table(self.stack.table_name(logical_id))
        with table.batch_writer() as writer:
            for item in items:
                writer.put_item(Item=item)
        return len(items)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
