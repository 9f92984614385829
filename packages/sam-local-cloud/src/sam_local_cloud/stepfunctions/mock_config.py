"""Step Functions Local's mock configuration file (MockConfigFile) on the local cloud.

A MockConfigFile names test cases per state machine (``StateMachines.<name>.TestCases.<case>``), each mapping
Task states to mocked responses (``MockedResponses.<response>``) keyed by invocation number, ``"0"`` or an
inclusive range ``"1-2"``, with exactly one of ``Return`` (the service's answer) or ``Throw`` (``Error`` and
``Cause``). ``StartExecution`` on ``<stateMachineArn>#<case>`` runs that test case: the execution is the state
machine's own (its ARN and name as for any execution), its mocked Tasks answer from the file without calling
anything, and every other state calls the local cloud's services as usual (Lambda's quota, 429s and faults
included). As in Step Functions Local, invocations are counted per state over the whole execution, every
retry and every Map iteration being one; an invocation the file has no response for fails the execution
with ``States.Runtime``, which no retrier or catcher handles (AWS's rule for ``States.Runtime``).

The file comes from ``sam-local-cloud up --mock-config FILE`` (or ``orderbatch local up``) or, as Step
Functions Local reads it, the ``SFN_MOCK_CONFIG`` environment variable. It is validated when the local cloud
starts and read again when it changes, so test cases can be edited between executions.

moto's interpreter (ported from LocalStack) carries the mocked mode (``Environment.is_mocked_mode``,
``eval_mocked_response`` in the Task states) but no loader, and it picks a response by the state's retry
count. The file's model is ported from LocalStack (Apache License 2.0), ``localstack-core/localstack/
services/stepfunctions/local_mocking/mock_config_file.py`` and ``mock_config.py``; the validation messages,
the per-state invocation count and the wiring into moto are ours.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, RootModel, StrictStr, ValidationError

from sam_local_cloud.accounts import parts_for_arn
from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam.records import EngineRecords
from sam_local_cloud.stepfunctions.service_errors import runtime_failure, task_failure

if TYPE_CHECKING:
    from collections.abc import Callable

    from sam_local_cloud.moto_seam.stepfunctions import Environment

MOCK_CONFIG_ENV_VAR = "SFN_MOCK_CONFIG"
TEST_CASE_SEPARATOR = "#"
# "0" or "1-2": one invocation number, or an inclusive range of them.
_INVOCATION_KEY = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


class MockConfigError(ValueError):
    """A mock configuration file that cannot be used, with every problem found in it."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        listed = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"mock configuration {source} is not valid:\n{listed}")


class TestCaseNotFoundError(LookupError):
    """``<arn>#<case>`` names a test case the mock configuration does not define (or none is loaded)."""


# ---------------------------------------------------------------------------------------------- the file


