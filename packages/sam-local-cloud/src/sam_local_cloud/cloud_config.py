"""What a local cloud is made of: its template, quota, ports and the switches of its emulation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sam_local_cloud.lambda_service import EventKeys, FaultPlan
from sam_local_cloud.stepfunctions.histories import DEFAULT_MAX_EVENTS_IN_MEMORY


@dataclass
class LocalCloudConfig:
    # The SAM template deployed at start(); None: the cloud waits for LocalCloud.deploy(template).
    template: Path | None = None
    port: int = 0
    host: str = "127.0.0.1"
    # The account the stack is deployed in. None: 123456789012, or, while another cloud in this process
    # holds that one, the next free ID (moto keeps every account's state apart; accounts.py).
    account_id: str | None = None
    account_concurrency: int = 10
    parameter_overrides: Mapping[str, str] = field(default_factory=dict)
    latency: Mapping[str, float] = field(default_factory=dict)
    lambda_endpoint: str | None = None
    fault_plan: FaultPlan | None = None
    # What a fault plan's attempts are counted by and its item_ids and batch_ids match: the app's keys.
    event_keys: EventKeys = field(default_factory=EventKeys)
    # Where the cloud keeps its logs, histories and runtimes' files. None: a temporary directory of its own,
    # removed with the cloud object (when it is collected, or when the process exits), as tempfile's
    # TemporaryDirectory does; a directory given here is the caller's and is kept.
    state_dir: Path | None = None
    # Table logical ID -> JSON file of items to put after the table is created.
    seed_files: Mapping[str, Path] = field(default_factory=dict)
    function_environment: Mapping[str, str] = field(default_factory=dict)
    idle_timeout_seconds: float = 300.0
    # Runtimes forked from one warm Python (shared pages, fast cold starts) or each started afresh (init
    # as slow as a fresh interpreter's, as on AWS).
    fork_runtimes: bool = True
    # A function whose runtime's Python (python3.12 ...) is not installed runs on the local cloud's own
    # Python instead of failing the start-up.
    runtime_fallback: bool = False
    # Live execution environments of all functions together, as a multiple of the account quota: at the
    # bound, a cold start first stops the least recently used idle environment. AWS keeps every function's
    # idle environments warm for minutes; here memory is the machine's. 0 = no bound.
    environments_per_quota_slot: float = 2.0
    # Finished executions' history events kept in memory, all executions together; older histories are
    # written to <state_dir>/histories and read back from there.
    history_events_in_memory: int = DEFAULT_MAX_EVENTS_IN_MEMORY
    # The longest an Express execution runs before it ends TIMED_OUT; None: AWS's five minutes. Shorter
    # only to see the limit at work in a test.
    express_max_duration_seconds: float | None = None
    # Rewrites a state machine's definition (logical ID, parsed ASL) before it is created: for experiments
    # such as the benchmark's "docs retrier" scenario, never needed to run a template as written.
    definition_transform: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    # DynamoDB served from a process of its own (sam_local_cloud.data_plane), so that it and the interpreter
    # use two cores; False keeps it in this process (one process to debug, or for a single core).
    dynamodb_process: bool = True
    # Functions and state machines call as their template roles, checked on every call (docs/iam.md).
    enforce_iam: bool = True
    # "enforce", "report" (allowed, each would-be denial logged and listed: cloud.iam.would_be_denials())
    # or "off"; None: "enforce", or "off" when enforce_iam is False.
    iam_mode: str | None = None
    # Step Functions Local's MockConfigFile: executions started as <arn>#<TestCase> run that test case
    # (docs/stepfunctions-local.md). None: the SFN_MOCK_CONFIG environment variable's file, if set.
    mock_config: Path | None = None
    # With IAM on, every SigV4-signed request's signature is checked as AWS checks it: only the keys the
    # cloud exports and issues, the right secret, the request's time within AWS's skew (docs/iam.md,
    # "Signatures"). False (or IAM off) takes any signature.
    verify_signatures: bool = True
    # Each runtime writes down its handler's own CPU time in handler_cpu_dir (the benchmark's yardstick).
    measure_handler_cpu: bool = False
    # moto's Step Functions interpreter as released, none of the local cloud's changes to it: only to
    # measure what those cost (the benchmark's engine probe), in a process where no other cloud ran. Its
    # Tasks reach Lambda through moto's own client, at the port in the MOTO_PORT variable.
    moto_interpreter_as_released: bool = False
