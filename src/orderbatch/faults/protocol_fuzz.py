"""The protocol fuzzer: generated requests against a local cloud, every answer held to AWS's.

Hypothesis draws each case (an operation the local cloud serves, parameters valid for its model, one way of
spoiling the request); boto3 builds, signs and sends it with its own validation off, and reads the answer as
a user's code would. Every case is judged (``fuzz_verdicts.judge``) and counted; after every few hundred
requests the cloud must still answer a plain request. A run first collects every failure, then hands the
first case of each failing kind back to Hypothesis, which shrinks it to the smallest request that still
fails.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    HTTPClientError,
    ReadTimeoutError,
)
from botocore.model import OperationModel
from botocore.parsers import ResponseParserError
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from orderbatch.faults.fuzz_requests import (
    DEEP_BODY,
    MALFORMED_BODY,
    MUTATIONS,
    NON_UTF8_BODY,
    SUCCESS,
    VALID,
    FuzzCase,
    ShapeStrategies,
    Target,
    spoil_params,
    spoil_request,
)
from orderbatch.faults.fuzz_verdicts import (
    NOT_IMPLEMENTED_CODE,
    STOPPED_SERVING,
    UNCAUGHT_EXCEPTION,
    Outcome,
    judge,
    protocol_of,
)
from sam_local_cloud import StaticCredentials

if TYPE_CHECKING:
    from botocore.awsrequest import AWSRequest

FUZZ_TEMPLATE = Path(__file__).resolve().parent / "fuzz_app" / "template.yaml"
# The AWS protocols the local cloud serves, as botocore names the services.
FUZZED_SERVICES = ("lambda", "stepfunctions", "dynamodb", "s3", "sqs", "sns", "events", "cloudwatch", "iam")
# Valid requests are drawn as often as all the spoiled kinds together: they reach the deepest code.
_MUTATION_WEIGHTS = [(VALID, len(MUTATIONS) - 1)] + [
    (mutation, 1) for mutation in MUTATIONS if mutation != VALID
]
# How the local cloud words a request moto raised on (protocol_guard): a gap, counted apart.
_GAP_PREFIX = "The local cloud cannot answer"
# How often the fuzzer checks the cloud still answers a plain request.
_LIVENESS_EVERY = 250
# Operations whose effect would end the experiment rather than test an answer: they stop what is being fuzzed.
_NEVER_SENT = frozenset({("lambda", "DeleteFunction"), ("lambda", "PutFunctionConcurrency")})


@dataclass
class Failure:
    kind: str
    detail: str
    case: str
    # The whole request, untruncated: what replays it.
    request: str = ""


@dataclass
class FuzzReport:
    served: dict[str, set[str]] = field(default_factory=dict)
    modelled: dict[str, int] = field(default_factory=dict)
    covered: set[tuple[str, str]] = field(default_factory=set)
    not_implemented: set[tuple[str, str]] = field(default_factory=set)
    requests: int = 0
    not_sent: int = 0
    by_mutation: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    # Requests of served operations moto could not answer (the local cloud said so): gaps, not failures.
    gaps: Counter[str] = field(default_factory=Counter)
    shrunk: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def failures_by_kind(self) -> Counter[str]:
        return Counter(failure.kind for failure in self.failures)

    def served_count(self) -> int:
        return sum(len(operations) for operations in self.served.values())

    def covered_served(self) -> int:
        return sum(1 for service, operation in self.covered if operation in self.served.get(service, set()))

    def as_dict(self) -> dict[str, object]:
        return {
            "requests": self.requests,
            "not_sent": self.not_sent,
            "seconds": round(self.seconds, 1),
            "operations_served": self.served_count(),
            "operations_covered": self.covered_served(),
            "operations_not_implemented": len(self.not_implemented),
            "by_mutation": dict(sorted(self.by_mutation.items())),
            "failures_by_kind": dict(sorted(self.failures_by_kind.items())),
            "first_failures": {
                kind: next(f.detail + " <- " + f.case for f in self.failures if f.kind == kind)
                for kind in sorted(self.failures_by_kind)
            },
            "shrunk": self.shrunk,
            "gaps": dict(self.gaps.most_common()),
        }

    def summary(self) -> str:
        lines = [
            f"protocol fuzz: {self.requests:,} requests in {self.seconds:.1f} s "
            f"({self.not_sent:,} more drawn that boto3 could not build)",
            f"operations covered: {self.covered_served()} of {self.served_count()} served "
            f"({len(self.not_implemented)} modelled operations answer {NOT_IMPLEMENTED_CODE})",
        ]
        for service in sorted(self.served):
            covered = sum(1 for s, o in self.covered if s == service and o in self.served[service])
            lines.append(f"  {service:<14} {covered:>3} of {len(self.served[service]):>3} served")
        lines.append(
            "requests by kind: " + ", ".join(f"{k} {v:,}" for k, v in sorted(self.by_mutation.items()))
        )
        if self.gaps:
            lines.append(
                f"gaps (answered {NOT_IMPLEMENTED_CODE}: moto could not answer): {sum(self.gaps.values())} "
                f"requests of {len(self.gaps)} operation cases; most: "
                + ", ".join(f"{name} {count}" for name, count in self.gaps.most_common(8))
            )
        if not self.failures:
            lines.append("failures: none")
        for kind, count in sorted(self.failures_by_kind.items()):
            first = next(failure for failure in self.failures if failure.kind == kind)
            lines.append(f"FAILURE {kind}: {count} (first: {first.detail})")
            lines.append(f"    {first.case}")
            if kind in self.shrunk:
                lines.append(f"    shrunk: {self.shrunk[kind]}")
        return "\n".join(lines)


class _FailureFoundError(Exception):
    def __init__(self, kind: str, detail: str, case: FuzzCase) -> None:
        super().__init__(f"{kind}: {detail} <- {case.describe()}")
        self.kind = kind


class _LoggedErrors(logging.Handler):
    """Errors with a traceback logged while the fuzzer runs, and exceptions that ended a thread."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.seen.append(f"{record.name}: {record.getMessage()[:300]}")


