"""Run conformance cases on the local cloud and compare each outcome with AWS's recording.

One SAM template holds every case: an ``AWS::Serverless::Function`` per recorded Lambda function (its
handler in a folder of its own), an ``AWS::Serverless::StateMachine`` per definition with the function
and state machine ARNs as ``DefinitionSubstitutions``, and the buckets and tables the cases use. The
local cloud deploys it as ``orderbatch local up`` would; the cases' S3 objects are put, then every
execution is started with boto3 and read back (DescribeExecution, GetExecutionHistory) as a user of
AWS would. Cases use distinct state machines, functions, buckets and tables, so they run side by side.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from orderbatch.conformance.cases import Case, placeholders
from orderbatch.conformance.compare import Difference, compare_outcomes
from orderbatch.conformance.normalise import (
    apply_snapshot_transformers,
    canonical,
    parallel_events_as_snapshotted,
)
from orderbatch.conformance.outcome import (
    Outcome,
    outcome_from_description,
    outcome_from_events,
    scheduled_attempts,
)
from sam_local_cloud import ExecutionStillRunningError, wait_for_execution
from sam_local_cloud.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions.client import SFNClient

    from sam_local_cloud import LocalCloud

LOCAL_REGION = "us-east-1"
LOCAL_ACCOUNT = "123456789012"
# The role the extraction gave every recorded state machine (tests/conformance/localstack_shim.py).
RECORDED_ROLE_ARN = f"arn:aws:iam::{LOCAL_ACCOUNT}:role/conformance-sfn-role"
RECORDED_ROLE_NAME = "snf_role_arn"
DEFAULT_WORKERS = 6
# The slowest recorded case (retries with backoff) takes about 10 s here; a case still running at
# this bound is reported as not finishing (e.g. a Wait AWS refuses but the local cloud starts).
DEFAULT_CASE_TIMEOUT = 45.0
POLL_SECONDS = 0.2
# Enough that cases running side by side never throttle one another: a 429 would change outcomes.
ACCOUNT_CONCURRENCY = 200


@dataclass
class CaseResult:
    case: Case
    actual: Outcome | None = None
    differences: list[Difference] = field(default_factory=list)
    error: str | None = None  # the case could not run to an outcome (definition rejected, no end, ...)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.error is None and not self.differences

    def summary(self) -> str:
        """One line: why the case failed, or "ok"."""
        if self.error is not None:
            return self.error
        if self.differences:
            extra = f" (+{len(self.differences) - 1} more)" if len(self.differences) > 1 else ""
            return self.differences[0].line() + extra
        return "ok"


@dataclass
class Tally:
    passed: int = 0
    total: int = 0

    @property
    def rate(self) -> float:
        return self.passed / self.total if self.total else 0.0

    def add(self, passed: bool) -> None:
        self.total += 1
        self.passed += int(passed)

    def to_json(self) -> JsonObject:
        return {"passed": self.passed, "total": self.total, "rate": round(self.rate, 4)}


@dataclass
class RunReport:
    results: list[CaseResult]
    seconds: float

    @property
    def overall(self) -> Tally:
        tally = Tally()
        for result in self.results:
            tally.add(result.passed)
        return tally

    def by(self, groups: Callable[[Case], Iterable[str]]) -> dict[str, Tally]:
        """Pass counts per group; a case counts in every group it belongs to."""
        tallies: dict[str, Tally] = {}
        for result in self.results:
            for group in groups(result.case):
                tallies.setdefault(group, Tally()).add(result.passed)
        return dict(sorted(tallies.items()))

    def by_state_type(self) -> dict[str, Tally]:
        return self.by(lambda case: case.state_types)

    def by_feature(self) -> dict[str, Tally]:
        return self.by(lambda case: case.features)

    def by_area(self) -> dict[str, Tally]:
        return self.by(lambda case: [case.area])

    @property
    def failures(self) -> list[CaseResult]:
        return [result for result in self.results if not result.passed]

    def to_json(self) -> JsonObject:
        return {
            "overall": self.overall.to_json(),
            "seconds": round(self.seconds, 1),
            "by_state_type": {k: v.to_json() for k, v in self.by_state_type().items()},
            "by_feature": {k: v.to_json() for k, v in self.by_feature().items()},
            "by_area": {k: v.to_json() for k, v in self.by_area().items()},
            "cases": [
                {
                    "id": r.case.id,
                    "passed": r.passed,
                    "summary": r.summary(),
                    "seconds": round(r.seconds, 2),
                    "differences": [d.line() for d in r.differences],
                }
                for r in self.results
            ],
        }


# ------------------------------------------------------------------------------------------ template
def _logical_id(prefix: str, name: str) -> str:
    return prefix + re.sub(r"[^A-Za-z0-9]", "", name.title())


@dataclass
class Deployment:
    """The template built for a set of cases, and what was left out of it and why."""

    template: Path
    state_machines: dict[str, str]  # name -> logical ID
    rejected: dict[str, str] = field(default_factory=dict)  # state machine name -> why


def build_template(cases: list[Case], work_dir: Path, validate: Callable[[str], str | None]) -> Deployment:
    """Write the SAM template for ``cases`` under ``work_dir``; ``validate`` vets a definition first."""
    resources: JsonObject = {}
    functions = _function_resources(cases, work_dir, resources)
    for case in cases:
        for setup in case.s3_setup:
            if setup["call"] == "create_bucket":
                resources[_logical_id("Bucket", setup["bucket"])] = {
                    "Type": "AWS::S3::Bucket",
                    "Properties": {"BucketName": setup["bucket"]},
                }
        for table in case.dynamodb_tables:
            key = table["partition_key"]
            resources[_logical_id("Table", table["table"])] = {
                "Type": "AWS::DynamoDB::Table",
                "Properties": {
                    "TableName": table["table"],
                    "BillingMode": "PAY_PER_REQUEST",
                    "KeySchema": [{"AttributeName": key, "KeyType": "HASH"}],
                    "AttributeDefinitions": [{"AttributeName": key, "AttributeType": "S"}],
                },
            }
    machines: JsonObject = {}
    for case in cases:
        machines.setdefault(case.state_machine_name, case.definition)
        machines.update({n: d for n, d in case.nested_state_machines.items() if n not in machines})
    deployment = Deployment(template=work_dir / "template.json", state_machines={})
    logical_ids = {name: _logical_id("Sm", name) for name in machines}
    for name, definition in machines.items():
        text = json.dumps(definition)
        reason = validate(_with_local_arns(text))
        if reason is not None:
            deployment.rejected[name] = reason
            continue
        properties: JsonObject = {"Name": name, "Type": "STANDARD", "Definition": definition}
        substitutions = _substitutions(text, functions, logical_ids)
        if substitutions:
            properties["DefinitionSubstitutions"] = substitutions
        resources[logical_ids[name]] = {"Type": "AWS::Serverless::StateMachine", "Properties": properties}
        deployment.state_machines[name] = logical_ids[name]
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Description": "Step Functions conformance cases recorded against AWS",
        "Resources": resources,
    }
    deployment.template.write_text(json.dumps(template, indent=1))
    return deployment


def _function_resources(cases: list[Case], work_dir: Path, resources: JsonObject) -> dict[str, str]:
    """Add a function (its handler in a code folder of its own) per recorded function; name -> logical ID."""
    functions: dict[str, str] = {}
    for case in cases:
        for function in case.functions.values():
            if function.name in functions:
                continue
            logical_id = functions[function.name] = _logical_id("Fn", function.name)
            code_dir = work_dir / "functions" / function.name
            code_dir.mkdir(parents=True, exist_ok=True)
            module = function.handler.rsplit(".", 1)[0]
            shutil.copyfile(function.source, code_dir / f"{module}.py")
            properties: JsonObject = {
                "FunctionName": function.name,
                "Runtime": "python3.12",
                "Handler": function.handler,
                "CodeUri": str(code_dir),
                "Timeout": function.timeout,
            }
            if function.environment:
                properties["Environment"] = {"Variables": dict(function.environment)}
            resources[logical_id] = {"Type": "AWS::Serverless::Function", "Properties": properties}
    return functions


def _substitutions(text: str, functions: dict[str, str], machines: dict[str, str]) -> JsonObject:
    """DefinitionSubstitutions for the ARN placeholders of a definition: GetAtt and Ref in the template."""
    substitutions: JsonObject = {}
    for kind, target in placeholders(text):
        if kind == "FunctionArn" and target in functions:
            substitutions[f"{kind}_{target}"] = {"Fn::GetAtt": [functions[target], "Arn"]}
        elif kind == "StateMachineArn" and target in machines:
            substitutions[f"{kind}_{target}"] = {"Ref": machines[target]}
    return substitutions


def _with_local_arns(text: str) -> str:
    """A definition or input with its placeholders filled as the local cloud fills them."""

    def arn(match: re.Match[str]) -> str:
        kind, name = match.group(1), match.group(2)
        if kind == "FunctionArn":
            return f"arn:aws:lambda:{LOCAL_REGION}:{LOCAL_ACCOUNT}:function:{name}"
        return f"arn:aws:states:{LOCAL_REGION}:{LOCAL_ACCOUNT}:stateMachine:{name}"

    return re.sub(r"\$\{(FunctionArn|StateMachineArn)_([A-Za-z0-9_-]+)\}", arn, text)


# The extraction ran LocalStack's tests with "now" frozen at this moment (see tests/conformance/
# localstack_shim.py) so that cases regenerate identically; a later timestamp in an input is "now plus".
EXTRACTION_NOW = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
_ISO_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{3})?Z")


def _shifted_to_run_time(text: str) -> str:
    """An input's "now plus something" timestamps moved by as long as has passed since the extraction, so a
    wait of 24,856 days is still one when the case runs."""
    elapsed = datetime.datetime.now(datetime.UTC) - EXTRACTION_NOW

    def shift(match: re.Match[str]) -> str:
        try:
            moment = datetime.datetime.fromisoformat(match.group(1)).replace(tzinfo=datetime.UTC)
        except ValueError:  # the invalid dates some cases are about
            return match.group(0)
        if moment <= EXTRACTION_NOW:
            return match.group(0)
        return (moment + elapsed).strftime("%Y-%m-%dT%H:%M:%S") + (match.group(2) or "") + "Z"

    return _ISO_TIMESTAMP.sub(shift, text)


# ------------------------------------------------------------------------------------------ running
def run_cases(
    cases: list[Case],
    *,
    workers: int = DEFAULT_WORKERS,
    case_timeout: float = DEFAULT_CASE_TIMEOUT,
    on_result: Callable[[CaseResult], None] | None = None,
) -> RunReport:
    """Deploy ``cases`` on a fresh local cloud, run them, and compare each with its recording."""
    from sam_local_cloud.stack import definition_refusal

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="orderbatch-conformance-") as scratch:
        work_dir = Path(scratch)
        deployment = build_template(cases, work_dir, definition_refusal)
        with _local_cloud(deployment.template, work_dir) as cloud:
            _put_objects(cloud, cases)
            stepfunctions = cloud.client(
                "stepfunctions",
                retries={"total_max_attempts": 3, "mode": "standard"},
                max_pool_connections=50,
            )
            lock = threading.Lock()

            def run_one(case: Case) -> CaseResult:
                result = _run_case(case, stepfunctions, deployment, case_timeout)
                if on_result is not None:
                    with lock:
                        on_result(result)
                return result

            with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="conformance") as pool:
                results = list(pool.map(run_one, cases))
    return RunReport(results=results, seconds=time.monotonic() - started)


@contextmanager
def _local_cloud(template: Path, work_dir: Path) -> Iterator[LocalCloud]:
    from sam_local_cloud import LocalCloud, LocalCloudConfig

    config = LocalCloudConfig(
        template=template,
        # The recordings' ARNs are compared in this account: another would fail every case, so say so.
        account_id=LOCAL_ACCOUNT,
        account_concurrency=ACCOUNT_CONCURRENCY,
        state_dir=work_dir / "state",
        # Each function runs for a handful of cases at most: no reason to keep its runtime warm.
        idle_timeout_seconds=20.0,
        environments_per_quota_slot=0.1,
        # The recordings ran with a role allowed every action on every resource: nothing to enforce.
        enforce_iam=False,
    )
    cloud = LocalCloud(config)
    # A request moto fails with a 500 is a case's result; its traceback on stderr would bury the report.
    server_log = logging.getLogger("werkzeug")
    level = server_log.level
    server_log.setLevel(logging.CRITICAL)
    cloud.start()
    try:
        yield cloud
    finally:
        cloud.stop()
        server_log.setLevel(level)


def _put_objects(cloud: LocalCloud, cases: list[Case]) -> None:
    s3 = cloud.client("s3")
    done: set[tuple[str, str]] = set()
    for case in cases:
        for setup in case.s3_setup:
            key = (setup["bucket"], setup.get("key", ""))
            if setup["call"] == "put_object" and key not in done:
                s3.put_object(Bucket=setup["bucket"], Key=setup["key"], Body=setup["body"].encode())
                done.add(key)


def _run_case(case: Case, stepfunctions: SFNClient, deployment: Deployment, timeout: float) -> CaseResult:
    started = time.monotonic()
    result = CaseResult(case=case)
    machines = [case.state_machine_name, *case.nested_state_machines]
    rejected = [deployment.rejected[name] for name in machines if name in deployment.rejected]
    if rejected:
        result.error = rejected[0]
        return result
    state_machine_arn = (
        f"arn:aws:states:{LOCAL_REGION}:{LOCAL_ACCOUNT}:stateMachine:{case.state_machine_name}"
    )
    try:
        execution_arn = stepfunctions.start_execution(
            stateMachineArn=state_machine_arn, input=_shifted_to_run_time(_with_local_arns(case.input_text))
        )["executionArn"]
        events = _finished_history(stepfunctions, execution_arn, timeout)
        if events is None:
            result.error = f"did not finish within {timeout:.0f} s"
        else:
            result.actual = _local_outcome(case, stepfunctions, execution_arn, events)
    except ClientError as error:  # the local cloud refused or failed an API call a user would make
        response = error.response
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = response.get("Error", {}).get("Code") or "no error code"
        detail = "" if code == str(status) else f" ({code})"
        result.error = f"{error.operation_name} answered HTTP {status}{detail}"
    except Exception as error:  # one case's trouble is its result, never the end of the run
        result.error = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:160]}"
    result.seconds = time.monotonic() - started
    if result.actual is not None:
        result.differences = compare_outcomes(
            comparable(case.expected),
            comparable(result.actual, case),
            unordered_events=case.runs_branches,
        )
    return result


def _local_outcome(
    case: Case, stepfunctions: SFNClient, execution_arn: str, events: list[Mapping[str, Any]]
) -> Outcome:
    try:
        outcome = outcome_from_events(events)
    except ValueError:
        # Finished without a terminal event in its history: the description says how it ended.
        description = stepfunctions.describe_execution(executionArn=execution_arn)
        # The text fields an outcome reads (the description's dates are not JSON).
        outcome = outcome_from_description(
            {
                "status": description["status"],
                "output": description.get("output"),
                "error": description.get("error"),
                "cause": description.get("cause"),
            }
        )
        outcome.event_types = [str(event["type"]) for event in events]
        outcome.attempts = scheduled_attempts(events)
    if case.parallel_events_normalised and outcome.event_types is not None:
        outcome.event_types = parallel_events_as_snapshotted(outcome.event_types)
    return outcome


def _finished_history(
    stepfunctions: SFNClient, execution_arn: str, timeout: float
) -> list[Mapping[str, Any]] | None:
    try:
        wait_for_execution(stepfunctions, execution_arn, timeout=timeout, poll_seconds=POLL_SECONDS)
    except ExecutionStillRunningError:
        stepfunctions.stop_execution(executionArn=execution_arn)
        return None
    events: list[Mapping[str, Any]] = []
    paginator = stepfunctions.get_paginator("get_execution_history")
    for page in paginator.paginate(executionArn=execution_arn):
        events.extend(page["events"])
    return events


def comparable(outcome: Outcome, case: Case | None = None) -> Outcome:
    """An outcome in canonical form; a local one (``case`` given) first gets the snapshot's transformers."""

    def prepare(value: JsonValue, field: str) -> JsonValue:
        if case is not None:
            value = apply_snapshot_transformers(value, field, regex, case.jsonpath_transformers)
        return canonical(value, field)

    from sam_local_cloud.stack import LOCAL_ROLE_ARN

    # The recordings' state machines ran as a role that LocalStack's fixtures always name "snf_role_arn"
    # (some tests add the transformer themselves, the others through their fixtures); locally they run as
    # the local cloud's role.
    regex = [
        pattern_and_replacement
        for pattern_and_replacement in (case.regex_transformers if case is not None else [])
        if pattern_and_replacement[0] != RECORDED_ROLE_ARN
    ]
    regex.append((re.escape(LOCAL_ROLE_ARN), RECORDED_ROLE_NAME))

    attempts = {str(prepare(key, "resource")): count for key, count in outcome.attempts.items()}
    error = prepare(outcome.error, "error")
    return Outcome(
        status=outcome.status,
        output=prepare(outcome.output, "output"),
        error=None if error is None else str(error),
        cause=prepare(outcome.cause, "cause"),
        event_types=outcome.event_types,
        attempts=dict(sorted(attempts.items())),
    )