class _Throw(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    Error: StrictStr
    Cause: StrictStr


class _Response(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    Return: Any = None
    Throw: _Throw | None = None


class _TestCase(RootModel[dict[str, StrictStr]]):
    """State name -> mocked response name."""


class _StateMachine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    TestCases: dict[str, _TestCase]


class _MockConfigFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    StateMachines: dict[str, _StateMachine]
    MockedResponses: dict[str, dict[str, _Response]]


@dataclass(frozen=True)
class MockedInvocations:
    """One mocked response definition: its answers by invocation number (0-based)."""

    name: str
    answers: tuple[Any, ...]  # moto's MockedResponseReturn / MockedResponseThrow, one per invocation


@dataclass(frozen=True)
class MockConfig:
    source: str
    # State machine name -> test case name -> state name -> mocked response name.
    test_cases: dict[str, dict[str, dict[str, str]]]
    responses: dict[str, MockedInvocations]

    def test_case(self, state_machine_name: str, test_case_name: str) -> TestCaseRun:
        """A fresh run of the test case for one execution; TestCaseNotFoundError if it is not defined."""
        cases = self.test_cases.get(state_machine_name)
        if cases is None:
            defined = ", ".join(sorted(self.test_cases)) or "none"
            raise TestCaseNotFoundError(
                f"the mock configuration {self.source} has no test cases for state machine "
                f"'{state_machine_name}' (StateMachines defines: {defined})"
            )
        states = cases.get(test_case_name)
        if states is None:
            defined = ", ".join(sorted(cases)) or "none"
            raise TestCaseNotFoundError(
                f"state machine '{state_machine_name}' has no test case '{test_case_name}' in the mock "
                f"configuration {self.source} (its TestCases: {defined})"
            )
        return TestCaseRun(
            state_machine_name,
            test_case_name,
            {state: self.responses[response] for state, response in states.items()},
        )


def parse_mock_config(document: Any, source: str) -> MockConfig:
    """The mock configuration in ``document`` (parsed JSON), or MockConfigError naming every problem."""
    try:
        raw = _MockConfigFile.model_validate(document)
    except ValidationError as invalid:
        raise MockConfigError(source, [_describe(error) for error in invalid.errors()]) from None
    problems: list[str] = []
    responses: dict[str, MockedInvocations] = {}
    for name, by_key in raw.MockedResponses.items():
        answers = _answers(f"MockedResponses.{name}", by_key, problems)
        if answers is not None:
            responses[name] = MockedInvocations(name, answers)
    test_cases: dict[str, dict[str, dict[str, str]]] = {}
    for machine, definition in raw.StateMachines.items():
        test_cases[machine] = {}
        for case, states in definition.TestCases.items():
            test_cases[machine][case] = dict(states.root)
            for state, response in states.root.items():
                if response not in raw.MockedResponses:
                    problems.append(
                        f"StateMachines.{machine}.TestCases.{case}.{state}: mocked response '{response}' is "
                        "not defined in MockedResponses"
                    )
    if problems:
        raise MockConfigError(source, problems)
    return MockConfig(source, test_cases, responses)


def load_mock_config(path: Path) -> MockConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise MockConfigError(str(path), [f"cannot be read: {error.strerror or error}"]) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise MockConfigError(str(path), [f"is not JSON: {error}"]) from None
    return parse_mock_config(document, str(path))


def _describe(error: Any) -> str:
    location = ".".join(str(part) for part in error["loc"] if part not in ("root",))
    if error["type"] == "extra_forbidden":
        return f"{location}: unknown field"
    if error["type"] == "missing":
        return f"{location}: required field missing"
    if error["type"] == "string_type":
        return f"{location}: must be a string"
    return f"{location}: {error['msg']}"


def _answers(where: str, by_key: dict[str, _Response], problems: list[str]) -> tuple[Any, ...] | None:
    """One answer per invocation number, or None (with the problems noted) if the definition is unusable."""
    from sam_local_cloud.moto_seam.stepfunctions import MockedResponseReturn, MockedResponseThrow

    ranges = _invocation_ranges(where, by_key, problems)
    if ranges is None:
        return None
    answers: list[Any] = []
    for first, last, key in ranges:
        response = by_key[key]
        for _ in range(first, last + 1):
            if response.Throw is not None:
                answers.append(MockedResponseThrow(first, last, response.Throw.Error, response.Throw.Cause))
            else:
                answers.append(MockedResponseReturn(first, last, response.Return))
    return tuple(answers)


def _invocation_ranges(
    where: str, by_key: dict[str, _Response], problems: list[str]
) -> list[tuple[int, int, str]] | None:
    """The responses' invocation ranges in order, or None if any is malformed, overlaps or leaves a gap."""
    if not by_key:
        problems.append(f'{where}: defines no responses (give at least invocation "0")')
        return None
    ranges: list[tuple[int, int, str]] = []
    count_before = len(problems)
    for key, response in by_key.items():
        fields = response.model_fields_set
        if "Return" in fields and "Throw" in fields:
            problems.append(f'{where}["{key}"]: has both Return and Throw; a response has exactly one')
        elif "Return" not in fields and "Throw" not in fields:
            problems.append(f'{where}["{key}"]: has neither Return nor Throw')
        match = _INVOCATION_KEY.match(key)
        if match is None:
            problems.append(f'{where}["{key}"]: not an invocation number or range (write "0", "3" or "1-2")')
            continue
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first:
            problems.append(f'{where}["{key}"]: range ends before it starts')
            continue
        ranges.append((first, last, key))
    expected = 0
    for first, last, key in sorted(ranges):
        if first > expected:
            missing = str(expected) if first - 1 == expected else f"{expected}-{first - 1}"
            problems.append(
                f"{where}: no response for invocation {missing}; invocation numbers run consecutively "
                "from 0 (every retry is an invocation)"
            )
        elif first < expected:
            problems.append(f'{where}["{key}"]: overlaps an earlier range (invocation {first})')
        expected = max(expected, last + 1)
    return sorted(ranges) if len(problems) == count_before else None


# ---------------------------------------------------------------------------------------------- one execution


@dataclass
class TestCaseRun:
    """A test case as one execution runs it: invocations counted per state name over the whole execution."""

    __test__ = False  # not a pytest test class, whatever its name

    state_machine_name: str
    test_case_name: str
    by_state: dict[str, MockedInvocations]
    _invocations: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # Set once an invocation had no response: the execution then fails, whatever its Retry and Catch say.
    exhausted: bool = False

    @property
    def state_mocked_responses(self) -> dict[str, MockedInvocations]:
        """The states this test case mocks: what moto's ``Environment.is_mocked_mode`` looks up."""
        return self.by_state

    def next_answer(self, env: Any) -> Any:  # moto's Environment, whose next state is mocked
        """The mocked response for this invocation of the state ``env`` is in (counted here)."""
        state_name = env.next_state_name
        with self._lock:
            invocation = self._invocations[state_name]
            self._invocations[state_name] += 1
        mocked = self.by_state[state_name]
        if invocation < len(mocked.answers):
            return mocked.answers[invocation]
        self.exhausted = True
        raise runtime_failure(
            env,
            f"Test case '{self.test_case_name}' has no mocked response for invocation {invocation} of state "
            f"'{state_name}': MockedResponses.{mocked.name} answers invocations 0-{len(mocked.answers) - 1}",
        )

    def invocations(self, state_name: str) -> int:
        with self._lock:
            return self._invocations[state_name]


# ---------------------------------------------------------------------------------------------- the source


class MockConfigSource:
    """A cloud's configured file, read again when it changes (its modification time and size)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.path: Path | None = None
        self._stamp: tuple[float, int] | None = None
        self._config: MockConfig | None = None

    def use(self, path: Path | None) -> MockConfig | None:
        with self._lock:
            self.path = path.resolve() if path is not None else None
            self._stamp = None
            self._config = None
            return self._current()

    def current(self) -> MockConfig | None:
        with self._lock:
            return self._current()

    def _current(self) -> MockConfig | None:
        if self.path is None:
            return None
        try:
            status = self.path.stat()
            stamp = (status.st_mtime, status.st_size)
        except OSError:
            stamp = None
        if self._config is None or stamp != self._stamp:
            self._config = load_mock_config(self.path)
            self._stamp = stamp
        return self._config


def mock_config_path(flag: Path | None) -> Path | None:
    """The file to use: the ``--mock-config`` flag, else ``SFN_MOCK_CONFIG`` (as Step Functions Local)."""
    if flag is not None:
        return flag
    from_environment = os.environ.get(MOCK_CONFIG_ENV_VAR, "").strip()
    return Path(from_environment) if from_environment else None


def resolve_test_case(state_machine_arn: str) -> tuple[str, TestCaseRun | None]:
    """The state machine ARN without its ``#<case>`` suffix, and a run of that test case if one is named."""
    base_arn, separator, case = state_machine_arn.partition(TEST_CASE_SEPARATOR)
    if not separator:
        return state_machine_arn, None
    cloud = parts_for_arn(base_arn)
    try:
        config = cloud.mock_config.current() if cloud is not None and cloud.mock_config is not None else None
    except MockConfigError as invalid:
        raise TestCaseNotFoundError(str(invalid)) from None
    if config is None:
        raise TestCaseNotFoundError(
            f"'{state_machine_arn}' names test case '{case}' but no mock configuration is loaded: start the "
            f"local cloud with --mock-config FILE or {MOCK_CONFIG_ENV_VAR}=FILE"
        )
    # arn:aws:states:<region>:<account>:stateMachine:<name>[:<version or alias>]
    parts = base_arn.split(":")
    machine_name = parts[6] if len(parts) > 6 else base_arn
    return base_arn, config.test_case(machine_name, case)


# ---------------------------------------------------------------------------------------------- moto


@dataclass
class _ExecutionTestCase:
    run: TestCaseRun | None = None


# The test case each execution runs, kept beside moto's Execution.
_test_cases: EngineRecords[_ExecutionTestCase] = EngineRecords(_ExecutionTestCase)
# StartExecution builds and starts the execution in the calling thread: the test case goes along in it.
_starting: ContextVar[TestCaseRun | None] = ContextVar("mock_config_starting", default=None)


def register_hooks() -> None:
    # MockConfigFile's StartExecution strips a test case's name off the ARN before EXPRESS's sees it; the
    # context object is built before the test case is given to the environment.
    hooks.order("mock_config", outside=("express",), inside=("context_object",))
    _start_test_case_executions()
    _give_executions_their_test_case()
    _count_invocations_per_state()
    _runtime_error_ends_a_mocked_execution()
    _throw_states_errors_by_name()


def test_case_of(execution: object) -> TestCaseRun | None:
    """The test case an execution was started with, None for an ordinary execution."""
    record = _test_cases.get(execution)
    return record.run if record is not None else None


def raise_mocked_error(env: Any, error: str, cause: str) -> None:  # moto's Environment, or a view of one
    """A mocked Task failure (TaskFailed) with ``error``, a ``States.`` name included (moto refuses those)."""
    raise task_failure(env, error, cause)


def _throw_states_errors_by_name() -> None:
    """A mocked Throw of ``States.TaskFailed`` or ``States.Timeout`` is thrown, not refused as custom."""
    from sam_local_cloud.moto_seam.stepfunctions import mock_eval_utils

    def throw(env: Environment, mocked_response: Any) -> None:
        raise_mocked_error(env, mocked_response.error, mocked_response.cause)

    hooks.replace(mock_eval_utils, "_eval_mocked_response_throw", throw, concern="mock_config")


def _start_test_case_executions() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        Execution,
        InvalidName,
        StepFunctionsParserBackend,
    )

    @hooks.around(StepFunctionsParserBackend, "start_execution", concern="mock_config")
    def start_execution(
        proceed: Callable[..., object], self: object, state_machine_arn: str, *args: object, **kwargs: object
    ) -> object:
        try:
            base_arn, run = resolve_test_case(state_machine_arn)
        except TestCaseNotFoundError as missing:
            raise InvalidName(str(missing)) from None
        starting = _starting.set(run)
        try:
            return proceed(self, base_arn, *args, **kwargs)
        finally:
            _starting.reset(starting)

    @hooks.around(Execution, "start", concern="mock_config")
    def start(proceed: Callable[[object], None], self: object) -> None:
        run = _starting.get()
        if run is not None:
            _test_cases.of(self).run = run
        proceed(self)


def _give_executions_their_test_case() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import ExecutionWorker

    @hooks.around(ExecutionWorker, "_get_evaluation_environment", concern="mock_config")
    def evaluation_environment(proceed: Callable[[object], Any], self: object) -> Any:  # moto's Environment
        env = proceed(self)
        execution = internals.worker_execution(self)
        run = test_case_of(execution) if execution is not None else None
        if run is not None:
            env.mock_test_case = run
        return env


def _count_invocations_per_state() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import Environment

    @hooks.around(Environment, "get_current_mocked_response", concern="mock_config")
    def current_mocked_response(proceed: Any, self: Any) -> Any:
        run = self.mock_test_case
        if isinstance(run, TestCaseRun):
            return run.next_answer(self)
        return proceed(self)


def _runtime_error_ends_a_mocked_execution() -> None:
    """Once a test case ran out of responses, no Retry or Catch handles the States.Runtime that follows.

    moto's ``States.ALL`` matches States.Runtime, which AWS's never does; only here is that corrected, so
    that a missing mocked response fails the execution as Step Functions Local says it does, even where every
    Task catches States.ALL (a Map iteration's failure reaches the Map as a new error of the same name).
    """
    from sam_local_cloud.moto_seam.stepfunctions import ErrorEqualsDecl

    @hooks.around(ErrorEqualsDecl, "_eval_body", concern="mock_config")
    def eval_body(proceed: Any, self: Any, env: Environment) -> None:
        run = getattr(env, "mock_test_case", None)
        if isinstance(run, TestCaseRun) and run.exhausted:
            error_name = env.stack[-1]
            if getattr(error_name, "error_name", None) == "States.Runtime":
                env.stack.pop()
                env.stack.append(False)
                return
        proceed(self, env)
