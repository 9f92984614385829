"""The per-order steps: each takes the order state and its stores and returns the next order state.

Business outcomes are returned, never raised. Every effect is keyed (see the stores), so a step
that runs again lands nothing new, whatever happened to its idempotency record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal

from order_processing.contract import OrderStatus
from order_processing.inventory import InventoryStore, ReserveVerdict
from order_processing.models import (
    ORDER_ID_PATTERN,
    CancelRequest,
    Code,
    MapItem,
    OrderState,
    Outcome,
    PlacedOrderState,
    content_hash,
    decimal_text,
)
from order_processing.orders import (
    Claimant,
    ClaimVerdict,
    FinalStatus,
    OrderRecord,
    OrderRecordStore,
)
from order_processing.payments import PaymentLedger
from order_processing.validation import OrderCheck, check_order, describe_item

# The Powertools error a conflicting order raises; the state machine reports it by this name.
CONFLICT_ERROR_NAME = "IdempotencyValidationError"
MAX_CAUSE_IN_REASON = 300


class UnexpectedStateError(RuntimeError):
    """A step received an order state it never follows (a wiring error, not a business outcome)."""


def require_outcome(state: OrderState, expected: Outcome, step: str) -> None:
    if state.outcome is not expected:
        raise UnexpectedStateError(
            f"{step} expects an order in state {expected}, got {state.outcome} for order {state.order_id}"
        )


# ---------------------------------------------------------------- validate


def rejection(item: MapItem, check: OrderCheck) -> OrderState:
    return OrderState(
        batch_id=item.batch_id,
        item_index=item.item_index,
        order_id=check.order_id,
        order=item.order,
        outcome=Outcome.REJECTED,
        code=Code.INVALID_ORDER,
        reason=check.reason,
    )


def _against_holder(state: OrderState, subject: str, verdict: ClaimVerdict, holder: Claimant) -> OrderState:
    sent_by = f"batch {holder.batch_id} item {holder.item_index}"
    if verdict is ClaimVerdict.DUPLICATE:
        return state.finished(
            Outcome.DUPLICATE, Code.DUPLICATE_ORDER, f"{subject} duplicates the order sent by {sent_by}"
        )
    return state.finished(
        Outcome.REJECTED,
        Code.CONFLICTING_ORDER,
        f"{subject} was already submitted with different content by {sent_by}",
    )


def validate_and_claim(item: MapItem, orders: OrderRecordStore) -> OrderState:
    """Validate the order and claim its ID for this batch item.

    An invalid order with a usable ID gets its final REJECTED record (unless another item holds the ID).
    """
    check = check_order(item.order, item.source_format, item.item_index)
    if check.order is None:
        state = rejection(item, check)
        if check.order_id is not None:
            claimant = Claimant(item.batch_id, item.item_index, check.content_hash)
            orders.record_final(
                check.order_id,
                claimant,
                FinalStatus(OrderStatus.REJECTED, Code.INVALID_ORDER, state.reason or ""),
            )
        return state
    state = PlacedOrderState.for_valid_order(item.batch_id, item.item_index, check.order)
    claimant = Claimant(item.batch_id, item.item_index, check.content_hash)
    verdict, holder = orders.claim(check.order.order_id, claimant)
    if verdict is ClaimVerdict.CLAIMED or holder is None:
        return state
    return _against_holder(state, check.subject, verdict, holder.holder)


def as_seen_by(result: OrderState, item: MapItem, check: OrderCheck, orders: OrderRecordStore) -> OrderState:
    """Turn a result stored for the same order ID by another batch item into this item's outcome.

    The idempotency key is the order ID, so a second batch item with the same order replays the
    other item's result, and the order record says which of them holds the order. Usually the other
    one, and this item is a duplicate. But if this item claimed the order and its runtime died before
    Powertools saved the result, a duplicate may have run meanwhile and stored its own DUPLICATE
    outcome: this item, the holder, must go on as the valid order, or nobody processes it.
    """
    if (result.batch_id, result.item_index) == (item.batch_id, item.item_index):
        return result
    if check.order is None:
        return rejection(item, check)
    state = PlacedOrderState.for_valid_order(item.batch_id, item.item_index, check.order)
    claimant = Claimant(item.batch_id, item.item_index, check.content_hash)
    record = orders.get(check.order.order_id)
    if record is not None and claimant.same_item(record.holder):
        return state
    holder = (
        record.holder
        if record is not None
        else Claimant(result.batch_id, result.item_index, check.content_hash)
    )
    return _against_holder(state, check.subject, ClaimVerdict.DUPLICATE, holder)


# ---------------------------------------------------------------- reserve, charge, confirm


def reserve_inventory(state: PlacedOrderState, inventory: InventoryStore) -> OrderState:
    require_outcome(state, Outcome.VALID, "Reserve inventory")
    result = inventory.reserve(state.order_id, state.batch_id, state.order.items)
    if result.verdict in (ReserveVerdict.RESERVED, ReserveVerdict.ALREADY_RESERVED):
        return state.finished(Outcome.RESERVED)
    if result.closed is not None:
        return state.finished(
            Outcome.FAILED, Code.ORDER_CLOSED, result.closed.explain("nothing was reserved")
        )
    position = {line.sku: index for index, line in enumerate(state.order.items)}
    if result.verdict is ReserveVerdict.UNKNOWN_SKU:
        unknown = ", ".join(f"items[{position[sku]}].sku {sku}" for sku in result.unknown_skus)
        return state.finished(
            Outcome.REJECTED,
            Code.UNKNOWN_SKU,
            f"order {state.order_id}: {unknown} not in the inventory; nothing was reserved",
        )
    short = ", ".join(
        f"items[{position[line.sku]}] {line.sku} ({line.requested} requested, {line.available} in stock)"
        for line in result.short_lines
    )
    return state.finished(
        Outcome.FAILED,
        Code.OUT_OF_STOCK,
        f"order {state.order_id}: not enough stock for {short}; nothing was reserved",
    )


def charge_payment(state: PlacedOrderState, ledger: PaymentLedger, max_charge_amount: Decimal) -> OrderState:
    require_outcome(state, Outcome.RESERVED, "Charge payment")
    total = state.order.total
    if total > max_charge_amount:
        return state.finished(
            Outcome.FAILED,
            Code.PAYMENT_DECLINED,
            f"order {state.order_id}: payment declined, total {decimal_text(total)} {state.order.currency} "
            f"is above the charge limit {decimal_text(max_charge_amount)}",
        )
    charged = ledger.charge(state.order_id, state.batch_id, total, state.order.currency)
    if charged.closed is not None:
        return state.finished(
            Outcome.FAILED, Code.ORDER_CLOSED, charged.closed.explain("nothing was charged")
        )
    return state.finished(Outcome.CHARGED)


def confirm_order(state: PlacedOrderState, orders: OrderRecordStore) -> OrderState:
    require_outcome(state, Outcome.CHARGED, "Confirm order")
    orders.mark_succeeded(
        state.order_id, Claimant(state.batch_id, state.item_index, state.order.content_hash)
    )
    return state.finished(Outcome.SUCCEEDED)


# ---------------------------------------------------------------- cancel (compensation)


@dataclass(frozen=True)
class Cancellation:
    """What Cancel order will record for one batch item, decided from its request alone."""

    request: CancelRequest
    state: OrderState
    order_id: str | None
    subject: str
    claimant: Claimant
    final: FinalStatus

    def idempotency_payload(self) -> dict[str, object]:
        """The request with the resolved ID and normalised order.

        Idempotency keys it on `order_id` and validates it on `order`.
        """
        return self.request.to_event() | {"order_id": self.order_id, "order": self.state.order}


def _error_message(cause: str | None) -> str:
    """Lambda errors arrive as a JSON Cause; its errorMessage is what a person needs."""
    if not cause:
        return ""
    try:
        parsed = json.loads(cause)
    except ValueError:
        parsed = None
    message = parsed.get("errorMessage") if isinstance(parsed, dict) else None
    text = str(message) if message else cause
    return text if len(text) <= MAX_CAUSE_IN_REASON else f"{text[: MAX_CAUSE_IN_REASON - 3]}..."


def plan_cancellation(request: CancelRequest) -> Cancellation:
    check = check_order(request.order, request.source_format, request.item_index)
    order_id = request.order_id if request.order_id and ORDER_ID_PATTERN.fullmatch(request.order_id) else None
    order_id = order_id or check.order_id
    subject = describe_item(order_id, request.source_format, request.item_index)
    error = request.error
    outcome = Outcome.REJECTED if request.outcome is Outcome.REJECTED else Outcome.FAILED
    if error is not None and error.error == CONFLICT_ERROR_NAME:
        outcome, code = Outcome.REJECTED, Code.CONFLICTING_ORDER.value
        reason = f"{subject} was already submitted with different content"
    elif error is not None:
        code = Code.TASK_FAILED.value
        message = _error_message(error.cause)
        reason = f"{subject} failed: {error.error or 'error'}" + (f": {message}" if message else "")
    else:
        code = request.code or Code.TASK_FAILED.value
        reason = request.reason or f"{subject} was cancelled"
    total = request.total or (check.order.total_text if check.order is not None else None)
    state = OrderState(
        batch_id=request.batch_id,
        item_index=request.item_index,
        order_id=order_id,
        order=check.content(request.order),
        total=total,
        outcome=outcome,
        code=Code(code) if code in Code.__members__ else None,
        reason=reason,
    )
    final = FinalStatus(
        OrderStatus(outcome.value),
        code,
        reason,
        error=error.error if error else None,
        cause=error.cause if error else None,
    )
    fingerprint = check.content_hash if check.order is not None else content_hash(request.order)
    claimant = Claimant(request.batch_id, request.item_index, fingerprint)
    return Cancellation(request, state, order_id, subject, claimant, final)


def _facing(plan: Cancellation, record: OrderRecord | None) -> OrderState | None:
    """The outcome when the order record says this item must not compensate, else None."""
    if record is None:
        return None
    if plan.claimant.same_item(record.holder):
        if record.status is OrderStatus.SUCCEEDED:
            return plan.state.finished(Outcome.SUCCEEDED)
        return None
    return _against_holder(
        plan.state, plan.subject, plan.claimant.verdict_against(record.holder), record.holder
    )


def settled_elsewhere(plan: Cancellation, orders: OrderRecordStore) -> OrderState | None:
    """Checked before compensating: another item's order, or one that already succeeded, is left alone."""
    if plan.order_id is None:
        return plan.state
    return _facing(plan, orders.get(plan.order_id))


def compensate(
    plan: Cancellation, orders: OrderRecordStore, inventory: InventoryStore, ledger: PaymentLedger
) -> OrderState:
    """Record the final status first (so the order cannot succeed afterwards), then undo its effects."""
    if plan.order_id is None:
        return plan.state
    recorded, record = orders.record_final(plan.order_id, plan.claimant, plan.final)
    if not recorded:
        return _facing(plan, record) or plan.state
    inventory.release(plan.order_id)
    ledger.refund(plan.order_id, plan.request.batch_id)
    return plan.state