@contextmanager
def _watching_logs() -> Iterator[_LoggedErrors]:
    handler = _LoggedErrors()
    root = logging.getLogger()
    root.addHandler(handler)
    thread_hook = threading.excepthook

    def on_thread_exception(arguments: threading.ExceptHookArgs) -> None:
        handler.seen.append(
            f"thread {arguments.thread.name if arguments.thread else '?'}: {arguments.exc_value!r}"
        )
        thread_hook(arguments)

    threading.excepthook = on_thread_exception
    try:
        yield handler
    finally:
        threading.excepthook = thread_hook
        root.removeHandler(handler)


class ProtocolFuzzer:
    """Sends fuzz cases to one endpoint and judges the answers."""

    def __init__(
        self,
        endpoint: str,
        *,
        region: str,
        credentials: StaticCredentials,
        known_names: Mapping[str, Sequence[str]],
        services: Sequence[str] = FUZZED_SERVICES,
        is_alive: Callable[[], bool] | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._session = botocore.session.get_session()
        self._strategies = ShapeStrategies(known_names)
        # Member name (lower case) -> names of the deployed resources it may hold.
        self.known_names = {name.lower(): list(values) for name, values in known_names.items() if values}
        self._is_alive = is_alive
        config = Config(
            parameter_validation=False,
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=5,
            read_timeout=60,
            inject_host_prefix=False,
            max_pool_connections=2,
        )
        self._clients: dict[str, Any] = {}  # botocore clients, called by their private _make_api_call
        self._pending: FuzzCase | None = None
        self._sent = False
        self._status: int | None = None
        for service in services:
            client = boto3.client(
                service,  # type: ignore[call-overload]
                endpoint_url=endpoint,
                region_name=region,
                config=config,
                **credentials,
            )
            client.meta.events.register("before-sign", self._spoil)
            client.meta.events.register("before-send", self._mark_sent)
            client.meta.events.register("before-parse", self._note_status)
            self._clients[service] = client
        self.targets = [
            Target(service, operation)
            for service in services
            for operation in self._clients[service].meta.service_model.operation_names
            if (service, operation) not in _NEVER_SENT
        ]
        self.report = FuzzReport(
            served={service: set() for service in services},
            modelled={
                service: len(self._clients[service].meta.service_model.operation_names)
                for service in services
            },
        )

    # -------------------------------------------------------------------- one request
    def operation(self, target: Target) -> OperationModel:
        model: OperationModel = self._clients[target.service].meta.service_model.operation_model(
            target.operation
        )
        return model

    def case_strategy(
        self, targets: Sequence[Target] | None = None, mutations: Sequence[str] | None = None
    ) -> st.SearchStrategy[FuzzCase]:
        chosen_targets = list(targets or self.targets)
        weighted = [
            m for m, weight in _MUTATION_WEIGHTS for _ in range(weight) if mutations is None or m in mutations
        ]

        def for_target(target: Target) -> st.SearchStrategy[FuzzCase]:
            return st.builds(
                FuzzCase,
                target=st.just(target),
                params=self._strategies.input_of(self.operation(target)),
                mutation=st.sampled_from(weighted),
                choice=st.integers(min_value=0, max_value=10_000),
            )

        return st.sampled_from(chosen_targets).flatmap(for_target)

    def send(self, case: FuzzCase) -> Outcome:
        operation = self.operation(case.target)
        params = spoil_params(case, operation)
        if params is None:
            case.mutation, params = VALID, case.params
        client = self._clients[case.target.service]
        self._pending, self._sent, self._status = case, False, None
        try:
            response = client._make_api_call(case.target.operation, params)
            status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
            _drain(response)
            return Outcome(status=status)
        except ClientError as error:
            metadata = error.response.get("ResponseMetadata", {})
            details = error.response.get("Error", {})
            return Outcome(
                status=int(metadata.get("HTTPStatusCode", 0)),
                code=str(details.get("Code", "")) or str(metadata.get("HTTPStatusCode", "")),
                message=str(details.get("Message", "")),
            )
        except (ConnectionClosedError, EndpointConnectionError, ReadTimeoutError) as error:
            return Outcome(transport_error=f"{type(error).__name__}: {error}")
        except ResponseParserError as error:
            return Outcome(status=self._status, parse_error=f"{type(error).__name__}: {str(error)[:1000]}")
        except Exception as error:  # boto3 refused to build this request: nothing reached the cloud
            if self._sent and not _refused_by_http_client(error):
                # A parser of botocore's own (s3.GetBucketLocation's) raises without the answer's text.
                return Outcome(status=self._status, parse_error=f"{type(error).__name__}: {str(error)[:300]}")
            return Outcome(sent=False)
        finally:
            self._pending = None

    def _spoil(self, request: AWSRequest, **_: object) -> None:
        case = self._pending
        if case is not None and case.mutation != VALID:
            spoil_request(case, protocol_of(self.operation(case.target)), request)

    def _mark_sent(self, **_: object) -> None:
        self._sent = True

    def _note_status(self, response_dict: dict[str, Any] | None = None, **_: object) -> None:
        """The answer's HTTP status, seen before any parser reads (and perhaps fails on) its body."""
        if response_dict is not None:
            self._status = int(response_dict.get("status_code") or 0) or None

    def check(self, case: FuzzCase, logged: _LoggedErrors) -> tuple[str, str] | None:
        """Send one case, count it, and return the failure it shows (kind, detail), if any."""
        operation = self.operation(case.target)
        errors_before = len(logged.seen)
        outcome = self.send(case)
        report = self.report
        if not outcome.sent:
            report.not_sent += 1
            return None
        report.requests += 1
        report.by_mutation[case.mutation] += 1
        key = (case.target.service, case.target.operation)
        if outcome.code == NOT_IMPLEMENTED_CODE and outcome.message.startswith(_GAP_PREFIX):
            report.served[case.target.service].add(case.target.operation)
            report.covered.add(key)
            raised = outcome.message.partition("moto raised ")[2].split(":", 1)[0]
            report.gaps[f"{case.target.service}.{case.target.operation} ({raised})"] += 1
        elif outcome.code == NOT_IMPLEMENTED_CODE:
            report.not_implemented.add(key)
        else:
            report.served[case.target.service].add(case.target.operation)
            report.covered.add(key)
        verdict = judge(case, operation, outcome)
        if verdict is None and len(logged.seen) > errors_before:
            verdict = UNCAUGHT_EXCEPTION, logged.seen[-1]
        due = self._is_alive is not None and report.requests % _LIVENESS_EVERY == 0
        if verdict is None and due and self._is_alive is not None and not self._is_alive():
            verdict = STOPPED_SERVING, "the cloud no longer answers a plain request"
        return verdict

    # -------------------------------------------------------------------- runs
    def run(self, *, examples: int, seed_value: int, shrink: bool = True) -> FuzzReport:
        """Send ``examples`` generated cases (after the boundary cases), collect every failure, then shrink
        the first case of each failing kind."""
        started = time.monotonic()
        with _watching_logs() as logged:
            boundary = boundary_cases(self)
            for case in boundary:
                self._record(case, self.check(case, logged))

            # Some draws are requests boto3 cannot build (a header value it cannot encode): more are drawn
            # than sent, until ``examples`` requests have been sent.
            @settings(
                max_examples=examples + examples // 4 + 100,
                database=None,
                deadline=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @seed(seed_value)
            @given(self.case_strategy())
            def collect(case: FuzzCase) -> None:
                if self.report.requests < examples + len(boundary):
                    self._record(case, self.check(case, logged))

            collect()
            if shrink:
                for kind in sorted(self.report.failures_by_kind):
                    self.report.shrunk[kind] = self._shrink(kind, logged, seed_value)
        self.report.seconds = time.monotonic() - started
        return self.report

    def _record(self, case: FuzzCase, verdict: tuple[str, str] | None) -> None:
        if verdict is not None:
            self.report.failures.append(Failure(verdict[0], verdict[1], case.describe(), case.describe(None)))

    def _shrink(self, kind: str, logged: _LoggedErrors, seed_value: int) -> str:
        first = next(failure for failure in self.report.failures if failure.kind == kind)
        service, operation = first.case.split(" ", 1)[0].split(".", 1)
        mutation = first.case.split("[", 1)[1].split("]", 1)[0].split(" ", 1)[0]
        target = Target(service, operation)

        # No explain phase: it varies the shrunk case's parts to comment on which ones matter, a report this
        # fuzzer does not print, and it was half of a shrink's time.
        @settings(
            max_examples=300,
            database=None,
            deadline=None,
            phases=[Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )
        @seed(seed_value)
        @given(self.case_strategy([target], [mutation]))
        def fails_the_same_way(case: FuzzCase) -> None:
            verdict = self.check(case, logged)
            if verdict is not None and verdict[0] == kind:
                raise _FailureFoundError(kind, verdict[1], case)

        try:
            fails_the_same_way()
        except _FailureFoundError as found:
            return str(found)
        return "(not reproduced by a fresh draw: the failure depends on an earlier request)"


def boundary_cases(fuzzer: ProtocolFuzzer) -> list[FuzzCase]:
    """The limits AWS documents, at and one past each, with AWS's answer to each (FIELD-NOTES: "Limits"),
    and syntax at its worst."""
    known = fuzzer.known_names
    table = (known.get("tablename") or ["missing-table"])[0]
    function = (known.get("functionname") or ["missing-function"])[0]
    machine = (
        known.get("statemachinearn") or ["arn:aws:states:us-east-1:123456789012:stateMachine:missing"]
    )[0]
    bucket = (known.get("bucket") or ["missing-bucket"])[0]

    def item_of(size: int) -> dict[str, dict[str, str]]:
        overhead = len("pk") + len("k") + len("sk") + len("k") + len("blob")
        return {"pk": {"S": "k"}, "sk": {"S": "k"}, "blob": {"S": "x" * (size - overhead)}}

    def case(service: str, operation: str, params: dict[str, object], label: str, *expect: str) -> FuzzCase:
        return FuzzCase(Target(service, operation), params, VALID, label=label, expect=expect)

    put, invoke, start = ("dynamodb", "PutItem"), ("lambda", "Invoke"), ("stepfunctions", "StartExecution")
    item, payload, state_input = 400 * 1024, 6 * 1024 * 1024, 256 * 1024
    cases = [
        case(*put, {"TableName": table, "Item": item_of(item)}, "400 KB item", SUCCESS),
        case(*put, {"TableName": table, "Item": item_of(item + 1)}, "400 KB + 1 item", "ValidationException"),
        case("dynamodb", "GetItem", {"TableName": "", "Key": {}}, "empty table name", "ValidationException"),
        case(
            *invoke, {"FunctionName": function, "Payload": _json_string_of(payload)}, "6 MB payload", SUCCESS
        ),
        case(
            *invoke,
            {"FunctionName": function, "Payload": _json_string_of(payload + 1)},
            "6 MB + 1 payload",
            "RequestTooLargeException",
        ),
        case(
            *start,
            {"stateMachineArn": machine, "input": _json_text_of(state_input)},
            "256 KiB input",
            SUCCESS,
        ),
        case(
            *start,
            {"stateMachineArn": machine, "input": _json_text_of(state_input + 1)},
            "256 KiB + 1 input",
            "ValidationException",
        ),
        case(
            "s3", "PutObject", {"Bucket": bucket, "Key": "k" * 1024, "Body": b"x"}, "1,024-byte key", SUCCESS
        ),
        case(
            "s3",
            "PutObject",
            {"Bucket": bucket, "Key": "k" * 1025, "Body": b"x"},
            "1,025-byte key",
            "KeyTooLongError",
        ),
    ]
    boundary_calls: tuple[tuple[str, str, dict[str, object]], ...] = (
        ("dynamodb", "GetItem", {"TableName": table, "Key": {"pk": {"S": "k"}, "sk": {"S": "k"}}}),
        ("stepfunctions", "ListStateMachines", {}),
        ("events", "ListRules", {}),
        ("sqs", "ListQueues", {}),
        ("lambda", "Invoke", {"FunctionName": function, "Payload": b"{}"}),
    )
    for service, operation, params in boundary_calls:
        expect = ("InvalidRequestContentException",) if service == "lambda" else ("SerializationException",)
        for mutation in (MALFORMED_BODY, DEEP_BODY, NON_UTF8_BODY):
            cases.append(
                FuzzCase(Target(service, operation), params, mutation, label="boundary", expect=expect)
            )
    return [case for case in cases if case.target.service in fuzzer.report.served]


def _json_text_of(size: int) -> str:
    return _json_string_of(size).decode()


def _json_string_of(size: int) -> bytes:
    """A JSON document of exactly ``size`` bytes: one string (Lambda checks a payload is JSON)."""
    return b'"' + b"x" * (size - 2) + b'"'


def _refused_by_http_client(error: Exception) -> bool:
    """Python's HTTP client refuses to send a header value it cannot encode: the request never left."""
    said = str(error)
    return isinstance(error, HTTPClientError) and ("Invalid header" in said or "codec can't encode" in said)


def _drain(response: Mapping[str, object]) -> None:
    """Read a streamed body to its end, so a connection dropped mid-body is seen."""
    for value in response.values():
        if hasattr(value, "read") and callable(value.read):
            value.read()


def fuzz_local_cloud(
    *, examples: int, seed_value: int, template: Path = FUZZ_TEMPLATE, shrink: bool = True
) -> FuzzReport:
    """Start a local cloud on ``template`` (IAM on, the data plane in its process) and fuzz it."""
    from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud, LocalCloudConfig

    config = LocalCloudConfig(template=template, runtime_fallback=True, account_concurrency=4)
    with LocalCloud(config) as cloud:
        stack = cloud.stack
        region, account = stack.region, stack.account_id
        sqs = cloud.client("sqs")
        known_names: dict[str, list[str]] = {
            "TableName": [table.name for table in stack.tables],
            "Bucket": list(stack.buckets.values()),
            "QueueUrl": [sqs.get_queue_url(QueueName=queue.name)["QueueUrl"] for queue in stack.queues],
            "TopicArn": [f"arn:aws:sns:{region}:{account}:{topic}" for topic in stack.topics.values()],
            "FunctionName": [function.name for function in stack.functions],
            "stateMachineArn": [
                f"arn:aws:states:{region}:{account}:stateMachine:{machine.name}"
                for machine in stack.state_machines
            ],
            "EventBusName": list(stack.event_buses.values()),
        }
        dynamodb = cloud.client("dynamodb", retries={"total_max_attempts": 1})

        def is_alive() -> bool:
            try:
                dynamodb.list_tables()
            except Exception:
                return False
            return True

        fuzzer = ProtocolFuzzer(
            cloud.endpoint,
            region=region,
            credentials=DUMMY_CREDENTIALS,
            known_names=known_names,
            is_alive=is_alive,
        )
        report = fuzzer.run(examples=examples, seed_value=seed_value, shrink=shrink)
        if not is_alive():
            report.failures.append(Failure(STOPPED_SERVING, "no answer after the run", "(end of run)"))
        return report
