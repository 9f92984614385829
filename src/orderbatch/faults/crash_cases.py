"""What the crash-point matrix crashes: the app's steps, the configurations (as shipped and the controls
with a defence switched off), and each case's small batch and fault rule."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from order_processing.contract import (
    DURABLE_ORDER_BATCH_FUNCTION,
    PER_ORDER_FUNCTIONS,
    STEP_LOG_NAMES,
    SUMMARIZE_BATCH_FUNCTION,
    Outcome,
)
from sam_local_cloud.faults import (
    CHECKPOINT_OPERATION,
    Crash,
    CrashPoint,
    DuplicateExecution,
    ErrorBeforeBody,
    RecordedCall,
)
from sam_local_cloud.json_types import JsonObject, JsonValue

CONFIRMATION_FAILURE = "InjectedConfirmationFailure"


@dataclass(frozen=True)
class Step:
    name: str
    function: str
    # The step's `task body ran` log name; None for the summary, which logs none.
    body_log_name: str | None
    per_order: bool = True


STEPS = (
    *(
        Step(short_name, function, STEP_LOG_NAMES[function])
        for short_name, function in zip(
            ("validate", "reserve", "charge", "confirm", "cancel"), PER_ORDER_FUNCTIONS, strict=True
        )
    ),
    Step("summarize", SUMMARIZE_BATCH_FUNCTION, None, per_order=False),
)
STEPS_BY_NAME = {step.name: step for step in STEPS}
CONFIRM = STEPS_BY_NAME["confirm"]


def find_steps(names: Iterable[str]) -> list[Step]:
    """Steps by short name (``reserve``) or logical ID (``ReserveInventoryFunction``), in workflow order;
    ``orchestrator`` is the durable function itself."""
    wanted = set()
    for name in names:
        step = STEPS_BY_NAME.get(name) or next(
            (s for s in (*STEPS, ORCHESTRATOR) if s.function == name), None
        )
        if step is None:
            known = ", ".join(step.name for step in (*STEPS, ORCHESTRATOR))
            raise ValueError(f"unknown function {name!r}; expected one of {known} (or their logical IDs)")
        wanted.add(step.name)
    return [step for step in (*STEPS, ORCHESTRATOR) if step.name in wanted]


@dataclass(frozen=True)
class Configuration:
    name: str
    slug: str
    function_environment: Mapping[str, str] = field(default_factory=dict)


AS_SHIPPED = Configuration("as shipped", "ship")
IDEMPOTENCY_OFF = Configuration("idempotency off", "noidem", {"POWERTOOLS_IDEMPOTENCY_DISABLED": "true"})
EFFECT_KEYS_OFF = Configuration("effect keys off", "nokeys", {"EFFECT_KEYS_DISABLED": "true"})
BOTH_OFF = Configuration(
    "both off", "none", {"POWERTOOLS_IDEMPOTENCY_DISABLED": "true", "EFFECT_KEYS_DISABLED": "true"}
)
CONTROLS = (IDEMPOTENCY_OFF, EFFECT_KEYS_OFF, BOTH_OFF)
# The controls rerun every step's points, each defence off in turn.
CONTROL_STEPS = tuple(step.name for step in STEPS)
ALONE = "alone"
WITH_DUPLICATE = "with duplicate"
VARIANTS = (ALONE, WITH_DUPLICATE)

# The orchestrators a matrix runs the app's batches on.
STEPFUNCTIONS = "stepfunctions"
DURABLE = "durable"
ORCHESTRATORS = (STEPFUNCTIONS, DURABLE)
# The durable variant's own function, crashed at every checkpoint boundary. Its "with duplicate" variant
# is a second start of the batch under the same durable execution name, as the two starts race.
ORCHESTRATOR = Step("orchestrator", DURABLE_ORDER_BATCH_FUNCTION, None, per_order=False)
STEPS_BY_NAME[ORCHESTRATOR.name] = ORCHESTRATOR
# The durable variant has no summary function: it summarizes the batch inside its own code.
DURABLE_STEPS = tuple(step for step in STEPS if step.function != SUMMARIZE_BATCH_FUNCTION)


def subject_order(order_id: str) -> JsonObject:
    # Two lines: the reservation is one transaction of several items, the release another.
    return {
        "order_id": order_id,
        "customer_id": "customer-001",
        "currency": "USD",
        "items": [
            {"sku": "SKU-001", "quantity": 1, "unit_price": "5.00"},
            {"sku": "SKU-002", "quantity": 2, "unit_price": "3.25"},
        ],
    }


def bystander_order(order_id: str) -> JsonObject:
    return {
        "order_id": order_id,
        "customer_id": "customer-002",
        "currency": "USD",
        "items": [{"sku": "SKU-003", "quantity": 1, "unit_price": "7.50"}],
    }


@dataclass(frozen=True)
class CrashCase:
    configuration: Configuration
    step: Step
    point: CrashPoint
    variant: str
    batch_id: str
    # The recorded call the point follows or precedes, to check the crash fired where it meant to.
    call: RecordedCall | None = None
    # More of the crash rule's fields (a Powertools failure mode's ``no_time_left``, say).
    rule_fields: Mapping[str, JsonValue] = field(default_factory=dict)
    # A checkpoint boundary's operation update (``<Id>:<Action>``), for the orchestrator's points.
    update: str | None = None

    @property
    def subject(self) -> str:
        return f"{self.batch_id}-s"

    @property
    def orchestrator_crashed(self) -> bool:
        return self.step == ORCHESTRATOR

    @property
    def compensated_order(self) -> str | None:
        """The orchestrator's batch has an order that is compensated, so that its crash points include
        the cancel path's checkpoints (the failed confirmation's retries, the cancel invoke)."""
        return f"{self.batch_id}-c" if self.orchestrator_crashed else None

    @property
    def compensated(self) -> bool:
        """Cancel's subject is compensated: its confirmation keeps failing until the Map catches it."""
        return self.step.name == "cancel"

    @property
    def expected_outcome(self) -> str:
        return Outcome.FAILED.value if self.compensated else Outcome.SUCCEEDED.value

    def orders(self) -> list[JsonObject]:
        subject = subject_order(self.subject)
        bystanders = [bystander_order(f"{self.batch_id}-{number}") for number in (1, 2)]
        if self.compensated_order is not None:
            # The same orders in both variants: the durable operation IDs the points name follow them.
            return [subject, *bystanders, subject_order(self.compensated_order)]
        if self.variant == WITH_DUPLICATE:
            return [subject, dict(subject), *bystanders]
        return [subject, *bystanders]

    @property
    def duplicate_start(self) -> bool:
        """The batch is started twice under one durable execution name (the orchestrator's duplicate)."""
        return self.orchestrator_crashed and self.variant == WITH_DUPLICATE

    def crash_rule(self) -> JsonObject:
        scope: JsonObject = (
            {"item_ids": [self.subject]} if self.step.per_order else {"batch_ids": [self.batch_id]}
        )
        # The call pins the point: a racing duplicate's N-th call may be another (a replay's read, say).
        call: JsonObject = {"call": self.call.spec()} if self.call is not None else {}
        if self.update is not None:
            call = {"call": f"lambda.{CHECKPOINT_OPERATION}@{self.update}"}
        rule: JsonObject = {
            "kind": Crash.kind,
            "point": self.point.point,
            "once": True,
            **call,
            **self.rule_fields,
        }
        return {**rule, **scope}


def confirmation_failure(order_ids: Sequence[str]) -> JsonObject:
    """Every confirmation of these orders fails before its body: they are cancelled once retries run out."""
    return {"kind": ErrorBeforeBody.kind, "item_ids": list(order_ids), "error_type": CONFIRMATION_FAILURE}


# The state machine's own fault, a row of its own: every EXPRESS child of one S3 batch runs twice
# (Express is at-least-once on AWS), each order's steps invoked again with the same input.
STATE_MACHINE = "OrderBatchStateMachine"
CHILDREN = Step("children", STATE_MACHINE, STEP_LOG_NAMES[PER_ORDER_FUNCTIONS[0]])
STEPS_BY_NAME[CHILDREN.name] = CHILDREN


@dataclass(frozen=True)
class DuplicateChildrenCase:
    batch_id: str
    label: str = "every Express child run twice"

    @property
    def subject(self) -> str:
        return f"{self.batch_id}-s"

    def orders(self) -> list[JsonObject]:
        return [subject_order(self.subject), *(bystander_order(f"{self.batch_id}-{n}") for n in (1, 2, 3))]

    def rule(self) -> JsonObject:
        return {"kind": DuplicateExecution.kind, "batch_ids": [self.batch_id]}
