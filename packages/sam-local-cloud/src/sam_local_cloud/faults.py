"""Fault injection, the public part: the plan a cloud runs with (``LocalCloud.inject``, ``--faults``), the
kinds of fault in it, and the crash points an invocation can be stopped at, recorded and enumerated.

What each kind does, with its fields: docs/faults.md. A plan's rules (``FaultRule``) are decided per
invocation by a ``FaultInjector``, as the Lambda service does (``FaultDecision``: what to do to this one),
so that a tool can say what a plan would do without running it. These names are public; the modules
they come from are not.
"""

from __future__ import annotations

from sam_local_cloud.lambda_service.crash_points import (
    RECORD_IN_PROGRESS,
    CheckpointOperation,
    CrashPoint,
    CrashRecord,
    RecordedCall,
    ResourceNames,
    crash_records,
    enumerate_crash_points,
    idempotency_save,
    recorded_calls,
    recorded_invocations,
)
from sam_local_cloud.lambda_service.event_keys import EventKeys
from sam_local_cloud.lambda_service.fault_injector import FaultInjector
from sam_local_cloud.lambda_service.faults import (
    FAULT_KINDS,
    Crash,
    DuplicateExecution,
    ErrorAfterBody,
    ErrorBeforeBody,
    FaultDecision,
    FaultPlan,
    FaultRule,
    RecordCalls,
    ResponseDelay,
    Throttle,
    Timeout,
)
from sam_local_cloud.runtime_shim import (
    AFTER_CALL,
    AFTER_CHECKPOINT,
    BEFORE_BODY,
    BEFORE_CALL,
    BEFORE_CHECKPOINT,
    BEFORE_RESPONSE,
    CHECKPOINT_OPERATION,
    RESPONSE_LOST,
    parse_crash_point,
)

__all__ = [
    "AFTER_CALL",
    "AFTER_CHECKPOINT",
    "BEFORE_BODY",
    "BEFORE_CALL",
    "BEFORE_CHECKPOINT",
    "BEFORE_RESPONSE",
    "CHECKPOINT_OPERATION",
    "FAULT_KINDS",
    "RECORD_IN_PROGRESS",
    "RESPONSE_LOST",
    "CheckpointOperation",
    "Crash",
    "CrashPoint",
    "CrashRecord",
    "DuplicateExecution",
    "ErrorAfterBody",
    "ErrorBeforeBody",
    "EventKeys",
    "FaultDecision",
    "FaultInjector",
    "FaultPlan",
    "FaultRule",
    "RecordCalls",
    "RecordedCall",
    "ResourceNames",
    "ResponseDelay",
    "Throttle",
    "Timeout",
    "crash_records",
    "enumerate_crash_points",
    "idempotency_save",
    "parse_crash_point",
    "recorded_calls",
    "recorded_invocations",
]
