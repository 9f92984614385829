"""Order validation: turns whatever a batch held into a normalised order or a reason.

A malformed order never raises here: it becomes a list of problems, one per bad field, and a
reason that names the order ID (or, without a usable ID, the item or CSV line).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from order_processing.models import (
    ORDER_ID_PATTERN,
    MalformedCsvEntry,
    Order,
    SourceFormat,
    content_hash,
    shown,
)

# Outcomes travel in the execution's state (256 KiB); an order with fifty bad lines must not fill it.
MAX_REASON_CHARS = 300

CSV_ENTRY_SEPARATOR = ";"
CSV_FIELD_SEPARATOR = ":"
CSV_HEADER_LINES = 1

# Pydantic's own wording for structural errors, rephrased like the field rules in models.py.
_STRUCTURAL_MESSAGES = {
    "missing": "is required",
    "list_type": "must be a list of lines",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
}


@dataclass(frozen=True)
class OrderCheck:
    """The verdict on one Map item's order."""

    order_id: str | None
    order: Order | None
    problems: tuple[str, ...]
    subject: str
    content_hash: str

    @property
    def is_valid(self) -> bool:
        return self.order is not None

    @property
    def reason(self) -> str | None:
        if self.order is not None:
            return None
        reason = f"{self.subject} is invalid: {'; '.join(self.problems)}"
        return reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 1] + "…"

    def content(self, raw_order: object) -> object:
        """The order as later steps and the idempotency payload see it: normalised when valid."""
        return self.order.as_json() if self.order is not None else raw_order


def usable_order_id(raw_order: object) -> str | None:
    """The order ID when it can key records, even if other fields are bad."""
    if isinstance(raw_order, dict):
        order_id = raw_order.get("order_id")
        if isinstance(order_id, str) and ORDER_ID_PATTERN.fullmatch(order_id):
            return order_id
    return None


def describe_item(order_id: str | None, source_format: SourceFormat, item_index: int) -> str:
    """How a reason names an order: by ID when usable, else by its place in the batch."""
    line = f"line {item_index + CSV_HEADER_LINES + 1}" if source_format == "csv" else None
    if order_id is None:
        return line or f"item {item_index}"
    return f"order {order_id} ({line})" if line else f"order {order_id}"


def parse_csv_items(text: str) -> list[dict[str, str] | MalformedCsvEntry]:
    """Parse `SKU:QUANTITY:UNIT_PRICE` entries separated by `;`.

    Malformed entries are kept (as MalformedCsvEntry) so the model reports them with the other problems.
    """
    lines: list[dict[str, str] | MalformedCsvEntry] = []
    for entry in text.split(CSV_ENTRY_SEPARATOR):
        entry = entry.strip()
        if not entry:
            continue
        fields = entry.split(CSV_FIELD_SEPARATOR)
        if len(fields) == 3:
            sku, quantity, unit_price = (field.strip() for field in fields)
            lines.append({"sku": sku, "quantity": quantity, "unit_price": unit_price})
        else:
            lines.append(MalformedCsvEntry(entry))
    return lines


def _field_path(location: tuple[int | str, ...]) -> str:
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def describe_errors(error: ValidationError) -> list[str]:
    problems = []
    for detail in error.errors(include_url=False):
        message = _STRUCTURAL_MESSAGES.get(detail["type"], detail["msg"])
        path = _field_path(detail["loc"])
        problems.append(f"{path}: {message}" if path else message)
    return problems


def check_order(raw_order: object, source_format: SourceFormat, item_index: int) -> OrderCheck:
    order_id = usable_order_id(raw_order)
    subject = describe_item(order_id, source_format, item_index)
    fingerprint = content_hash(raw_order)
    if not isinstance(raw_order, dict):
        problem = f"the order must be an object, got {shown(raw_order)}"
        return OrderCheck(order_id, None, (problem,), subject, fingerprint)

    candidate = dict(raw_order)
    if source_format == "csv" and isinstance(candidate.get("items"), str):
        candidate["items"] = parse_csv_items(candidate["items"])
    try:
        order = Order.model_validate(candidate)
    except ValidationError as error:
        return OrderCheck(order_id, None, tuple(describe_errors(error)), subject, fingerprint)
    return OrderCheck(order.order_id, order, (), subject, order.content_hash)
