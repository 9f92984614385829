"""DynamoDB write request units each of the app's functions consumes per completed invocation.

Counted from the handlers (functions/order_processing) and Powertools' idempotency utility (one
conditional PutItem per call, one UpdateItem on completion:
https://docs.powertools.aws.dev/lambda/python/latest/utilities/idempotency/), for an order of
one line, with DynamoDB's on-demand accounting as the benchmark counts it (PutItem, UpdateItem,
DeleteItem = 1 unit each under 1 KB; TransactWriteItems = 2 units per item):

| function | writes | units |
|---|---|---|
| every task | Powertools idempotency: conditional PutItem (INPROGRESS) + UpdateItem (COMPLETED) | 2 |
| ValidateOrderFunction | conditional PutItem of the order record | +1 = 3 |
| ReserveInventoryFunction | one transaction: put the reservation + decrement the stock, per line | +4 = 6 |
| ChargePaymentFunction | conditional PutItem of the ledger entry | +1 = 3 |
| ConfirmOrderFunction | conditional UpdateItem of the order record | +1 = 3 |
| CancelOrderFunction | PutItem of the final order record | +1 = 3 |
| CancelOrderFunction, after a reservation | one transaction: reservation released + stock back | +4 |
| CancelOrderFunction, after a charge | one transaction: charge marked refunded + the refund | +4 |

A throttled call never ran, so it writes nothing; a call cut off by its timeout is counted as writing
nothing (its idempotency record may be written; the retry's writes are counted). Other templates'
functions count 0 unless a table is given (``PlanSettings.write_units``).
"""

from __future__ import annotations

from collections.abc import Mapping

IDEMPOTENCY_WRITE_UNITS = 2

WRITE_UNITS_PER_CALL: Mapping[str, int] = {
    "ValidateOrderFunction": IDEMPOTENCY_WRITE_UNITS + 1,
    "ReserveInventoryFunction": IDEMPOTENCY_WRITE_UNITS + 4,
    "ChargePaymentFunction": IDEMPOTENCY_WRITE_UNITS + 1,
    "ConfirmOrderFunction": IDEMPOTENCY_WRITE_UNITS + 1,
    "CancelOrderFunction": IDEMPOTENCY_WRITE_UNITS + 1,
}

# What compensation writes to undo a forward step that had completed (one line per order).
UNDO_WRITE_UNITS: Mapping[str, int] = {
    "ReserveInventoryFunction": 4,
    "ChargePaymentFunction": 4,
}
