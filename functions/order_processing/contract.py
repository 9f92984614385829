"""The app's vocabulary, in one place: the names the functions write and the tools read.

The functions import it (it ships with them), and so do the tools in src/orderbatch (the project
installs this package beside them), so an order ID rule, a log marker or a logical ID is never typed
twice. Standard library only: the tools import it without the app's dependencies in mind.
"""

from __future__ import annotations

import re
from enum import StrEnum

# An order ID that can key records; an order without one is rejected but still gets an outcome.
ORDER_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")

# The message every idempotent task body logs once per run (with `step` and `order_id`): the audit
# counts these lines to tell a second run from a replay.
TASK_BODY_RAN = "task body ran"

# The API's inline caps (the BatchesApiFunction's MAX_INLINE_ORDERS and MAX_INLINE_BATCH_BYTES defaults):
# a batch's outcomes come back in the execution's state, and its input is the execution's input, both
# of which Step Functions limits to 256 KiB, so larger batches must go through S3.
MAX_INLINE_ORDERS = 500
MAX_INLINE_BATCH_BYTES = 256 * 1024


class Outcome(StrEnum):
    """Where an order state is: it moves VALID -> RESERVED -> CHARGED -> SUCCEEDED or ends early."""

    VALID = "VALID"
    RESERVED = "RESERVED"
    CHARGED = "CHARGED"
    SUCCEEDED = "SUCCEEDED"
    REJECTED = "REJECTED"
    FAILED = "FAILED"
    DUPLICATE = "DUPLICATE"


class Code(StrEnum):
    """Why an order did not succeed, for machines (the `reason` is for people)."""

    INVALID_ORDER = "INVALID_ORDER"
    CONFLICTING_ORDER = "CONFLICTING_ORDER"
    UNKNOWN_SKU = "UNKNOWN_SKU"
    OUT_OF_STOCK = "OUT_OF_STOCK"
    PAYMENT_DECLINED = "PAYMENT_DECLINED"
    TASK_FAILED = "TASK_FAILED"
    DUPLICATE_ORDER = "DUPLICATE_ORDER"
    RECONCILED = "RECONCILED"
    # A late run of an order reached reserve or charge after another run had compensated it.
    ORDER_CLOSED = "ORDER_CLOSED"


class OrderStatus(StrEnum):
    """The `status` of an order record in the Orders table."""

    RECEIVED = "RECEIVED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    REJECTED = "REJECTED"


FINAL_ORDER_STATUSES = frozenset({OrderStatus.SUCCEEDED, OrderStatus.FAILED, OrderStatus.REJECTED})

# The template's logical IDs of the per-order steps (the state machine's Task FunctionName
# substitutions `${<ID>Arn}`; tests/unit/test_contract.py checks them against the template).
VALIDATE_ORDER_FUNCTION = "ValidateOrderFunction"
RESERVE_INVENTORY_FUNCTION = "ReserveInventoryFunction"
CHARGE_PAYMENT_FUNCTION = "ChargePaymentFunction"
CONFIRM_ORDER_FUNCTION = "ConfirmOrderFunction"
CANCEL_ORDER_FUNCTION = "CancelOrderFunction"
SUMMARIZE_BATCH_FUNCTION = "SummarizeBatchFunction"
# The durable variant of the batch workflow: it invokes the per-order functions above.
DURABLE_ORDER_BATCH_FUNCTION = "DurableOrderBatchFunction"

# The forward path of an order, in workflow order; the compensation runs when it does not succeed.
ORDER_STEP_FUNCTIONS = (
    VALIDATE_ORDER_FUNCTION,
    RESERVE_INVENTORY_FUNCTION,
    CHARGE_PAYMENT_FUNCTION,
    CONFIRM_ORDER_FUNCTION,
)
COMPENSATION_FUNCTION = CANCEL_ORDER_FUNCTION
# Every function that runs once (or more) per order.
PER_ORDER_FUNCTIONS = (*ORDER_STEP_FUNCTIONS, COMPENSATION_FUNCTION)
# Every function a batch runs.
BATCH_FUNCTIONS = (*PER_ORDER_FUNCTIONS, SUMMARIZE_BATCH_FUNCTION)

# The `step` each per-order function's body-ran line carries (the handlers' STEP).
STEP_LOG_NAMES = {
    VALIDATE_ORDER_FUNCTION: "validate_order",
    RESERVE_INVENTORY_FUNCTION: "reserve_inventory",
    CHARGE_PAYMENT_FUNCTION: "charge_payment",
    CONFIRM_ORDER_FUNCTION: "confirm_order",
    CANCEL_ORDER_FUNCTION: "cancel_order",
}
